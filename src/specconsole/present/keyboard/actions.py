"""What a key would do to the box, said before it is done: targets and confirmations.

Why: single letters act on a production box. A key that deploys says what it deploys — the
crash banner names what ``r``, ``t``, ``S`` and ``o`` would deploy — and the keys that throw
something away (skip a planned trial, roll back, deploy over what serves, cancel a running
trial) ask once, naming their target and the flags that change. Targets are asked of the
pure state machine (``present.deploys.diffs.deploying_config``), so the preview is exactly what the
controller would do; the confirmation keeps its target so a state that changed while it was
open is noticed instead of acted on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from specconsole.core.machine.intents import Resume
from specconsole.core.machine.state import Phase, ResumeChoice
from specconsole.present.deploys.diffs import as_deployed, deploy_target, deploying_config
from specconsole.present.deploys.flagdiff import config_diff
from specconsole.present.keyboard.keys import COMMAND_CHOICES, available
from specconsole.present.labels import config_label

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig
    from specconsole.core.machine.state import ControllerState

NOTHING_PLANNED = "nothing left in the plan"
NOT_KNOWN_YET = "known once the crash is recorded"


def _base(state: ControllerState) -> ServerConfig | None:
    return state.plan.base if state.plan is not None else None


def label(state: ControllerState, config: ServerConfig | None) -> str:
    """A target as the banner and the dialogs name it (``steps=7 draft=8``)."""
    return NOTHING_PLANNED if config is None else config_label(config, _base(state))


def choice_target(state: ControllerState, choice: ResumeChoice) -> ServerConfig | None:
    """The configuration the decision ``choice`` would deploy now (None: none)."""
    if choice is ResumeChoice.EDIT_THEN_DEPLOY:
        return None
    return deploying_config(state, Resume(choice=choice, at=state.phase_since or 1.0))


def choice_label(state: ControllerState, command: str, plain: str) -> str:
    """The banner's label of a decision, with its target: ``resume: steps=7``, ``skip
    steps=7`` (what it skips; its dialog names what comes instead), ``roll back to
    steps=5``; ``retry`` and ``edit`` as they are (the crashed configuration is in the
    header; the editor shows its own)."""
    choice = COMMAND_CHOICES.get(command)
    if choice in (None, ResumeChoice.EDIT_THEN_DEPLOY, ResumeChoice.RETRY_SAME):
        return plain
    assert choice is not None
    if choice is ResumeChoice.SKIP:
        skipped = choice_target(state, ResumeChoice.RESUME_NEXT)
        return plain if skipped is None else f"{plain} {label(state, skipped)}"
    if state.pending is None and state.phase is Phase.CRASHED:
        # the crash is still being recorded: what comes next is not known yet (a key pressed
        # now is kept until it is), so no target and no "nothing left" either
        return f"{plain} ({NOT_KNOWN_YET})"
    target = choice_target(state, choice)
    if target is None:
        return f"{plain} ({NOTHING_PLANNED})"
    if choice is ResumeChoice.ROLLBACK:
        return f"{plain} to {label(state, target)}"
    return f"{plain}: {label(state, target)}"


@dataclass(frozen=True, slots=True)
class Confirmation:
    """What a dialog asks before a key acts on the box."""

    title: str
    """The question, naming the target: ``Skip steps=7 draft=8?``."""
    lines: tuple[str, ...]
    """What happens, then the flags that change (``--speculative-num-steps: 10 → 8``)."""
    yes: str
    """The button's words: ``skip it``."""
    target: ServerConfig | None = None
    """What it deploys (None: nothing); checked again when the user says yes."""
    trial: int | None = None
    """The trial it is about (``x``: the running one)."""


def _flags(state: ControllerState, target: ServerConfig | None) -> tuple[str, ...]:
    if target is None:
        return ()
    deployed = state.deployed_config
    before = as_deployed(deployed) if deployed is not None else None
    changes = config_diff(before, as_deployed(target))
    return ("flags:", *(f"  {line}" for line in changes)) if changes else ()


def confirmation(
    state: ControllerState, command: str, *, selected: int | None = None
) -> Confirmation | None:
    """The dialog for ``command`` (a ``present.keyboard.keymap`` id) in ``state``; None when it has
    nothing to act on now. ``selected`` is the trial selected in the trials table."""
    if command == "deploy":
        target = deploy_target(state)
        if target is None:
            return None
        after = "; the sweep pauses after it" if state.sweep_active else ""
        lines = (f"The server restarts with it as the next trial{after}.",)
        return Confirmation(
            f"Deploy {label(state, target)}?", lines + _flags(state, target), "deploy", target
        )
    if command == "skip":
        skipped = choice_target(state, ResumeChoice.RESUME_NEXT)
        if skipped is None:
            return None
        target = choice_target(state, ResumeChoice.SKIP)
        lines = (
            f"The sweep skips {label(state, skipped)} and deploys {label(state, target)} next.",
        )
        return Confirmation(
            f"Skip {label(state, skipped)}?", lines + _flags(state, target), "skip it", target
        )
    if command == "rollback":
        target = choice_target(state, ResumeChoice.ROLLBACK)
        if target is None:
            return None
        lines = ("It redeploys the last configuration that loaded; the sweep waits after it.",)
        return Confirmation(
            f"Roll back to {label(state, target)}?",
            lines + _flags(state, target),
            "roll back",
            target,
        )
    if command == "cancel":
        return _cancel(state, selected)
    return None


def _cancel(state: ControllerState, selected: int | None) -> Confirmation | None:
    trial = state.trial
    if trial is None or not state.busy:
        return None
    name = f"trial {trial.index + 1} ({label(state, trial.config)})"
    lines = [
        f"It is {state.phase.value.replace('_', ' ')}; what it measured so far is dropped.",
        "The server is left as it is (not stopped, not rolled back).",
    ]
    if state.sweep_active:
        lines.append("The sweep stops there (s continues it with the next planned trial).")
    if selected is not None and selected != trial.index:
        lines.append(
            f"The selected row is trial {selected + 1}: x only ever cancels the running trial."
        )
    return Confirmation(f"Cancel {name}?", tuple(lines), "cancel it", trial=trial.index)


def still_valid(state: ControllerState, command: str, asked: Confirmation) -> str | None:
    """None when ``asked`` still describes what ``command`` would do in ``state``; else the
    sentence saying what changed (nothing is done then)."""
    now = confirmation(state, command)
    if now is None:
        return "Nothing done: it no longer applies (the controller moved on)."
    if now.target != asked.target or now.trial != asked.trial:
        return f"Nothing done: the target changed while you read; now: {now.title}"
    return None


def apply_block(state: ControllerState) -> str | None:
    """Why the editor's ``ctrl+s`` cannot deploy now, as the editor says it (None: it can).
    The edit is then queued (``ui.queue``): it deploys as soon as the trial ends, the sweep
    pausing after this trial so that it can."""
    if "deploy" in available(state):
        return None
    pending = state.pending
    if pending is not None and ResumeChoice.EDIT_THEN_DEPLOY in pending.choices:
        return None
    trial = state.trial
    doing = state.phase.value.replace("_", " ")
    what = f"trial {trial.index + 1} is {doing}" if trial is not None else f"the box is {doing}"
    after = " (the sweep pauses after it)" if state.sweep_active else ""
    return f"{what}: ctrl+s queues your edit; it deploys as soon as that ends{after}"
