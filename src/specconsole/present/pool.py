"""The console's pool lanes: one line per box of a pool, as plain values.

Why here and not in the widget: the lanes are a pure function of the console's snapshot
(``ControllerState.lanes``, the focused box in ``pool.box``) and the clock, so they are
tested without Textual and the widget only draws them. Each lane says the box, its phase,
the trial it runs (number and configuration), how long it has been in that phase, and the
box's last journal line.
"""

from __future__ import annotations

from dataclasses import dataclass

from specconsole.core.machine.state import BoxLane, ControllerState, Phase
from specconsole.present.formats import format_elapsed
from specconsole.present.labels import config_label

QUIET_PHASES = frozenset({Phase.IDLE, Phase.DONE, Phase.PAUSED, Phase.CANCELLED})
"""Phases whose elapsed time says nothing (the box waits)."""


@dataclass(frozen=True, slots=True)
class LaneView:
    """One box's lane, ready to draw."""

    box: str
    phase: str
    trial: str
    elapsed: str
    tail: str
    focused: bool
    tone: str
    """``good``, ``bad``, ``busy`` or ``quiet``: the stylesheet maps it to a colour."""


def focused_box(state: ControllerState) -> str | None:
    """The box the console shows (None outside a pool)."""
    if not state.lanes or state.pool is None:
        return None
    return state.pool.box


def next_box(state: ControllerState) -> str | None:
    """The box after the focused one, in pool order, skipping boxes out of the pool."""
    names = [lane.box for lane in state.lanes if not lane.removed]
    current = focused_box(state)
    if len(names) < 2:
        return None
    if current not in names:
        return names[0]
    return names[(names.index(current) + 1) % len(names)]


def _phase(lane: BoxLane) -> tuple[str, str]:
    if lane.removed:
        return f"OUT ({lane.removed})", "bad"
    if lane.phase is Phase.AWAITING_DECISION:
        return ("CRASHED" if lane.crashed else "STOPPED"), "bad"
    label = lane.phase.value.replace("_", " ").upper()
    if lane.phase is Phase.CRASHED:
        return label, "bad"
    if lane.phase in QUIET_PHASES:
        return label, "good" if lane.phase is Phase.DONE else "quiet"
    return label, "busy"


def lane_views(state: ControllerState, now: float) -> tuple[LaneView, ...]:
    """Every box's lane, in pool order (empty outside a pool)."""
    focus = focused_box(state)
    base = state.plan.base if state.plan is not None else None
    out = []
    for lane in state.lanes:
        phase, tone = _phase(lane)
        trial = ""
        if lane.trial_index is not None:
            trial = f"trial {lane.trial_index + 1}"
            if lane.trial_config is not None:
                trial += f": {config_label(lane.trial_config, base)}"
        quiet = lane.phase in QUIET_PHASES or lane.removed or not lane.phase_since
        elapsed = "" if quiet else format_elapsed(now - lane.phase_since)
        out.append(
            LaneView(
                box=lane.box,
                phase=phase,
                trial=trial,
                elapsed=elapsed,
                tail=lane.tail,
                focused=lane.box == focus,
                tone=tone,
            )
        )
    return tuple(out)
