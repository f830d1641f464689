"""The trial state machine: ``step(state, event) -> (state, effects)``, pure and table-driven.

Why a pure machine (h11 / sans-I/O style): every decision of the controller (deploy what,
when a crash is a crash, what a resume choice does, when the sweep stops) is made here from
data alone, so it is tested as tables of (state, event) → (state, effects) with no SSH, HTTP,
threads or clocks, and the async runtime (``specconsole.controller``) is a thin interpreter.

Rules:

* All transitions live in ``TRANSITIONS`` (phase × event type → handler) and ``ANYWHERE``
  (event types legal in every phase). Anything else raises ``IllegalTransition`` naming the
  event and the phase; a handler may also raise it when a precondition fails ("nothing is
  deployed", "no plan loaded").
* Outcomes carry the epoch of the effect that caused them. The epoch is bumped whenever a
  trial begins, so answers belonging to an earlier trial (a cancelled deploy, the previous
  server's log stream) are dropped without effect.
* Late outcomes of a cancelled trial that arrive while the controller rests (same epoch) are
  ignored; watch events in resting phases only update what is known about the server.

A trial runs VALIDATING → DEPLOYING → RESTARTING → LOADING (weights, KV cache, CUDA graphs)
→ READY → FLUSHING → BENCHMARKING → RECORDING, then the strategy picks the next one. A fatal
log line, the process exiting or the load timeout moves a trial in LOADING..BENCHMARKING to
CRASHED: the server is stopped (no restart loop), and once it is down the crash is recorded;
under the ``pause`` policy the controller then waits in AWAITING_DECISION for a
``Resume(choice)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from specconsole.core import effects as fx
from specconsole.core import events as ev
from specconsole.core.capacity import predict_capacity
from specconsole.core.config import ServerConfig
from specconsole.core.plan import DEFAULT_LOAD_TIMEOUT_S
from specconsole.core.ports import BenchSpec, ServiceState
from specconsole.core.state import (
    BUSY_PHASES,
    RESTING_PHASES,
    ConnectionState,
    ControllerState,
    CrashInfo,
    CrashPolicy,
    Deployed,
    LevelProgress,
    LoadStage,
    Notice,
    PendingDecision,
    Phase,
    PhaseStamp,
    ResumeChoice,
    TrialKind,
    TrialRecord,
    TrialStatus,
    close_open_stamp,
)
from specconsole.core.strategy import next_trial, stop_reason

Effects = tuple[fx.Effect, ...]
Result = tuple[ControllerState, Effects]
Handler = Callable[[ControllerState, ev.Event], Result]

LOG_TAIL_LINES = 60
"""Log lines kept in the snapshot for crash excerpts (the journal pane keeps its own)."""

NEEDS_DECISION: frozenset[TrialStatus] = frozenset(
    {TrialStatus.CRASHED, TrialStatus.LOAD_TIMEOUT, TrialStatus.FAILED, TrialStatus.INVALID}
)
"""Trial outcomes after which the ``pause`` policy waits for the user."""

COUNTED_KINDS: frozenset[TrialKind] = frozenset(
    {TrialKind.SWEEP, TrialKind.MANUAL, TrialKind.RETRY, TrialKind.REATTACH}
)
"""Trial kinds that count against ``max_trials``."""

WATCHED_PHASES: frozenset[Phase] = frozenset(
    {Phase.LOADING, Phase.READY, Phase.FLUSHING, Phase.BENCHMARKING}
)
"""Phases in which a fatal line, an exit or a timeout is a crash of the current trial."""


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


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def step(state: ControllerState, event: ev.Event) -> Result:
    """Apply one event; return the new state and the effects the runtime must perform."""
    etype = type(event)
    if (
        isinstance(event, ev.Outcome)
        and event.epoch != state.epoch
        and etype is not ev.ConnectionChanged
    ):
        return state, ()  # an answer for an earlier trial
    handler = TRANSITIONS.get((state.phase, etype)) or ANYWHERE.get(etype)
    if handler is None:
        if state.phase in RESTING_PHASES and isinstance(event, ev.Outcome):
            return state, ()  # a late answer of a cancelled trial
        raise IllegalTransition(state.phase, event)
    return handler(state, event)


def legal_intents(state: ControllerState) -> frozenset[type[ev.Intent]]:
    """Intent types the machine accepts in this phase (preconditions aside), for key hints."""
    out = {t for (phase, t) in TRANSITIONS if phase is state.phase and issubclass(t, ev.Intent)}
    out |= {t for t in ANYWHERE if issubclass(t, ev.Intent)}
    return frozenset(out)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


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


def _begin_trial(
    state: ControllerState,
    config: ServerConfig,
    kind: TrialKind,
    at: float,
    *,
    reason: str = "",
    pause_after: bool = False,
) -> Result:
    """Start a new trial at VALIDATING (a new epoch)."""
    epoch = state.epoch + 1
    trial = TrialRecord(
        index=len(state.trials),
        config=config,
        kind=kind,
        started_at=at,
        note=reason,
    )
    new = replace(
        state,
        epoch=epoch,
        trial=trial,
        bench=(),
        log_tail=(),
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
    return sum(1 for t in state.trials if t.kind in COUNTED_KINDS)


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
    proposal = None if reason else next_trial(state.plan, state.trials, state.skipped_configs)
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
    return _begin_trial(state, proposal.config, TrialKind.SWEEP, at, reason=proposal.reason)


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
    )
    new = replace(state, trial=record, phase=Phase.RECORDING, phase_since=at)
    new = replace(new, load_stage=None, load_stage_since=None)
    return new, (*extra, fx.RecordTrial(epoch=new.epoch, record=record))


def _crash(
    state: ControllerState,
    at: float,
    *,
    cause: str,
    message: str,
    excerpt: tuple[str, ...] = (),
    fixes: tuple[str, ...] = (),
    exit_status: int | None = None,
    signal: int | None = None,
    source_time: float | None = None,
    status: TrialStatus = TrialStatus.CRASHED,
) -> Result:
    """A crash was detected: stop everything, stop the server, record once it is down."""
    trial = state.trial
    assert trial is not None
    info = CrashInfo(
        cause=cause,
        message=message,
        phase=state.phase,
        load_stage=state.load_stage if state.phase is Phase.LOADING else None,
        excerpt=excerpt or state.log_tail[-20:],
        fixes=fixes,
        exit_status=exit_status,
        signal=signal,
        capacity=trial.capacity,
        detected_at=at,
        source_time=source_time,
    )
    was_benchmarking = state.phase is Phase.BENCHMARKING
    new = _enter(replace(state, trial=replace(trial, crash=info, status=status)), Phase.CRASHED, at)
    deployed = state.deployed
    if deployed is not None:
        new = replace(new, deployed=replace(deployed, serving=False))
    new = _notice(new, "error", f"trial {trial.index + 1} crashed: {message}", at)
    effects: list[fx.Effect] = [fx.CancelTimer(epoch=new.epoch, key=fx.LOAD_TIMER)]
    if was_benchmarking:
        effects.append(fx.CancelBenchmark(epoch=new.epoch))
    effects += [
        fx.Notify(epoch=new.epoch, level="error", text=new.notice.text if new.notice else message),
        fx.StopServer(epoch=new.epoch),
    ]
    return new, tuple(effects)


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
    proposal = next_trial(state.plan, state.trials, state.skipped_configs)
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


# --------------------------------------------------------------------------------------------
# Intents
# --------------------------------------------------------------------------------------------


def _on_start_sweep(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.StartSweep)
    plan = event.plan or state.plan
    if plan is None:
        raise IllegalTransition(state.phase, event, "no plan loaded")
    policy = event.policy or plan.on_crash
    last_good = state.last_good
    if last_good is None:  # a resumed session: the rollback target is in the records
        good = [
            t.config
            for t in state.trials
            if t.status is TrialStatus.OK and t.kind is not TrialKind.BENCH_ONLY
        ]
        last_good = good[-1] if good else None
    new = replace(
        state,
        last_good=last_good,
        plan=plan,
        policy=policy,
        sweep_active=True,
        pause_requested=False,
        pending=None,
        finished_reason="",
        sweep_started_at=state.sweep_started_at if state.sweep_started_at is not None else event.at,
        reattach_allowed=event.resume,
    )
    return _continue_sweep(new, event.at)


def _on_pause(state: ControllerState, event: ev.Event) -> Result:
    if not state.sweep_active:
        raise IllegalTransition(state.phase, event, "no sweep is running")
    flag = not state.pause_requested
    text = "the sweep pauses after this trial" if flag else "pause withdrawn"
    new = _notice(replace(state, pause_requested=flag), "info", text, event.at)
    return new, (fx.Notify(epoch=state.epoch, level="info", text=text),)


def _on_cancel_busy(state: ControllerState, event: ev.Event) -> Result:
    trial = _require_trial(state, event)
    effects: list[fx.Effect] = [fx.AbortOperations(epoch=state.epoch)]
    if state.phase is Phase.LOADING:
        effects.append(fx.CancelTimer(epoch=state.epoch, key=fx.LOAD_TIMER))
    if state.phase is Phase.BENCHMARKING:
        effects.append(fx.CancelBenchmark(epoch=state.epoch))
    text = f"trial {trial.index + 1} cancelled in {state.phase.value}"
    new = _notice(state, "warning", text, event.at)
    effects.append(fx.Notify(epoch=state.epoch, level="warning", text=text))
    return _finish_trial(
        new,
        TrialStatus.CANCELLED,
        event.at,
        note=f"cancelled in {state.phase.value}",
        extra=tuple(effects),
    )


def _on_cancel_recording(state: ControllerState, event: ev.Event) -> Result:
    """The trial is already finished: cancelling means "stop after recording it"."""
    if not state.sweep_active:
        return state, ()
    return _notice(
        replace(state, pause_requested=True),
        "info",
        "the sweep stops after this trial is recorded",
        event.at,
    ), ()


def _on_cancel_resting(state: ControllerState, event: ev.Event) -> Result:
    """Cancel while paused or awaiting a decision abandons the sweep."""
    if not state.sweep_active:
        raise IllegalTransition(state.phase, event, "nothing to cancel")
    new = replace(
        _rest(state, Phase.CANCELLED, event.at),
        sweep_active=False,
        pending=None,
        pause_requested=False,
    )
    new = _notice(new, "warning", "sweep abandoned", event.at)
    return new, (fx.SaveSession(epoch=new.epoch),)


def _on_deploy_config(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.DeployConfig)
    if state.phase is Phase.AWAITING_DECISION:
        return _on_resume(
            state,
            ev.Resume(at=event.at, choice=ResumeChoice.EDIT_THEN_DEPLOY, config=event.config),
        )
    return _begin_trial(
        state,
        event.config,
        TrialKind.MANUAL,
        event.at,
        reason="deployed from the editor",
        pause_after=state.sweep_active,
    )


def _on_benchmark_only(state: ControllerState, event: ev.Event) -> Result:
    deployed = state.deployed
    if deployed is None or not deployed.serving:
        raise IllegalTransition(
            state.phase, event, "no server is serving: deploy a configuration first"
        )
    new, begun = _begin_trial(
        state,
        deployed.config,
        TrialKind.BENCH_ONLY,
        event.at,
        reason="benchmark only",
        pause_after=state.sweep_active,
    )
    trial = new.trial
    assert trial is not None
    # nothing to validate or deploy: the trial starts at READY
    new = replace(new, trial=replace(trial, artifact_hash=deployed.artifact_hash, phases=()))
    new = _enter(new, Phase.READY, event.at, "benchmark only")
    return new, (
        *(e for e in begun if isinstance(e, fx.Notify)),
        fx.StartWatch(epoch=new.epoch, trial_index=trial.index, continue_previous=True),
        fx.FetchServerInfo(epoch=new.epoch),
    )


def _on_resume(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.Resume)
    at = event.at
    choice = event.choice
    allowed = _available_choices(state)
    if choice not in allowed:
        raise IllegalTransition(
            state.phase,
            event,
            f"{choice.value} is not available now (choose one of "
            f"{', '.join(c.value for c in allowed)})",
        )
    base = replace(state, pending=None, pause_requested=False)
    if choice is ResumeChoice.RESUME_NEXT:
        new = replace(base, sweep_active=True)
        return _continue_sweep(new, at)
    if choice is ResumeChoice.RETRY_SAME:
        last = state.trials[-1]
        return _begin_trial(
            base,
            last.config,
            TrialKind.RETRY,
            at,
            reason=f"retry of trial {last.index + 1}",
            pause_after=state.phase is not Phase.AWAITING_DECISION and state.sweep_active,
        )
    if choice is ResumeChoice.EDIT_THEN_DEPLOY:
        if event.config is None:
            raise IllegalTransition(state.phase, event, "edit_then_deploy needs a configuration")
        return _begin_trial(
            base,
            event.config,
            TrialKind.MANUAL,
            at,
            reason="edited after a crash",
            pause_after=state.phase is not Phase.AWAITING_DECISION and state.sweep_active,
        )
    if choice is ResumeChoice.SKIP:
        skipped = _peek_next(state)
        assert skipped is not None  # guaranteed by _available_choices
        new = replace(base, skipped_configs=(*state.skipped_configs, skipped), sweep_active=True)
        text = "skipping the next planned configuration"
        new = _notice(new, "info", text, at, skipped)
        nxt, effects = _continue_sweep(new, at)
        return nxt, (fx.Notify(epoch=state.epoch, level="info", text=text), *effects)
    # ROLLBACK
    assert state.last_good is not None
    return _begin_trial(
        base, state.last_good, TrialKind.ROLLBACK, at, reason="roll back to the last good config"
    )


def _on_set_policy(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.SetPolicy)
    return replace(state, policy=event.policy), ()


def _on_quit(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.Quit)
    effects: list[fx.Effect] = []
    if state.phase is Phase.BENCHMARKING:
        effects.append(fx.CancelBenchmark(epoch=state.epoch))
    if state.busy:
        effects.append(fx.AbortOperations(epoch=state.epoch))
    effects += [
        fx.SaveSession(epoch=state.epoch),
        fx.Shutdown(epoch=state.epoch, stop_server=event.stop_server),
    ]
    return replace(state, quitting=True), tuple(effects)


# --------------------------------------------------------------------------------------------
# Outcomes
# --------------------------------------------------------------------------------------------


def _on_validated(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.ConfigValidated)
    trial = _require_trial(state, event)
    prediction = predict_capacity(
        state.trials, event.config, minimum_tokens=_minimum_capacity(state)
    )
    trial = replace(
        trial,
        normalized=event.config,
        argv=event.argv,
        warnings=trial.warnings + event.warnings,
        predicted=prediction if prediction.predicted_tokens is not None else None,
    )
    new = replace(state, trial=trial)
    effects: list[fx.Effect] = []
    if not prediction.feasible and trial.kind is not TrialKind.ROLLBACK:
        skip = (
            state.plan is not None and state.plan.skip_infeasible and trial.kind is TrialKind.SWEEP
        )
        if skip:
            return _finish_trial(
                new,
                TrialStatus.INFEASIBLE,
                event.at,
                note=prediction.reason,
                extra=(fx.Notify(epoch=state.epoch, level="warning", text=prediction.reason),),
            )
        new = _notice(new, "warning", prediction.reason, event.at)
        effects.append(fx.Notify(epoch=state.epoch, level="warning", text=prediction.reason))
    if state.reattach_allowed and trial.kind is TrialKind.SWEEP:
        return replace(new, reattach_allowed=False), (
            *effects,
            fx.CheckReattach(epoch=state.epoch, config=event.config),
        )
    new = _enter(replace(new, reattach_allowed=False), Phase.DEPLOYING, event.at)
    return new, (*effects, fx.Deploy(epoch=state.epoch, config=event.config))


def _on_invalid(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.ConfigInvalid)
    trial = _require_trial(state, event)
    new = replace(state, trial=replace(trial, warnings=trial.warnings + event.warnings))
    text = f"trial {trial.index + 1} is invalid: " + "; ".join(event.errors)
    new = _notice(new, "error", text, event.at)
    return _finish_trial(
        new,
        TrialStatus.INVALID,
        event.at,
        errors=event.errors,
        extra=(fx.Notify(epoch=state.epoch, level="error", text=text),),
    )


def _on_reattach_checked(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.ReattachChecked)
    trial = _require_trial(state, event)
    config = trial.normalized or trial.config
    if not event.attached:
        new = _enter(state, Phase.DEPLOYING, event.at)
        return new, (fx.Deploy(epoch=state.epoch, config=config),)
    trial = replace(trial, kind=TrialKind.REATTACH, artifact_hash=event.artifact_hash)
    new = replace(
        state,
        trial=trial,
        deployed=Deployed(
            config=trial.config, artifact_hash=event.artifact_hash, at=event.at, serving=True
        ),
    )
    new = _enter(new, Phase.READY, event.at, "reattached")
    text = f"reattached to the running server ({event.detail or 'same configuration'})"
    new = _notice(new, "info", text, event.at)
    return new, (
        fx.Notify(epoch=state.epoch, level="info", text=text),
        fx.StartWatch(epoch=state.epoch, trial_index=trial.index),
        fx.FetchServerInfo(epoch=state.epoch),
    )


def _on_deploy_previewed(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.DeployPreviewed)
    trial = replace(_require_trial(state, event), deploy_diff=event.diff)
    return replace(state, trial=trial), ()


def _on_deployed(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.DeployDone)
    trial = _require_trial(state, event)
    trial = replace(trial, artifact_hash=event.artifact_hash)
    new = replace(
        state,
        trial=trial,
        deployed=Deployed(
            config=trial.config, artifact_hash=event.artifact_hash, at=event.at, serving=False
        ),
    )
    new = _enter(new, Phase.RESTARTING, event.at)
    return new, (fx.StopWatch(epoch=state.epoch), fx.Restart(epoch=state.epoch))


def _on_restarted(state: ControllerState, event: ev.Event) -> Result:
    trial = _require_trial(state, event)
    new = replace(state, load_stage=LoadStage.STARTING, load_stage_since=event.at)
    new = _enter(new, Phase.LOADING, event.at, LoadStage.STARTING.value)
    new = replace(new, load_stage=LoadStage.STARTING, load_stage_since=event.at)
    return new, (
        fx.StartWatch(epoch=state.epoch, trial_index=trial.index),
        fx.StartTimer(epoch=state.epoch, key=fx.LOAD_TIMER, seconds=_load_timeout(state)),
    )


def _on_operation_failed_busy(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.OperationFailed)
    trial = _require_trial(state, event)
    if state.phase is Phase.READY:  # /server_info is informative only
        return _after_server_info(
            _notice(state, "warning", f"{event.operation}: {event.message}", event.at), event.at
        )
    if state.phase is Phase.FLUSHING:
        new = _notice(state, "warning", f"{event.operation}: {event.message}", event.at)
        return _start_benchmark(new, event.at)
    text = f"trial {trial.index + 1}: {event.operation} failed: {event.message}"
    new = _notice(state, "error", text, event.at)
    extra: Effects = (fx.Notify(epoch=state.epoch, level="error", text=text),)
    if state.phase in (Phase.LOADING, Phase.BENCHMARKING):
        # The watch or the benchmark itself broke (connection lost...): not a server crash.
        more: list[fx.Effect] = [fx.CancelTimer(epoch=state.epoch, key=fx.LOAD_TIMER)]
        if state.phase is Phase.BENCHMARKING:
            more.append(fx.CancelBenchmark(epoch=state.epoch))
        extra = (*more, *extra)
    return _finish_trial(
        new,
        TrialStatus.FAILED,
        event.at,
        errors=(f"{event.operation}: {event.message}",),
        extra=extra,
    )


def _stage_detail(event: ev.LoadStageSeen) -> str:
    """The stamp's detail: the stage, or a batch job's queue reason ("queued: Resources")."""
    if event.stage is LoadStage.QUEUED and event.detail:
        return event.detail
    return event.stage.value


def _on_load_stage(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.LoadStageSeen)
    if event.stage is state.load_stage:
        return state, ()
    trial = _require_trial(state, event)
    phases = close_open_stamp(trial.phases, event.at)
    trial = replace(
        trial, phases=(*phases, PhaseStamp(Phase.LOADING, event.at, None, _stage_detail(event)))
    )
    return replace(state, trial=trial, load_stage=event.stage, load_stage_since=event.at), ()


def _on_capacity(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.CapacitySeen)
    trial = _require_trial(state, event)
    trial = replace(
        trial,
        capacity=event.max_total_num_tokens,
        max_running_requests=event.max_running_requests or trial.max_running_requests,
    )
    return replace(state, trial=trial), ()


def _on_ready(state: ControllerState, event: ev.Event) -> Result:
    trial = _require_trial(state, event)
    deployed = state.deployed or Deployed(trial.config, trial.artifact_hash, event.at)
    new = replace(state, deployed=replace(deployed, serving=True))
    new = _enter(new, Phase.READY, event.at)
    return new, (
        fx.CancelTimer(epoch=state.epoch, key=fx.LOAD_TIMER),
        fx.FetchServerInfo(epoch=state.epoch),
    )


def _on_fatal(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.FatalSeen)
    return _crash(
        state,
        event.at,
        cause=event.cause,
        message=event.message,
        excerpt=event.excerpt,
        fixes=event.fixes,
        source_time=event.source_time,
    )


def _on_exited(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.ServiceExited)
    st = event.status
    detail = st.detail or st.result or st.state.value
    parts = [f"the server {'exited' if st.state is ServiceState.EXITED else st.state.value}"]
    if st.exit_status is not None:
        parts.append(f"with status {st.exit_status}")
    if st.signal is not None:
        parts.append(f"by signal {st.signal}")
    if st.oom_killed:
        parts.append("(killed by the OOM killer)")
    message = " ".join(parts) + (f": {detail}" if detail and detail not in parts[0] else "")
    return _crash(
        state,
        event.at,
        cause=st.cause or ("oom_killed" if st.oom_killed else "exited"),
        message=message,
        exit_status=st.exit_status,
        signal=st.signal,
    )


def _on_timer(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.TimerFired)
    if event.key != fx.LOAD_TIMER:
        return state, ()
    timeout = _load_timeout(state)
    stage = state.load_stage.value if state.load_stage is not None else "starting"
    return _crash(
        state,
        event.at,
        cause="load_timeout",
        message=f"not ready after {timeout:g} s (stuck in {stage})",
        fixes=("raise [sweep] load_timeout if this model really loads this slowly",),
        status=TrialStatus.LOAD_TIMEOUT,
    )


def _after_server_info(state: ControllerState, at: float) -> Result:
    trial = state.trial
    assert trial is not None
    if trial.kind is TrialKind.ROLLBACK:
        return _finish_trial(state, TrialStatus.OK, at, note="rollback: not benchmarked")
    if _bench_spec(state).flush_cache:
        new = _enter(state, Phase.FLUSHING, at)
        return new, (fx.FlushCache(epoch=state.epoch),)
    return _start_benchmark(state, at)


def _on_server_info(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.ServerInfoFetched)
    trial = _require_trial(state, event)
    new = replace(state, trial=replace(trial, server_info=event.items))
    return _after_server_info(new, event.at)


def _start_benchmark(state: ControllerState, at: float) -> Result:
    spec = _bench_spec(state)
    progress = tuple(
        LevelProgress(
            concurrency=c,
            total=_planned_requests(spec, c),
            planned_duration_s=spec.duration_s if spec.requests_per_level is None else None,
        )
        for c in spec.ladder
    )
    new = replace(_enter(state, Phase.BENCHMARKING, at), bench=progress)
    return new, (fx.RunBenchmark(epoch=state.epoch, spec=spec),)


def _planned_requests(spec: BenchSpec, concurrency: int) -> int:
    """Measured requests a level will send, or 0 (unknown up front) in duration mode."""
    return spec.requests_at(concurrency) or 0


def _on_flushed(state: ControllerState, event: ev.Event) -> Result:
    return _start_benchmark(state, event.at)


def _on_bench_progress(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.BenchProgressed)
    p = event.progress
    bench = list(state.bench)
    if not 0 <= p.level_index < len(bench):
        return state, ()
    level = bench[p.level_index]
    bench[p.level_index] = replace(
        level,
        concurrency=p.concurrency,
        # a runner reports 0 when it cannot know the count (duration mode): keep the plan's
        total=p.total if p.total > 0 else level.total,
        planned_duration_s=p.planned_duration_s or level.planned_duration_s,
        completed=p.completed,
        failed=p.failed,
        running=p.running,
        current_tok_s=p.current_tok_s,
        elapsed_s=p.elapsed_s,
        warmup=p.warmup,
    )
    for i in range(p.level_index):  # earlier levels are finished
        if not bench[i].done:
            bench[i] = replace(bench[i], done=True)
    detail = f"c={p.concurrency}"
    new = replace(state, bench=tuple(bench))
    trial = new.trial
    if trial is not None and trial.phases and trial.phases[-1].detail != detail:
        phases = close_open_stamp(trial.phases, event.at)
        new = replace(
            new,
            trial=replace(
                trial, phases=(*phases, PhaseStamp(Phase.BENCHMARKING, event.at, None, detail))
            ),
        )
    return new, ()


def _on_bench_level_finished(state: ControllerState, event: ev.Event) -> Result:
    """A level's figures, live: the bench panel, the charts and the trial's headline numbers
    show them before the whole ladder is done (``BenchFinished`` has the final word)."""
    assert isinstance(event, ev.BenchLevelFinished)
    trial = _require_trial(state, event)
    bench = list(state.bench)
    if not 0 <= event.level_index < len(bench):
        return state, ()
    bench[event.level_index] = replace(
        bench[event.level_index],
        concurrency=event.level.concurrency,
        done=True,
        running=0,
        result=event.level,
    )
    levels = tuple(p.result for p in bench if p.result is not None)
    return replace(state, bench=tuple(bench), trial=replace(trial, levels=levels)), ()


def _on_bench_finished(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.BenchFinished)
    trial = _require_trial(state, event)
    by_c = {lv.concurrency: lv for lv in event.levels}
    bench = tuple(
        replace(p, done=p.concurrency in by_c, result=by_c.get(p.concurrency)) for p in state.bench
    )
    trial = replace(trial, levels=event.levels, accept_length=event.accept_length)
    new = replace(state, trial=trial, bench=bench)
    if event.error and not event.levels:
        return _finish_trial(
            new, TrialStatus.FAILED, event.at, errors=(f"benchmark: {event.error}",)
        )
    note = f"partial benchmark: {event.error}" if event.partial or event.error else ""
    return _finish_trial(new, TrialStatus.OK, event.at, note=note)


def _on_recorded(state: ControllerState, event: ev.Event) -> Result:
    return _after_recorded(state, event.at)


def _on_record_failed(state: ControllerState, event: ev.Event) -> Result:
    """The session could not be written: keep the trial in memory and stop the sweep."""
    assert isinstance(event, ev.OperationFailed)
    text = f"could not record the trial: {event.message}; the sweep pauses"
    new = replace(_notice(state, "error", text, event.at), pause_requested=True)
    nxt, effects = _after_recorded(new, event.at)
    if nxt.phase not in RESTING_PHASES:  # pragma: no cover - pause_requested prevents it
        return nxt, effects
    return nxt, (fx.Notify(epoch=state.epoch, level="error", text=text), *effects)


def _on_crashed_server_down(state: ControllerState, event: ev.Event) -> Result:
    """After a crash the server is down (stopped, or its exit seen): record the crash."""
    trial = _require_trial(state, event)
    crash = trial.crash
    status = getattr(event, "status", None)
    if crash is not None and status is not None:
        crash = replace(
            crash,
            exit_status=crash.exit_status if crash.exit_status is not None else status.exit_status,
            signal=crash.signal if crash.signal is not None else status.signal,
        )
    new = replace(state, trial=replace(trial, crash=crash))
    errors: tuple[str, ...] = ()
    if isinstance(event, ev.OperationFailed):
        errors = (f"{event.operation}: {event.message}",)
    return _finish_trial(new, trial.status, event.at, errors=errors)


def _on_crashed_exit_seen(state: ControllerState, event: ev.Event) -> Result:
    """The watch saw the exit before StopServer answered: keep its status for the record."""
    assert isinstance(event, ev.ServiceExited)
    trial = _require_trial(state, event)
    if trial.crash is None:
        return state, ()
    crash = replace(
        trial.crash,
        exit_status=trial.crash.exit_status
        if trial.crash.exit_status is not None
        else event.status.exit_status,
        signal=trial.crash.signal if trial.crash.signal is not None else event.status.signal,
    )
    return replace(state, trial=replace(trial, crash=crash)), ()


# Anywhere / observation handlers


def _on_log_lines(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.LogLines)
    if not event.lines:
        return state, ()
    tail = (*state.log_tail, *event.lines)[-LOG_TAIL_LINES:]
    return replace(state, log_tail=tail), ()


def _on_connection(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.ConnectionChanged)
    new = replace(state, connection=event.state)
    if event.state in (ConnectionState.LOST, ConnectionState.RECONNECTING) and event.detail:
        new = _notice(new, "warning", f"connection {event.state.value}: {event.detail}", event.at)
    return new, ()


def _ignore(state: ControllerState, event: ev.Event) -> Result:
    return state, ()


def _observe_ready(state: ControllerState, event: ev.Event) -> Result:
    if state.deployed is None:
        return state, ()
    return replace(state, deployed=replace(state.deployed, serving=True)), ()


def _observe_down(state: ControllerState, event: ev.Event) -> Result:
    if state.deployed is None or not state.deployed.serving:
        return state, ()
    text = "the server stopped while idle"
    if isinstance(event, ev.FatalSeen):
        text = f"the server logged a fatal error while idle: {event.message}"
    new = replace(state, deployed=replace(state.deployed, serving=False))
    new = _notice(new, "error", text, event.at)
    return new, (fx.Notify(epoch=state.epoch, level="error", text=text),)


def _observe_capacity(state: ControllerState, event: ev.Event) -> Result:
    """Replayed load lines after a reattach: keep the capacity for the record."""
    assert isinstance(event, ev.CapacitySeen)
    if state.trial is None or state.trial.capacity is not None:
        return state, ()
    return _on_capacity(state, event)


# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------

TRANSITIONS: dict[tuple[Phase, type[ev.Event]], Handler] = {}
"""(phase, event type) → handler. Everything not here (or in ANYWHERE) is illegal."""


def _on(
    phases: frozenset[Phase] | set[Phase] | tuple[Phase, ...],
    etype: type[ev.Event],
    handler: Handler,
) -> None:
    for phase in phases:
        TRANSITIONS[(phase, etype)] = handler


_STARTABLE = (Phase.IDLE, Phase.DONE, Phase.CANCELLED, Phase.PAUSED)
_ACTIVE = (Phase.VALIDATING, Phase.DEPLOYING, Phase.RESTARTING, *WATCHED_PHASES)

# intents
_on(_STARTABLE, ev.StartSweep, _on_start_sweep)
_on(BUSY_PHASES, ev.Pause, _on_pause)
_on(_ACTIVE, ev.Cancel, _on_cancel_busy)
_on((Phase.RECORDING, Phase.CRASHED), ev.Cancel, _on_cancel_recording)
_on((Phase.PAUSED, Phase.AWAITING_DECISION), ev.Cancel, _on_cancel_resting)
_on((*_STARTABLE, Phase.AWAITING_DECISION), ev.DeployConfig, _on_deploy_config)
_on(_STARTABLE, ev.BenchmarkOnly, _on_benchmark_only)
_on((Phase.AWAITING_DECISION, Phase.PAUSED, Phase.CANCELLED), ev.Resume, _on_resume)

# the trial pipeline
_on((Phase.VALIDATING,), ev.ConfigValidated, _on_validated)
_on((Phase.VALIDATING,), ev.ConfigInvalid, _on_invalid)
_on((Phase.VALIDATING,), ev.ReattachChecked, _on_reattach_checked)
_on((Phase.DEPLOYING,), ev.DeployPreviewed, _on_deploy_previewed)
_on((Phase.DEPLOYING,), ev.DeployDone, _on_deployed)
_on((Phase.RESTARTING,), ev.Restarted, _on_restarted)
_on(_ACTIVE, ev.OperationFailed, _on_operation_failed_busy)
_on((Phase.LOADING,), ev.LoadStageSeen, _on_load_stage)
_on((Phase.LOADING,), ev.CapacitySeen, _on_capacity)
_on((Phase.READY, Phase.FLUSHING, Phase.BENCHMARKING), ev.CapacitySeen, _observe_capacity)
_on((Phase.LOADING,), ev.ServerReady, _on_ready)
_on(WATCHED_PHASES, ev.FatalSeen, _on_fatal)
_on(WATCHED_PHASES, ev.ServiceExited, _on_exited)
_on((Phase.LOADING,), ev.TimerFired, _on_timer)
_on((Phase.READY,), ev.ServerInfoFetched, _on_server_info)
_on((Phase.FLUSHING,), ev.CacheFlushed, _on_flushed)
_on((Phase.BENCHMARKING,), ev.BenchProgressed, _on_bench_progress)
_on((Phase.BENCHMARKING,), ev.BenchLevelFinished, _on_bench_level_finished)
_on((Phase.BENCHMARKING,), ev.BenchFinished, _on_bench_finished)
_on((Phase.RECORDING,), ev.TrialRecorded, _on_recorded)
_on((Phase.RECORDING,), ev.OperationFailed, _on_record_failed)
_on((Phase.CRASHED,), ev.ServerStopped, _on_crashed_server_down)
_on((Phase.CRASHED,), ev.OperationFailed, _on_crashed_server_down)
_on((Phase.CRASHED,), ev.ServiceExited, _on_crashed_exit_seen)

# benign races: replayed or duplicated watch events while the trial is past loading
_on((Phase.READY, Phase.FLUSHING, Phase.BENCHMARKING), ev.ServerReady, _ignore)
_on((Phase.READY, Phase.FLUSHING, Phase.BENCHMARKING), ev.LoadStageSeen, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.FatalSeen, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.ServerReady, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.LoadStageSeen, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.CapacitySeen, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.BenchProgressed, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.BenchLevelFinished, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.BenchFinished, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.TimerFired, _ignore)
_on((Phase.RECORDING,), ev.ServiceExited, _ignore)
_on((Phase.RECORDING,), ev.ServerStopped, _ignore)
_on(BUSY_PHASES - {Phase.CRASHED}, ev.ServerStopped, _ignore)
_on(WATCHED_PHASES - {Phase.LOADING}, ev.TimerFired, _ignore)

# resting phases: watch events only update what is known about the server
_on(RESTING_PHASES, ev.ServerReady, _observe_ready)
_on(RESTING_PHASES, ev.ServiceExited, _observe_down)
_on(RESTING_PHASES, ev.FatalSeen, _observe_down)

ANYWHERE: dict[type[ev.Event], Handler] = {
    ev.LogLines: _on_log_lines,
    ev.ConnectionChanged: _on_connection,
    ev.SetPolicy: _on_set_policy,
    ev.Quit: _on_quit,
}
"""Event types handled the same way in every phase."""
