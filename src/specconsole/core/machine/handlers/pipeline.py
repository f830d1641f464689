"""The trial pipeline's outcomes: VALIDATING → DEPLOYING → RESTARTING → LOADING (weights,
KV cache, CUDA graphs) → READY → FLUSHING → BENCHMARKING → RECORDING, one handler per
answer of an effect the machine asked for.
"""

from __future__ import annotations

from dataclasses import replace

from specconsole.core.config.chat_templates import template_for
from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.registry import EngineNotFound, engine_for
from specconsole.core.logs.events import LoadStage
from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine import results
from specconsole.core.machine.common import (
    Effects,
    Result,
    _bench_spec,
    _enter,
    _load_timeout,
    _minimum_capacity,
    _notice,
    _require_trial,
)
from specconsole.core.machine.handlers import speculation, telemetry
from specconsole.core.machine.handlers.measuring import benchmark_plan, progress_for
from specconsole.core.machine.handlers.trial import _after_recorded, _finish_trial
from specconsole.core.machine.state import (
    RESTING_PHASES,
    ControllerState,
    Deployed,
    Phase,
    PhaseStamp,
    TrialKind,
    TrialStatus,
    close_open_stamp,
)
from specconsole.core.ports import BenchSpec
from specconsole.core.search.capacity import predict_capacity
from specconsole.core.search.forecasting import forecast
from specconsole.core.search.proof.remeasure import remeasured_spec


def _on_validated(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.ConfigValidated)
    trial = _require_trial(state, event)
    prediction = predict_capacity(
        state.trials, event.config, minimum_tokens=_minimum_capacity(state)
    )
    expected = forecast(state.trials, event.config, prediction, event.model_facts)
    trial = replace(
        trial,
        normalized=event.config,
        argv=event.argv,
        warnings=trial.warnings + event.warnings,
        predicted=prediction if prediction.predicted_tokens is not None else None,
        forecast=expected,
    )
    trial = speculation.mark(trial, speculation.configured_off(event.config))
    new = replace(state, trial=trial)
    effects: list[fx.Effect] = []
    if expected is not None and expected.loads is False and prediction.feasible:
        # the engine's own model of the launch (a model's limits, the box's memory)
        reason = f"predicted not to load: {expected.load_reason}"
        prediction = replace(prediction, feasible=False, reason=reason)
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
            config=trial.effective, artifact_hash=event.artifact_hash, at=event.at, serving=True
        ),
    )
    new = _enter(new, Phase.READY, event.at, "reattached")
    text = f"reattached to the running server ({event.detail or 'same configuration'})"
    new = _notice(new, "info", text, event.at)
    return new, (
        fx.Notify(epoch=state.epoch, level="info", text=text),
        fx.StartWatch(epoch=state.epoch, trial_index=trial.index),
        *telemetry.start(state, trial),
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
            config=trial.effective, artifact_hash=event.artifact_hash, at=event.at, serving=False
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
        *telemetry.start(state, trial),
        fx.StartTimer(epoch=state.epoch, key=fx.LOAD_TIMER, seconds=_load_timeout(state)),
    )


def _on_operation_failed_busy(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.OperationFailed)
    trial = _require_trial(state, event)
    if state.phase in (Phase.READY, Phase.FLUSHING):  # informative: said, and kept
        said = f"{event.operation}: {event.message}"
        kept = replace(trial, warnings=(*trial.warnings, said))
        new = _notice(replace(state, trial=kept), "warning", said, event.at)
        if state.phase is Phase.READY:  # /server_info
            return _after_server_info(new, event.at)
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
    deployed = state.deployed or Deployed(trial.effective, trial.artifact_hash, event.at)
    new = replace(state, deployed=replace(deployed, serving=True))
    new = _enter(new, Phase.READY, event.at)
    return new, (
        fx.CancelTimer(epoch=state.epoch, key=fx.LOAD_TIMER),
        fx.FetchServerInfo(epoch=state.epoch),
    )


def _after_server_info(state: ControllerState, at: float) -> Result:
    trial = state.trial
    assert trial is not None
    if trial.kind is TrialKind.ROLLBACK:
        return _finish_trial(state, TrialStatus.OK, at, note="rollback: not benchmarked")
    if _bench_spec(state).flush_cache and _serves_flush(trial.normalized or trial.config):
        new = _enter(state, Phase.FLUSHING, at)
        return new, (fx.FlushCache(epoch=state.epoch),)
    return _start_benchmark(state, at)


