"""What every part of the trial machine shares: the handler types, the phase sets and
budgets that decide what counts, ``IllegalTransition`` and the small state helpers
(entering a phase with its stamp, notices, the plan's settings with their defaults).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from specconsole.core.config.model import ServerConfig
from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import (
    COUNTED_KINDS,  # noqa: F401 - re-exported: the machine's budget rule reads it here
    WATCHED_PHASES,  # noqa: F401 - re-exported: the handlers read it here
    ControllerState,
    Notice,
    Phase,
    PhaseStamp,
    TrialRecord,
    TrialStatus,
    close_open_stamp,
)
from specconsole.core.plans.plan import DEFAULT_LOAD_TIMEOUT_S
from specconsole.core.ports import BenchSpec

Effects = tuple[fx.Effect, ...]


Result = tuple[ControllerState, Effects]


Handler = Callable[[ControllerState, ev.Event], Result]


LOG_TAIL_LINES = 60
"""Log lines kept in the snapshot for crash excerpts (the journal pane keeps its own)."""


NEEDS_DECISION: frozenset[TrialStatus] = frozenset(
    {TrialStatus.CRASHED, TrialStatus.LOAD_TIMEOUT, TrialStatus.FAILED, TrialStatus.INVALID}
)
"""Trial outcomes after which the ``pause`` policy waits for the user."""


class IllegalTransition(Exception):
    """The event cannot be handled in the current phase (or a precondition failed)."""

    def __init__(self, phase: Phase, event: ev.Event, reason: str = "") -> None:
        self.phase = phase
        self.event = event
        self.reason = reason
        text = f"can't handle {type(event).__name__} in phase {phase.value}"
        if reason:
            text += f": {reason}"
        super().__init__(text)


def _enter(state: ControllerState, phase: Phase, at: float, detail: str = "") -> ControllerState:
    """Move to ``phase``, closing the trial's previous phase stamp and opening a new one."""
    trial = state.trial
    if trial is not None:
        phases = close_open_stamp(trial.phases, at)
        trial = replace(trial, phases=(*phases, PhaseStamp(phase, at, None, detail)))
    load_stage = state.load_stage if phase is Phase.LOADING else None
    load_since = state.load_stage_since if phase is Phase.LOADING else None
    return replace(
        state,
        phase=phase,
        phase_since=at,
        trial=trial,
        load_stage=load_stage,
        load_stage_since=load_since,
    )


def _rest(state: ControllerState, phase: Phase, at: float) -> ControllerState:
    return replace(_enter(state, phase, at), bench=state.bench)


def _notice(
    state: ControllerState,
    level: str,
    text: str,
    at: float,
    config: ServerConfig | None = None,
) -> ControllerState:
    return replace(state, notice=Notice(level, text, at, config))


def _bench_spec(state: ControllerState) -> BenchSpec:
    return state.plan.bench if state.plan is not None else BenchSpec()


def _load_timeout(state: ControllerState) -> float:
    return state.plan.load_timeout_s if state.plan is not None else DEFAULT_LOAD_TIMEOUT_S


def _minimum_capacity(state: ControllerState) -> int:
    if state.plan is not None:
        return state.plan.minimum_capacity
    spec = BenchSpec()
    return spec.input_len + spec.output_len


def _require_trial(state: ControllerState, event: ev.Event) -> TrialRecord:
    if state.trial is None:
        raise IllegalTransition(state.phase, event, "no trial in progress")
    return state.trial
