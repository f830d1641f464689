"""Which keys apply now: one derivation for the footer, the crash banner and the help.

The state machine says which intents it accepts in each phase
(``core.machine.intents.legal_intents``) and, after a crash, which decisions are possible
(``PendingDecision.choices``). ``COMMANDS`` (the key table, ``present.keyboard.keymap``)
names every console command with its key and label; ``available(state)`` is the set of
command ids that would be accepted now, so the footer shows exactly those keys and the crash
banner lists exactly those choices. Nothing here knows about Textual: the console's
``check_action`` asks ``available`` by command id.
"""

from __future__ import annotations

from specconsole.core.machine.intents import (
    BenchmarkOnly,
    Cancel,
    DeployConfig,
    Pause,
    Resume,
    StartSweep,
    legal_intents,
)
from specconsole.core.machine.state import ControllerState, Phase, ResumeChoice
from specconsole.core.plans.modes import CrashPolicy
from specconsole.present.keyboard.keymap import COMMANDS, Key

Command = Key
"""A state-dependent command is a ``Key`` of the key table (``present.keyboard.keymap.COMMANDS``).
"""

BY_ID: dict[str, Key] = {c.id: c for c in COMMANDS}

CHOICE_COMMANDS: dict[ResumeChoice, str] = {
    ResumeChoice.RESUME_NEXT: "resume",
    ResumeChoice.RETRY_SAME: "retry",
    ResumeChoice.EDIT_THEN_DEPLOY: "edit",
    ResumeChoice.SKIP: "skip",
    ResumeChoice.ROLLBACK: "rollback",
}
"""The command that makes each decision after a crash."""

COMMAND_CHOICES: dict[str, ResumeChoice] = {v: k for k, v in CHOICE_COMMANDS.items()}


def has_crash(state: ControllerState) -> bool:
    """A crash (or a trial that could not run) is on screen: awaiting a decision, or a crash
    being recorded now."""
    if state.pending is not None:
        return True
    trial = state.trial
    return state.phase is Phase.CRASHED and trial is not None and trial.crash is not None


def _choices_now(state: ControllerState) -> frozenset[ResumeChoice]:
    """Decisions a ``Resume`` may carry now: the pending decision's, else (paused or
    cancelled sweep) continuing with the next planned trial."""
    if state.pending is not None:
        return frozenset(state.pending.choices)
    if state.plan is not None and not state.finished_reason:
        return frozenset({ResumeChoice.RESUME_NEXT})
    return frozenset()


def _editable(state: ControllerState) -> bool:
    return state.current_config is not None or state.plan is not None


def available(state: ControllerState) -> frozenset[str]:
    """Ids of the ``COMMANDS`` the controller would accept in ``state``."""
    legal = legal_intents(state)
    out: set[str] = set()
    if DeployConfig in legal and _editable(state):
        out.add("deploy")
    if BenchmarkOnly in legal and state.deployed is not None and state.deployed.serving:
        out.add("bench")
    resting_sweep = state.phase is Phase.PAUSED or (
        state.sweep_active and state.phase is Phase.CANCELLED
    )
    # a crash being recorded under the pause policy stops the sweep by itself: no pause, and
    # nothing left to cancel (the banner's decisions are what it offers)
    recording_crash = has_crash(state) and state.pending is None
    stops_itself = recording_crash and state.policy is CrashPolicy.PAUSE
    if Pause in legal and state.sweep_active and not stops_itself:
        out.add("unpause" if state.pause_requested else "pause")
    elif Resume in legal and resting_sweep and ResumeChoice.RESUME_NEXT in _choices_now(state):
        out.add("continue")
    elif StartSweep in legal and state.plan is not None:
        out.add("sweep")
    if Resume in legal:
        out.update(CHOICE_COMMANDS[c] for c in _choices_now(state) if c in CHOICE_COMMANDS)
    if _editable(state):
        out.add("edit")  # the editor opens any time; applying it deploys when that is legal
    if has_crash(state):
        out.add("crash-details")
    if Cancel in legal and state.busy and not recording_crash:
        out.add("cancel")
    return frozenset(out)


def choice_hints(state: ControllerState) -> tuple[Command, ...]:
    """The crash banner's choices: exactly the decisions available now, in table order."""
    if Resume not in legal_intents(state):
        return ()
    choices = _choices_now(state)
    return tuple(BY_ID[cmd] for choice, cmd in CHOICE_COMMANDS.items() if choice in choices)


def hints_text(commands: tuple[Command, ...]) -> str:
    """``r resume next · t retry · …``."""
    return " · ".join(f"{c.key} {c.label}" for c in commands)
