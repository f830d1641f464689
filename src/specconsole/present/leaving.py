"""What the console says as the user leaves: whether ``[sweep] finally`` runs, and what
state the box is left in when it does not.

Why: a box left on whatever ran last, or down after a crash with only a resume command on
screen, is the first thing a production user notices. After a finished sweep quitting
carries out ``finally`` (the console waits until the box serves); after a sweep that ended
or paused on a crash the server is down, and the message says so and how to roll back.
Pure rules over ``ControllerState``, shared by the quit flow and its tests.
"""

from __future__ import annotations

from specconsole.core.machine.state import ControllerState, Phase, TrialStatus

DOWN_STATUSES: frozenset[TrialStatus] = frozenset(
    {TrialStatus.CRASHED, TrialStatus.LOAD_TIMEOUT, TrialStatus.FAILED}
)
"""A last trial with one of these left the server down."""


def finally_due(state: ControllerState) -> bool:
    """The sweep ran to its end in this session: quitting carries out ``[sweep] finally``."""
    return (
        state.phase is Phase.DONE
        and bool(state.finished_reason)
        and state.sweep_started_at is not None
        and not state.sweep_active
    )


def server_down_message(state: ControllerState, rollback_command: str) -> str | None:
    """When the sweep ended or paused on a crash and the server is not serving: a sentence
    saying so and how to roll back; else None."""
    if state.sweep_started_at is None or not state.trials:
        return None
    if state.deployed is not None and state.deployed.serving:
        return None
    last = state.trials[-1]
    if state.pending is None and last.status not in DOWN_STATUSES:
        return None
    return (
        f"The server is down (trial {last.index + 1} {last.status.value.replace('_', ' ')}). "
        f"To put back the last configuration that served: o (roll back) in the console, or "
        f"{rollback_command}"
    )


def deploying_line(diff: str) -> str:
    """The progress line while ``finally = best`` deploys: how much of the unit changes (the
    diff itself was on screen before, ``v``)."""
    changed = sum(1 for line in diff.splitlines() if line[:1] in "+-") - 2
    return f"deploying ({max(changed, 0)} changed lines; v showed every diff)"


def rollback_command(session_path: object, box: str | None = None) -> str:
    """The command that puts back a configuration that served: ``specconsole rollback
    SESSION``, naming the box for a session that ran on a pool."""
    return f"specconsole rollback {session_path}" + (f" --box {box}" if box else "")
