"""What the console says as the user leaves: whether ``[sweep] finally`` runs, and what
state the box is left in when it does not.

Why: a box left on whatever ran last, or down after a crash with only a resume command on
screen, is the first thing a production user notices. After a finished sweep quitting
carries out ``finally`` (the console waits until the box serves); after a sweep that ended
or paused on a crash the server is down, and the message says so and how to roll back.
Pure rules over ``ControllerState``, shared by the quit flow and its tests.

What ``specconsole rollback`` would put back is named, not promised: "put the box back as it
was" restored the previous trial's unit, not the user's own (:func:`rollback_advice`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from specconsole.core.machine.state import (
    ControllerState,
    Phase,
    TrialKind,
    TrialRecord,
    TrialStatus,
)
from specconsole.present.labels import config_label, config_summary, record_label

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig

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
    base = state.plan.base if state.plan is not None else None
    good = "" if state.last_good is None else f" ({config_label(state.last_good, base)})"
    return (
        f"The server is down (trial {last.index + 1} {last.status.value.replace('_', ' ')}). "
        f"o (roll back) in the console serves the last configuration that loaded{good}. "
        + rollback_advice(state.trials, base, rollback_command)
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


NOT_DEPLOYED: frozenset[TrialKind] = frozenset({TrialKind.BENCH_ONLY, TrialKind.REATTACH})
"""Trial kinds that changed nothing on the box (no backup was made for them)."""


def rollback_advice(
    trials: Sequence[TrialRecord],
    base: ServerConfig | None,
    command: str,
    *,
    original: ServerConfig | None = None,
) -> str:
    """What the two rollbacks (``command``: :func:`rollback_command`) would put back after
    the last trial left the server down: ``rollback`` restores the unit from before that
    trial's deploy (named by the trial that deployed it, from the records), ``--original``
    the box's own unit from before the session (``original``: what it ran then, if known)."""
    deployed = [t for t in trials if t.artifact_hash and t.kind not in NOT_DEPLOYED]
    own = "the box's own unit from before this session"
    if original is not None:
        own += f" ({config_summary(original)})"
    if not deployed:
        return f"To serve again: {command} --original puts back {own}."
    last = deployed[-1]
    if not last.deploy_diff:  # that deploy changed nothing, so it left no backup to name
        newest = "the newest backup on the box (it says which configuration that is)"
    elif len(deployed) > 1:
        prev = deployed[-2]
        state = prev.status.value.replace("_", " ")
        newest = (
            f"the unit from before trial {last.index + 1}'s deploy: trial {prev.index + 1}'s "
            f"configuration ({record_label(prev, base)}, {state})"
        )
    else:
        newest = f"the unit from before trial {last.index + 1}'s deploy, {own}"
    return f"To serve again: {command} puts back {newest}; {command} --original puts back {own}."
