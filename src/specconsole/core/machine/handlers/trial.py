"""A trial's life and the sweep around it: begin a trial (a new epoch), close it with a
status and ask for its record, and once it is durable decide what comes next (the next
planned trial, a pause, the decision after a crash, the sweep's end).
"""

from __future__ import annotations

from dataclasses import replace

from specconsole.core.config.model import ServerConfig
from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.common import (
    COUNTED_KINDS,
    NEEDS_DECISION,
    Effects,
    IllegalTransition,
    Result,
    _enter,
    _notice,
    _rest,
)
from specconsole.core.machine.handlers import telemetry
from specconsole.core.machine.state import (
    ControllerState,
    PendingDecision,
    Phase,
    PhaseStamp,
    ResumeChoice,
    TrialKind,
    TrialRecord,
    TrialStatus,
    close_open_stamp,
)
from specconsole.core.measure.trials import Remeasure
from specconsole.core.plans.plan import CrashPolicy
from specconsole.core.search.eta import budget_refusal
from specconsole.core.search.strategy import Proposal, next_trial, stop_reason


def _begin_trial(
    state: ControllerState,
    config: ServerConfig,
    kind: TrialKind,
    at: float,
    *,
    reason: str = "",
    pause_after: bool = False,
    remeasure: Remeasure | None = None,
) -> Result:
    """Start a new trial at VALIDATING (a new epoch)."""
    epoch = state.epoch + 1
    trial = TrialRecord(
        index=len(state.trials) + (state.pool.indices if state.pool else 0),
        config=config,
        box=state.pool.box if state.pool else "",
        kind=kind,
        started_at=at,
        note=reason,
        remeasure=remeasure,
    )
    new = replace(
        state,
        epoch=epoch,
        trial=trial,
        bench=(),
        log_tail=(),
        gpus=(),
        pending=None,
        pause_requested=pause_after,
    )
    new = _enter(new, Phase.VALIDATING, at)
    text = f"trial {trial.index + 1}"
    if reason:
        text += f", {reason}"
    new = _notice(new, "info", text, at, config)
    return new, (
        fx.Notify(epoch=epoch, level="info", text=text),
        fx.Validate(epoch=epoch, config=config),
    )


def _counted(state: ControllerState) -> int:
    here = sum(1 for t in state.trials if t.kind in COUNTED_KINDS)
    return here + (state.pool.counted if state.pool else 0)


def _propose(state: ControllerState) -> Proposal | None:
    """The strategy's next configuration; in a pool, from the whole pool's trials with the
    configurations running on other boxes as pending (see core.search.strategy.next_trial)."""
    assert state.plan is not None
    if state.pool is None:
        return next_trial(state.plan, state.trials, state.skipped_configs)
    trials = (*state.pool.trials, *state.trials)
    return next_trial(state.plan, trials, state.skipped_configs, pending=state.pool.running)


def _budget_reason(state: ControllerState, at: float) -> str:
    plan = state.plan
    if plan is None:
        return ""
    if plan.max_trials is not None and _counted(state) >= plan.max_trials:
        return f"max trials reached ({plan.max_trials})"
    if (
        plan.max_wall_s is not None
        and state.sweep_started_at is not None
        and at - state.sweep_started_at >= plan.max_wall_s
    ):
        return f"max wall time reached ({plan.max_wall_s / 60:g} min)"
    return ""


def _continue_sweep(state: ControllerState, at: float) -> Result:
    """Pick and start the next sweep trial, or finish the sweep."""
    if state.plan is None:
        raise IllegalTransition(state.phase, ev.StartSweep(at=at), "no plan loaded")
    reason = _budget_reason(state, at)
    proposal = None if reason else _propose(state)
    if proposal is not None:  # a trial that cannot finish inside the wall budget is not begun
        reason = budget_refusal(
            state.plan,
            (*(state.pool.trials if state.pool else ()), *state.trials),
            proposal.config,
            now=at,
            started_at=state.sweep_started_at,
            prior=state.eta_prior,
        )
        proposal = None if reason else proposal
    if proposal is None:
        reason = reason or stop_reason(state.plan, state.trials)
        done = replace(
            _rest(replace(state, trial=None), Phase.DONE, at),
            sweep_active=False,
            pause_requested=False,
            finished_reason=reason,
        )
        done = _notice(done, "info", f"sweep finished: {reason}", at)
        return done, (
            fx.SaveSession(epoch=done.epoch),
            fx.Notify(epoch=done.epoch, level="info", text=f"sweep finished: {reason}"),
            fx.Finish(epoch=done.epoch, reason=reason),
        )
    return _begin_trial(
        state,
        proposal.config,
        TrialKind.SWEEP,
        at,
        reason=proposal.reason,
        remeasure=proposal.remeasure,
    )