def _serves_flush(config: ServerConfig) -> bool:
    """Whether the trial's engine serves a cache flush (``Endpoints.flush_cache``): without
    one there is no flushing phase to show (llama-server's)."""
    try:
        return engine_for(config).endpoints.flush_cache is not None
    except EngineNotFound:
        return True  # the plan named no registered engine: the flush says what failed


def _on_server_info(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.ServerInfoFetched)
    trial = _require_trial(state, event)
    new = replace(state, trial=replace(trial, server_info=event.items))
    return _after_server_info(new, event.at)


def _trial_bench_spec(state: ControllerState) -> BenchSpec:
    """The plan's ``[bench]`` with what the trial adds: the ladder or workload of a trial
    that re-measures (``TrialRecord.remeasure``), its model's chat template (for the
    templated workloads) and the speculative-decoding counters its engine keeps
    (``Endpoints.spec_counters``), snapshotted around each level."""
    spec = _bench_spec(state)
    trial = state.trial
    if trial is not None and trial.remeasure is not None:
        spec = remeasured_spec(spec, trial.remeasure)
    config = (trial.normalized or trial.config) if trial is not None else state.current_config
    if config is None:
        return spec
    spec = replace(spec, chat_template=template_for(spec.model or config.model_path))
    try:
        counters = engine_for(config).endpoints.spec_counters
    except EngineNotFound:
        return spec
    return spec if counters is None else replace(spec, spec_counters=counters)


def _start_benchmark(state: ControllerState, at: float) -> Result:
    # the deciding level first under pruning, or a rate search's first probe (measuring)
    spec = benchmark_plan(state, _trial_bench_spec(state))
    new = replace(_enter(state, Phase.BENCHMARKING, at), bench=progress_for(spec))
    return new, (fx.RunBenchmark(epoch=state.epoch, spec=spec),)


def _on_flushed(state: ControllerState, event: ev.Event) -> Result:
    return _start_benchmark(state, event.at)


def _on_bench_progress(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.BenchProgressed)
    p = event.progress
    bench = list(state.bench)
    if not 0 <= p.level_index < len(bench):
        return state, ()
    level = bench[p.level_index]
    if p.repeat > level.repeat:  # the next run of the ladder reached this level
        level = replace(level, done=False)
    bench[p.level_index] = replace(
        level,
        repeat=max(level.repeat, p.repeat),
        repeat_count=max(1, p.repeat_count),
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
    here = bench[p.level_index].position
    for i in range(p.level_index):  # levels that ran before this one are finished
        if not bench[i].done and bench[i].position <= here:  # (under pruning the lead first)
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
    level = bench[event.level_index]
    runs = list(level.runs)
    if event.repeat < len(runs):  # the same run again (a level re-run after a lost link)
        runs[event.repeat] = event.level
    else:
        runs.append(event.level)
    bench[event.level_index] = replace(
        level,
        concurrency=event.level.concurrency,
        done=True,
        running=0,
        runs=tuple(runs),
        repeat=max(level.repeat, event.repeat),
        result=results.combine_runs(runs),
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
    trial = speculation.mark(
        trial, speculation.uncounted(trial.normalized or trial.config, event.levels)
    )
    new = replace(state, trial=trial, bench=bench)
    if event.error and not event.levels:
        return _finish_trial(
            new, TrialStatus.FAILED, event.at, errors=(f"benchmark: {event.error}",)
        )
    note = f"partial benchmark: {event.error}" if event.partial or event.error else ""
    note = "; ".join(x for x in (note, *(f"re-run: {r}" for r in event.reruns)) if x)
    failed = sum(lv.failed for lv in event.levels)
    if event.levels and not any(lv.completed for lv in event.levels):
        text = f"benchmark: every request failed or timed out ({failed} failed)"
        return _finish_trial(new, TrialStatus.FAILED, event.at, errors=(text,), note=note)
    if failed:
        where = ", ".join(
            f"c={lv.concurrency}: {lv.failed} of {lv.completed + lv.failed} failed"
            for lv in event.levels
            if lv.failed
        )
        note = "; ".join(x for x in (note, f"degraded: {where}") if x)
        return _finish_trial(new, TrialStatus.DEGRADED, event.at, note=note)
    return _finish_trial(new, TrialStatus.OK, event.at, note=note)


def _on_recorded(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.TrialRecorded)
    record = event.record
    if record is not None and state.trial is not None and state.trial.index == record.index:
        state = replace(state, trial=record)  # as written: stamps closed, log file named
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