def _finish_trial(
    state: ControllerState,
    status: TrialStatus,
    at: float,
    *,
    errors: tuple[str, ...] = (),
    note: str = "",
    extra: Effects = (),
) -> Result:
    """Close the trial with ``status`` and ask the runtime to record it."""
    trial = state.trial
    assert trial is not None
    phases = close_open_stamp(trial.phases, at)
    record = replace(
        trial,
        status=status,
        finished_at=at,
        phases=(*phases, PhaseStamp(Phase.RECORDING, at)),
        errors=trial.errors + errors,
        note=(trial.note + "; " + note).strip("; ") if note else trial.note,
        levels=telemetry.attach_levels(trial.levels, trial.gpu),
    )
    new = replace(state, trial=record, phase=Phase.RECORDING, phase_since=at, gpus=())
    new = replace(new, load_stage=None, load_stage_since=None)
    stop = telemetry.stop(state)  # the GPUs are sampled for a trial, never beyond it
    return new, (*extra, *stop, fx.RecordTrial(epoch=new.epoch, record=record))


def _available_choices(state: ControllerState) -> tuple[ResumeChoice, ...]:
    choices: list[ResumeChoice] = []
    has_plan = state.plan is not None and state.finished_reason == ""
    if has_plan:
        choices.append(ResumeChoice.RESUME_NEXT)
    if state.trials:
        choices.append(ResumeChoice.RETRY_SAME)
    choices.append(ResumeChoice.EDIT_THEN_DEPLOY)
    if has_plan and _peek_next(state) is not None:
        choices.append(ResumeChoice.SKIP)
    if state.last_good is not None:
        choices.append(ResumeChoice.ROLLBACK)
    return tuple(choices)


def _peek_next(state: ControllerState) -> ServerConfig | None:
    if state.plan is None:
        return None
    proposal = _propose(state)
    return None if proposal is None else proposal.config


def _after_recorded(state: ControllerState, at: float) -> Result:
    """The trial is durable: file it and decide what comes next."""
    trial = state.trial
    assert trial is not None
    trials = (*state.trials, replace(trial, phases=close_open_stamp(trial.phases, at)))
    new = replace(state, trials=trials, trial=None, bench=state.bench)
    save: Effects = (fx.SaveSession(epoch=new.epoch),)
    if trial.status is TrialStatus.OK and trial.kind is not TrialKind.BENCH_ONLY:
        new = replace(new, last_good=trial.config)
    if trial.crash is not None:
        stop: Effects = (fx.StopWatch(epoch=new.epoch),)
    else:
        stop = ()

    if trial.kind is TrialKind.ROLLBACK and trial.status is TrialStatus.OK:
        new = _rest(new, Phase.PAUSED, at) if new.sweep_active else _rest(new, Phase.IDLE, at)
        text = "rolled back; the box is serving again"
        new = replace(_notice(new, "info", text, at, trial.config), pause_requested=False)
        return new, (*stop, *save, fx.Notify(epoch=new.epoch, level="info", text=text))

    if trial.status is TrialStatus.CANCELLED:
        new = replace(_rest(new, Phase.CANCELLED, at), pause_requested=False)
        return new, (*stop, *save)

    if trial.status in NEEDS_DECISION and new.policy is CrashPolicy.PAUSE:
        pending = PendingDecision(
            trial_index=trial.index,
            crash=trial.crash,
            choices=(),
            rollback_config=new.last_good,
        )
        new = replace(_rest(new, Phase.AWAITING_DECISION, at), pause_requested=False)
        new = replace(
            new,
            pending=replace(pending, choices=_available_choices(new), next_config=_peek_next(new)),
        )
        return new, (*stop, *save)

    if new.sweep_active and not new.pause_requested:
        nxt, effects = _continue_sweep(new, at)
        return nxt, (*stop, *save, *effects)

    if new.sweep_active:
        new = replace(_rest(new, Phase.PAUSED, at), pause_requested=False)
        return new, (*stop, *save)
    phase = Phase.DONE if new.finished_reason else Phase.IDLE
    return _rest(new, phase, at), (*stop, *save)
