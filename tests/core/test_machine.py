"""Table-driven tests of the pure trial state machine (``core.machine.table.step``).

Each row puts the machine in a phase through real transitions (``Driver.to_phase``), feeds
one event and asserts the new phase and the effects, in the style of pyinfra's
facts → commands fixtures.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from specconsole.core.logs.events import LoadStage, SuggestedFix
from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.common import IllegalTransition
from specconsole.core.machine.handlers.crash import _observe_down, _on_crashed_exit_seen
from specconsole.core.machine.intents import (
    ACCEPTED,
    DEFERRABLE,
    DEFERRING_PHASES,
    EVERYWHERE,
    legal_intents,
)
from specconsole.core.machine.state import (
    ControllerState,
    LevelSummary,
    Phase,
    ResumeChoice,
    TrialKind,
    TrialStatus,
)
from specconsole.core.machine.table import (
    ANYWHERE,
    TRANSITIONS,
    _ignore,
    _observe_capacity,
    _observe_ready,
    step,
)
from specconsole.core.plans.plan import CrashPolicy
from specconsole.core.ports import BenchProgress, ServiceState, ServiceStatus
from tests.controller.helpers import Driver, levels, plan

PIPELINE = [
    Phase.VALIDATING,
    Phase.DEPLOYING,
    Phase.RESTARTING,
    Phase.LOADING,
    Phase.READY,
    Phase.FLUSHING,
    Phase.BENCHMARKING,
    Phase.RECORDING,
]

# --------------------------------------------------------------------------------------------
# The happy path, one transition per row
# --------------------------------------------------------------------------------------------

HAPPY = [
    # (phase before, event, phase after, effect types (in order))
    (Phase.VALIDATING, "validated", Phase.DEPLOYING, [fx.Deploy]),
    (
        Phase.DEPLOYING,
        ev.DeployDone(artifact_hash="abc"),
        Phase.RESTARTING,
        [fx.StopWatch, fx.Restart],
    ),
    (
        Phase.RESTARTING,
        ev.Restarted(),
        Phase.LOADING,
        [fx.StartWatch, fx.StartTelemetry, fx.StartTimer],
    ),
    (Phase.LOADING, ev.LoadStageSeen(stage=LoadStage.KV_CACHE), Phase.LOADING, []),
    (Phase.LOADING, ev.CapacitySeen(max_total_num_tokens=1234), Phase.LOADING, []),
    (Phase.LOADING, ev.ServerReady(), Phase.READY, [fx.CancelTimer, fx.FetchServerInfo]),
    (Phase.READY, ev.ServerInfoFetched(), Phase.FLUSHING, [fx.FlushCache]),
    (
        Phase.READY,
        ev.OperationFailed(operation="server_info", message="404"),
        Phase.FLUSHING,
        [fx.FlushCache],
    ),
    (Phase.FLUSHING, ev.CacheFlushed(), Phase.BENCHMARKING, [fx.RunBenchmark]),
    (
        Phase.FLUSHING,
        ev.OperationFailed(operation="flush", message="busy"),
        Phase.BENCHMARKING,
        [fx.RunBenchmark],
    ),
    (
        Phase.BENCHMARKING,
        ev.BenchFinished(levels=levels()),
        Phase.RECORDING,
        [fx.StopTelemetry, fx.RecordTrial],
    ),
    (
        Phase.RECORDING,
        ev.TrialRecorded(index=0),
        Phase.VALIDATING,
        [fx.SaveSession, fx.Notify, fx.Validate],
    ),
]


@pytest.mark.parametrize(("before", "event", "after", "effects"), HAPPY)
def test_happy_path_transition(
    before: Phase, event: ev.Event | str, after: Phase, effects: list[type[fx.Effect]]
) -> None:
    d = Driver()
    d.to_phase(before)
    if event == "validated":
        d.validated()
    else:
        assert isinstance(event, ev.Event)
        d.send(event)
    assert d.state.phase is after
    assert d.effect_types() == effects


def test_a_trial_records_everything() -> None:
    d = Driver()
    d.to_phase(Phase.BENCHMARKING, capacity=321_000)
    d.send(
        ev.BenchProgressed(
            progress=BenchProgress(
                level_index=1,
                concurrency=4,
                completed=2,
                failed=0,
                total=4,
                running=2,
                output_tokens=32,
                current_tok_s=250.0,
                elapsed_s=0.5,
            )
        )
    )
    assert d.state.bench[0].done and not d.state.bench[1].done
    assert d.state.bench[1].completed == 2 and d.state.bench[1].fraction == 0.5
    d.send(ev.BenchFinished(levels=levels(110.0, 900.0), accept_length=2.4))
    record = d.find(fx.RecordTrial).record  # type: ignore[attr-defined]
    assert record.status is TrialStatus.OK
    assert record.capacity == 321_000 and record.max_running_requests == 64
    assert record.artifact_hash == "h1"
    assert record.argv == ("python3", "-m", "sglang")
    assert record.normalized.speculative_num_draft_tokens == 2
    assert record.single_request_tok_s == 110.0 and record.peak_aggregate_tok_s == 900.0
    assert record.accept_length == 2.4
    assert record.server_info == (("tp_size", "4"),)
    stamped = [p.phase for p in record.phases]
    for phase in PIPELINE:
        assert phase in stamped
    assert all(p.ended_at is not None for p in record.phases[:-1])
    loads = [p.detail for p in record.phases if p.phase is Phase.LOADING]
    assert loads == ["starting", "weights"]
    assert [p.detail for p in record.phases if p.phase is Phase.BENCHMARKING] == ["", "c=4"]


def test_sweep_walks_the_plan_and_finishes() -> None:
    d = Driver()
    d.start()
    for _ in range(4):
        d.finish_trial()
    # 1, 2, 3, 10 all load: the boundary walk is over
    assert d.state.phase is Phase.DONE
    assert d.state.finished_reason == "plan complete"
    assert [t.config.speculative_num_steps for t in d.state.trials] == [1, 2, 3, 10]
    assert fx.Finish in d.effect_types()
    assert d.state.last_good is not None and d.state.last_good.speculative_num_steps == 10


def _progress(index: int, c: int, *, total: int, elapsed: float, **more: object) -> ev.Event:
    return ev.BenchProgressed(
        progress=BenchProgress(
            level_index=index,
            concurrency=c,
            completed=3,
            failed=0,
            total=total,
            running=c,
            output_tokens=96,
            current_tok_s=50.0,
            elapsed_s=elapsed,
            **more,  # type: ignore[arg-type]
        )
    )


def test_timed_levels_keep_the_planned_totals_and_progress_by_time() -> None:
    """Duration mode: the engine reports ``total=0`` (the count is not known up front); the
    level keeps what the plan says and its fraction is the time spent."""
    timed = plan(
        bench=replace(plan().bench, ladder=(1, 4), requests_per_level=None, duration_s=10.0)
    )
    d = Driver()
    d.start(timed)
    d.to_phase(Phase.BENCHMARKING)
    assert [(lv.total, lv.planned_duration_s) for lv in d.state.bench] == [(0, 10.0), (0, 10.0)]
    d.send(_progress(0, 1, total=0, elapsed=5.0, planned_duration_s=10.0))
    level = d.state.bench[0]
    assert level.completed == 3 and level.total == 0
    assert level.fraction == 0.5
    d.send(_progress(0, 1, total=0, elapsed=12.0, planned_duration_s=10.0))
    assert d.state.bench[0].fraction == 1.0
    # a warm-up's clock is not the measured phase's
    d.send(_progress(1, 4, total=0, elapsed=5.0, planned_duration_s=10.0, warmup=True))
    assert d.state.bench[1].fraction == 0.0


def test_a_progress_without_a_total_keeps_the_planned_count() -> None:
    counted = plan(bench=replace(plan().bench, ladder=(1, 4), requests_per_level=8))
    d = Driver()
    d.start(counted)
    d.to_phase(Phase.BENCHMARKING)
    assert [lv.total for lv in d.state.bench] == [8, 8]
    d.send(_progress(0, 1, total=0, elapsed=1.0))
    assert d.state.bench[0].total == 8
    assert d.state.bench[0].fraction == 3 / 8


LIVE_LEVELS = [
    # (phase, level index, level, expected trial levels (concurrency), phase after)
    (Phase.BENCHMARKING, 0, levels()[0], [1], Phase.BENCHMARKING),
    (Phase.BENCHMARKING, 1, levels()[1], [4], Phase.BENCHMARKING),
    (Phase.BENCHMARKING, 7, levels()[0], [], Phase.BENCHMARKING),  # not a planned level
    (Phase.RECORDING, 0, levels()[0], None, Phase.RECORDING),  # late: the ladder is done
    (Phase.CRASHED, 0, levels()[0], None, Phase.CRASHED),  # late: the server died
]


@pytest.mark.parametrize(("phase", "index", "level", "expected", "after"), LIVE_LEVELS)
def test_a_finished_level_is_stored_at_once(
    phase: Phase, index: int, level: LevelSummary, expected: list[int] | None, after: Phase
) -> None:
    d = _reach(phase)
    before = d.state
    effects = d.send(ev.BenchLevelFinished(level_index=index, level=level))
    assert effects == ()
    assert d.state.phase is after
    if expected is None:
        assert d.state.bench == before.bench and d.state.trial == before.trial
        return
    trial = d.state.trial
    assert trial is not None
    assert [lv.concurrency for lv in trial.levels] == expected
    done = [p for p in d.state.bench if p.result is not None]
    assert [p.concurrency for p in done] == expected
    assert all(p.done and p.fraction == 1.0 for p in done)
    if expected == [1]:  # the single-request headline exists before the ladder ends
        assert trial.single_request_tok_s == level.per_request_tok_s
        assert d.state.bench[1].result is None and not d.state.bench[1].done


def test_levels_arrive_one_by_one_then_the_ladder_result_has_the_final_word() -> None:
    d = Driver()
    d.to_phase(Phase.BENCHMARKING)
    first, second = levels()
    d.send(ev.BenchLevelFinished(level_index=0, level=first))
    assert d.state.trial is not None and d.state.trial.peak_aggregate_tok_s == first.output_tok_s
    d.send(ev.BenchLevelFinished(level_index=1, level=second))
    assert [lv.concurrency for lv in d.state.trial.levels] == [1, 4]
    final = levels(single=110.0, agg=1100.0)
    d.send(ev.BenchFinished(levels=final, accept_length=2.5))
    assert d.state.phase is Phase.RECORDING
    assert d.state.trial.levels == final
    assert [p.result for p in d.state.bench] == list(final)


def test_epochs_drop_stale_outcomes() -> None:
    d = Driver()
    d.to_phase(Phase.DEPLOYING)
    d.send(ev.Cancel())
    d.send(ev.TrialRecorded(index=0))
    assert d.state.phase is Phase.CANCELLED
    d.send(ev.DeployConfig(config=plan().base))
    epoch = d.state.epoch
    # the cancelled trial's deploy answers late: dropped (old epoch)
    stale = ev.DeployDone(artifact_hash="late", epoch=epoch - 1, at=d.now)
    state, effects = step(d.state, stale)
    assert state is d.state and effects == ()


# --------------------------------------------------------------------------------------------
# Crash in each phase
# --------------------------------------------------------------------------------------------

CRASH_EVENTS = [
    ev.FatalSeen(
        cause="kv_cache_no_memory", message="Not enough memory", fixes=(SuggestedFix("raise mem"),)
    ),
    ev.ServerExited(status=ServiceStatus(state=ServiceState.EXITED, exit_status=1)),
    ev.ServerExited(
        status=ServiceStatus(state=ServiceState.FAILED, result="oom-kill", oom_killed=True)
    ),
]


@pytest.mark.parametrize("phase", [Phase.LOADING, Phase.READY, Phase.FLUSHING, Phase.BENCHMARKING])
@pytest.mark.parametrize("crash", CRASH_EVENTS, ids=["fatal", "exit", "oom"])
def test_crash_in_each_watched_phase(phase: Phase, crash: ev.Event) -> None:
    d = Driver()
    d.to_phase(phase)
    d.send(crash)
    assert d.state.phase is Phase.CRASHED
    types = d.effect_types()
    assert fx.StopServer in types and fx.CancelTimer in types
    assert (fx.CancelBenchmark in types) == (phase is Phase.BENCHMARKING)
    trial = d.state.trial
    assert trial is not None and trial.crash is not None
    assert trial.crash.phase is phase
    assert trial.crash.detected_at == d.now
    assert d.state.deployed is not None and not d.state.deployed.serving
    # the server is down: record, then wait for the user (pause policy)
    d.send(ev.ServerStopped(status=ServiceStatus(state=ServiceState.EXITED, exit_status=1)))
    assert d.state.phase is Phase.RECORDING
    record = d.find(fx.RecordTrial).record  # type: ignore[attr-defined]
    assert record.status is TrialStatus.CRASHED
    assert record.crash.exit_status == 1
    d.send(ev.TrialRecorded(index=record.index))
    assert d.state.phase is Phase.AWAITING_DECISION
    assert d.state.pending is not None and d.state.pending.crash == record.crash
    assert fx.StopWatch in d.effect_types()


def test_crash_keeps_capacity_load_stage_and_fixes() -> None:
    d = Driver()
    d.to_phase(Phase.LOADING)
    d.send(ev.LoadStageSeen(stage=LoadStage.CUDA_GRAPH))
    d.send(ev.CapacitySeen(max_total_num_tokens=99))
    d.send(ev.LogLines(lines=("a", "b")))
    d.send(
        ev.FatalSeen(
            cause="cuda_graph_capture_failed",
            message="Capture cuda graph failed",
            fixes=(SuggestedFix("lower --cuda-graph-max-bs"),),
        )
    )
    crash = d.state.trial.crash  # type: ignore[union-attr]
    assert crash is not None
    assert crash.load_stage is LoadStage.CUDA_GRAPH and crash.capacity == 99
    assert crash.fixes == ("lower --cuda-graph-max-bs",)
    assert crash.excerpt == ("a", "b")  # the log tail when the parser gave none


def test_exit_seen_during_crash_fills_exit_status() -> None:
    d = Driver()
    d.to_phase(Phase.LOADING)
    d.send(ev.FatalSeen(cause="x", message="boom"))
    d.send(
        ev.ServerExited(status=ServiceStatus(state=ServiceState.EXITED, exit_status=3, signal=None))
    )
    assert d.state.phase is Phase.CRASHED
    d.send(ev.OperationFailed(operation="stop", message="already gone"))
    record = d.find(fx.RecordTrial).record  # type: ignore[attr-defined]
    assert record.crash.exit_status == 3
    assert "stop: already gone" in record.errors


def test_load_timeout() -> None:
    d = Driver()
    d.to_phase(Phase.LOADING)
    assert d.find(fx.StartTimer).seconds == 120  # type: ignore[attr-defined]
    d.send(ev.TimerFired(key=fx.LOAD_TIMER))
    assert d.state.phase is Phase.CRASHED
    assert d.state.trial.status is TrialStatus.LOAD_TIMEOUT  # type: ignore[union-attr]
    assert d.state.trial.crash.cause == "load_timeout"  # type: ignore[union-attr]


def test_auto_policy_continues_after_a_crash() -> None:
    d = Driver()
    d.start(plan(on_crash=CrashPolicy.AUTO))
    d.to_phase(Phase.LOADING)
    d.send(ev.FatalSeen(cause="x", message="boom"))
    d.send(ev.ServerStopped())
    d.send(ev.TrialRecorded(index=0))
    # steps=1 crashed: nothing smaller loads, so the boundary walk is over
    assert d.state.phase is Phase.DONE
    assert d.state.trials[0].status is TrialStatus.CRASHED


@pytest.mark.parametrize(
    ("phase", "event", "status"),
    [
        (
            Phase.VALIDATING,
            ev.ConfigInvalid(errors=("speculative_num_steps: must be >= 1",)),
            TrialStatus.INVALID,
        ),
        (
            Phase.VALIDATING,
            ev.OperationFailed(operation="validate", message="x"),
            TrialStatus.FAILED,
        ),
        (
            Phase.DEPLOYING,
            ev.OperationFailed(operation="deploy", message="permission denied"),
            TrialStatus.FAILED,
        ),
        (
            Phase.RESTARTING,
            ev.OperationFailed(operation="restart", message="unit not found"),
            TrialStatus.FAILED,
        ),
        (
            Phase.LOADING,
            ev.OperationFailed(operation="watch", message="connection lost"),
            TrialStatus.FAILED,
        ),
        (
            Phase.BENCHMARKING,
            ev.OperationFailed(operation="benchmark", message="boom"),
            TrialStatus.FAILED,
        ),
        (
            Phase.BENCHMARKING,
            ev.BenchFinished(levels=(), error="all requests failed"),
            TrialStatus.FAILED,
        ),
    ],
)
def test_failures_are_recorded_and_pause(
    phase: Phase, event: ev.Event, status: TrialStatus
) -> None:
    d = Driver()
    d.to_phase(phase)
    d.send(event)
    assert d.state.phase is Phase.RECORDING
    record = d.find(fx.RecordTrial).record  # type: ignore[attr-defined]
    assert record.status is status and record.errors
    d.send(ev.TrialRecorded(index=0))
    assert d.state.phase is Phase.AWAITING_DECISION


def test_predicted_infeasible_is_skipped_when_the_plan_says_so() -> None:
    d = Driver()
    d.start(plan(skip_infeasible=True, min_kv_tokens=1000))
    caps = {1: 300_000, 2: 200_000, 3: 100_000}
    for steps in (1, 2, 3):
        assert d.state.trial.config.speculative_num_steps == steps  # type: ignore[union-attr]
        d.finish_trial(capacity=caps[steps])
    # steps=10 (11 draft tokens) extrapolates to -600,000 tokens
    d.validated()
    assert d.state.phase is Phase.RECORDING
    record = d.find(fx.RecordTrial).record  # type: ignore[attr-defined]
    assert record.status is TrialStatus.INFEASIBLE
    assert record.predicted is not None and not record.predicted.feasible
    assert "not expected to load" in record.note
    # the forecast recorded beside it: the capacity line's, with its stated band
    assert record.forecast is not None and record.forecast.loads is False
    assert record.forecast.capacity == -600_000 and record.forecast.capacity_band == 0.05
    assert "the capacity line over earlier trials" in record.forecast.source


def test_a_model_s_own_limits_predict_no_load_before_deploy() -> None:
    from specconsole.core.measure.forecast import ModelFacts
    from specconsole.core.plans.parse import loads_plan

    p = loads_plan(
        """
[host]
transport = "local"
[service]
kind = "process"
[server]
engine = "llamacpp"
model_path = "/m/target.gguf"
speculative_draft_model_path = "/m/draft.gguf"
spec_type = "draft-simple"
metrics = true
[sweep]
skip_infeasible = true
[sweep.axes]
ctx_size = [2048, 20000000]
"""
    )
    facts = tuple(
        ModelFacts(path, 8192, 23_040, 98_000_000, 22_000_000_000, "30 x 3 x 64")
        for path in ("/m/target.gguf", "/m/draft.gguf")
    )
    d = Driver()
    d.start(p)
    d.send(ev.ConfigValidated(config=d.find_config(), model_facts=facts))
    assert d.state.phase is Phase.DEPLOYING  # 2,048 tokens: 0.1 GB of KV, it fits
    assert d.state.trial.forecast.loads is True and d.state.trial.forecast.capacity == 2048  # type: ignore[union-attr]
    d.finish_trial(capacity=2048)
    d.send(ev.ConfigValidated(config=d.find_config(), model_facts=facts))
    record = d.find(fx.RecordTrial).record  # type: ignore[attr-defined]
    assert record.status is TrialStatus.INFEASIBLE  # skipped: never deployed
    assert "; predicted not to load: a 20,000,000-token context takes 921.6 GB" in record.note


def test_predicted_infeasible_only_warns_by_default() -> None:
    d = Driver()
    d.start(plan(min_kv_tokens=1000))
    for cap in (300_000, 200_000, 100_000):
        d.finish_trial(capacity=cap)
    d.validated()
    assert d.state.phase is Phase.DEPLOYING
    assert d.state.notice is not None and d.state.notice.level == "warning"
    assert d.state.trial.predicted.predicted_tokens == -600_000  # type: ignore[union-attr]


# --------------------------------------------------------------------------------------------
# Cancel in each phase
# --------------------------------------------------------------------------------------------

CANCEL_EXTRA = {
    Phase.LOADING: fx.CancelTimer,
    Phase.BENCHMARKING: fx.CancelBenchmark,
}


@pytest.mark.parametrize("phase", PIPELINE[:-1])
def test_cancel_in_each_busy_phase(phase: Phase) -> None:
    d = Driver()
    d.to_phase(phase)
    d.send(ev.Cancel())
    types = d.effect_types()
    assert fx.AbortOperations in types and types[-1] is fx.RecordTrial
    if phase in CANCEL_EXTRA:
        assert CANCEL_EXTRA[phase] in types
    assert fx.StopServer not in types  # the server is left as it is
    record = d.find(fx.RecordTrial).record  # type: ignore[attr-defined]
    assert record.status is TrialStatus.CANCELLED
    d.send(ev.TrialRecorded(index=0))
    assert d.state.phase is Phase.CANCELLED
    assert d.state.sweep_active
    # a cancelled trial is tried again when the sweep resumes
    d.send(ev.Resume(choice=ResumeChoice.RESUME_NEXT))
    assert d.state.trial.config.speculative_num_steps == 1  # type: ignore[union-attr]


@pytest.mark.parametrize("phase", [Phase.RECORDING, Phase.CRASHED])
def test_cancel_while_recording_stops_after_the_record(phase: Phase) -> None:
    d = Driver()
    d.to_phase(Phase.LOADING)
    if phase is Phase.CRASHED:
        d.send(ev.FatalSeen(cause="x", message="boom"))
    else:
        d.to_phase(Phase.RECORDING)
    d.send(ev.Cancel())
    assert d.state.phase is phase and d.state.pause_requested
    if phase is Phase.CRASHED:
        d.send(ev.ServerStopped())
    d.send(ev.TrialRecorded(index=0))
    assert d.state.phase in (Phase.PAUSED, Phase.AWAITING_DECISION)


def test_cancel_while_awaiting_abandons_the_sweep() -> None:
    d = _crashed_and_waiting()
    d.send(ev.Cancel())
    assert d.state.phase is Phase.CANCELLED and not d.state.sweep_active
    assert d.state.pending is None


@pytest.mark.parametrize("phase", [Phase.IDLE, Phase.DONE])
def test_cancel_with_nothing_running_is_illegal(phase: Phase) -> None:
    d = Driver()
    if phase is Phase.DONE:
        d.start(plan(axes=(("speculative_num_steps", (1,)),)))
        d.finish_trial()
    assert d.state.phase is phase
    with pytest.raises(IllegalTransition, match="Cancel"):
        d.send(ev.Cancel())


# --------------------------------------------------------------------------------------------
# Resume choices
# --------------------------------------------------------------------------------------------


def _crashed_and_waiting(after_ok: int = 1) -> Driver:
    d = Driver()
    d.start()
    for _ in range(after_ok):
        d.finish_trial()
    d.to_phase(Phase.LOADING)
    d.send(ev.FatalSeen(cause="kv_cache_no_memory", message="Not enough memory"))
    d.send(ev.ServerStopped())
    d.send(ev.TrialRecorded(index=after_ok))
    assert d.state.phase is Phase.AWAITING_DECISION
    return d


def test_pending_decision_lists_choices() -> None:
    d = _crashed_and_waiting()
    pending = d.state.pending
    assert pending is not None
    # nothing left to bisect (1 loads, 2 fails), so there is nothing to skip
    assert pending.choices == (
        ResumeChoice.RESUME_NEXT,
        ResumeChoice.RETRY_SAME,
        ResumeChoice.EDIT_THEN_DEPLOY,
        ResumeChoice.ROLLBACK,
    )
    assert (
        pending.rollback_config is not None and pending.rollback_config.speculative_num_steps == 1
    )
    assert pending.next_config is None  # 1 loads, 2 fails: boundary found, nothing to bisect


def test_resume_next_continues_the_strategy() -> None:
    d = _crashed_and_waiting(after_ok=3)  # 1,2,3 ok; 10 crashes
    d.send(ev.Resume(choice=ResumeChoice.RESUME_NEXT))
    assert d.state.phase is Phase.VALIDATING
    assert d.state.trial.config.speculative_num_steps == 6  # type: ignore[union-attr]
    assert "bisect" in d.state.trial.note  # type: ignore[union-attr]


def test_resume_next_when_the_plan_is_exhausted_finishes() -> None:
    d = _crashed_and_waiting()
    d.send(ev.Resume())
    assert d.state.phase is Phase.DONE


def test_retry_same() -> None:
    d = _crashed_and_waiting()
    d.send(ev.Resume(choice=ResumeChoice.RETRY_SAME))
    trial = d.state.trial
    assert trial is not None and trial.kind is TrialKind.RETRY
    assert trial.config.speculative_num_steps == 2
    d.finish_trial()
    # the retry worked: the sweep continues (and the boundary walk goes on to 3)
    assert d.state.trial.config.speculative_num_steps == 3  # type: ignore[union-attr]


def test_edit_then_deploy() -> None:
    d = _crashed_and_waiting()
    edited = replace(plan().base, speculative_num_steps=2, mem_fraction_static=0.8)
    d.send(ev.Resume(choice=ResumeChoice.EDIT_THEN_DEPLOY, config=edited))
    assert d.state.trial.config == edited  # type: ignore[union-attr]
    assert d.state.trial.kind is TrialKind.MANUAL  # type: ignore[union-attr]
    with pytest.raises(IllegalTransition, match="needs a configuration"):
        step(_crashed_and_waiting().state, ev.Resume(choice=ResumeChoice.EDIT_THEN_DEPLOY))


def test_deploy_config_while_awaiting_is_edit_then_deploy() -> None:
    d = _crashed_and_waiting()
    d.send(ev.DeployConfig(config=replace(plan().base, speculative_num_steps=1)))
    assert d.state.phase is Phase.VALIDATING and d.state.pending is None
    assert not d.state.pause_requested


def test_skip_records_nothing_and_moves_past_the_next() -> None:
    d = _crashed_and_waiting(after_ok=3)
    d.send(ev.Resume(choice=ResumeChoice.SKIP))
    assert [c.speculative_num_steps for c in d.state.skipped_configs] == [6]
    assert d.state.trial.config.speculative_num_steps == 5  # type: ignore[union-attr]


def test_rollback_redeploys_the_last_good_config_without_benchmark() -> None:
    d = _crashed_and_waiting()
    d.send(ev.Resume(choice=ResumeChoice.ROLLBACK))
    trial = d.state.trial
    assert trial is not None and trial.kind is TrialKind.ROLLBACK
    assert trial.config.speculative_num_steps == 1
    d.to_phase(Phase.READY)
    d.send(ev.ServerInfoFetched())
    assert d.state.phase is Phase.RECORDING  # no flush, no benchmark
    d.send(ev.TrialRecorded(index=trial.index))
    assert d.state.phase is Phase.PAUSED and d.state.sweep_active
    assert d.state.deployed is not None and d.state.deployed.serving


def test_choices_not_available_are_illegal() -> None:
    d = Driver()
    d.start()
    d.to_phase(Phase.LOADING)
    d.send(ev.FatalSeen(cause="x", message="boom"))
    d.send(ev.ServerStopped())
    d.send(ev.TrialRecorded(index=0))
    assert ResumeChoice.ROLLBACK not in d.state.pending.choices  # type: ignore[union-attr]
    with pytest.raises(IllegalTransition, match="rollback is not available"):
        d.send(ev.Resume(choice=ResumeChoice.ROLLBACK))


def test_pause_then_resume() -> None:
    d = Driver()
    d.to_phase(Phase.LOADING)
    d.send(ev.Pause())
    assert d.state.pause_requested
    d.finish_trial()
    assert d.state.phase is Phase.PAUSED and d.state.sweep_active
    d.send(ev.Resume())
    assert d.state.phase is Phase.VALIDATING
    assert d.state.trial.config.speculative_num_steps == 2  # type: ignore[union-attr]


def test_pause_twice_withdraws() -> None:
    d = Driver()
    d.to_phase(Phase.LOADING)
    d.send(ev.Pause())
    d.send(ev.Pause())
    assert not d.state.pause_requested


def test_manual_deploy_while_paused_stays_paused() -> None:
    d = Driver()
    d.to_phase(Phase.LOADING)
    d.send(ev.Pause())
    d.finish_trial()
    d.send(ev.DeployConfig(config=replace(plan().base, speculative_num_steps=4)))
    d.finish_trial()
    assert d.state.phase is Phase.PAUSED


def test_benchmark_only() -> None:
    d = Driver()
    d.to_phase(Phase.LOADING)
    d.send(ev.Pause())
    d.finish_trial()
    d.send(ev.BenchmarkOnly())
    assert d.state.phase is Phase.READY
    assert d.state.trial.kind is TrialKind.BENCH_ONLY  # type: ignore[union-attr]
    watch = d.find(fx.StartWatch)
    assert watch.continue_previous  # type: ignore[attr-defined]
    assert d.effect_types() == [fx.Notify, fx.StartWatch, fx.StartTelemetry, fx.FetchServerInfo]
    assert [p.phase for p in d.state.trial.phases] == [Phase.READY]  # type: ignore[union-attr]
    d.finish_trial()
    assert d.state.phase is Phase.PAUSED
    assert d.state.trials[-1].kind is TrialKind.BENCH_ONLY


def test_benchmark_only_needs_a_serving_server() -> None:
    with pytest.raises(IllegalTransition, match="no server is serving"):
        step(ControllerState(), ev.BenchmarkOnly(at=1.0))


def test_reattach_on_resume() -> None:
    d = Driver()
    d.send(ev.StartSweep(plan=plan(), resume=True))
    d.validated()
    assert d.effect_types() == [fx.CheckReattach]
    d.send(ev.ReattachChecked(attached=True, artifact_hash="same"))
    assert d.state.phase is Phase.READY
    assert d.state.trial.kind is TrialKind.REATTACH  # type: ignore[union-attr]
    assert fx.StartWatch in d.effect_types() and fx.FetchServerInfo in d.effect_types()
    # replayed load lines after the reattach keep the capacity
    d.send(ev.CapacitySeen(max_total_num_tokens=777))
    d.send(ev.ServerReady())
    assert d.state.trial.capacity == 777  # type: ignore[union-attr]
    d.finish_trial()
    # the next trial deploys normally
    d.validated()
    assert d.effect_types() == [fx.Deploy]


def test_reattach_refused_deploys() -> None:
    d = Driver()
    d.send(ev.StartSweep(plan=plan(), resume=True))
    d.validated()
    d.send(ev.ReattachChecked(attached=False, detail="hash differs"))
    assert d.state.phase is Phase.DEPLOYING and d.effect_types() == [fx.Deploy]


def test_budgets_end_the_sweep() -> None:
    d = Driver()
    d.start(plan(max_trials=2))
    d.finish_trial()
    d.finish_trial()
    assert d.state.phase is Phase.DONE
    assert d.state.finished_reason == "max trials reached (2)"
    d = Driver()
    d.start(plan(max_wall_s=3.0))
    d.finish_trial()
    assert d.state.phase is Phase.DONE and "wall time" in d.state.finished_reason


def test_quit_anywhere() -> None:
    d = Driver()
    d.to_phase(Phase.BENCHMARKING)
    d.send(ev.Quit(stop_server=True))
    assert d.state.quitting
    types = d.effect_types()
    assert fx.CancelBenchmark in types and types[-1] is fx.Shutdown
    assert d.effects[-1].stop_server  # type: ignore[attr-defined]


def test_idle_observation_of_the_server() -> None:
    d = Driver()
    d.to_phase(Phase.LOADING)
    d.send(ev.Pause())
    d.finish_trial()
    assert d.state.deployed is not None and d.state.deployed.serving
    d.send(ev.ServerExited(status=ServiceStatus(state=ServiceState.EXITED, exit_status=1)))
    assert d.state.phase is Phase.PAUSED and not d.state.deployed.serving
    assert d.effect_types() == [fx.Notify]


def test_log_tail_is_bounded_and_connection_tracked() -> None:
    d = Driver()
    d.send(ev.LogLines(lines=tuple(str(i) for i in range(100))))
    assert len(d.state.log_tail) == 60 and d.state.log_tail[-1] == "99"
    from specconsole.core.machine.state import ConnectionState

    d.send(ev.ConnectionChanged(state=ConnectionState.LOST, detail="timeout", epoch=99))
    assert d.state.connection is ConnectionState.LOST


# --------------------------------------------------------------------------------------------
# Illegal transitions
# --------------------------------------------------------------------------------------------

ILLEGAL = [
    (Phase.IDLE, ev.Pause()),
    (Phase.IDLE, ev.Resume()),
    (Phase.IDLE, ev.StartSweep()),  # no plan loaded
    (Phase.LOADING, ev.StartSweep()),
    (Phase.LOADING, ev.DeployConfig(config=plan().base)),
    (Phase.LOADING, ev.BenchmarkOnly()),
    (Phase.LOADING, ev.Resume()),
    (Phase.BENCHMARKING, ev.DeployDone(artifact_hash="x")),
    (Phase.DEPLOYING, ev.ServerReady()),
    (Phase.VALIDATING, ev.BenchFinished(levels=())),
    (Phase.RESTARTING, ev.TrialRecorded(index=0)),
    (Phase.READY, ev.Restarted()),
]


@pytest.mark.parametrize(("phase", "event"), ILLEGAL)
def test_illegal_transitions_raise(phase: Phase, event: ev.Event) -> None:
    d = Driver()
    if phase is not Phase.IDLE:
        d.to_phase(phase)
    with pytest.raises(IllegalTransition, match=type(event).__name__):
        d.send(event)


def _subclasses(base: type) -> set[type]:
    """Every class derived from ``base``, however deep (a new event class cannot escape)."""
    out: set[type] = set()
    for sub in base.__subclasses__():
        if getattr(ev, sub.__name__, None) is sub:  # not the pre-``slots=True`` copy
            out |= {sub} | _subclasses(sub)
    return out


def test_every_intent_type_is_legal_somewhere_and_the_table_is_consistent() -> None:
    intents, outcomes = _subclasses(ev.Intent), _subclasses(ev.Outcome)
    assert _subclasses(ev.Event) == intents | outcomes | {ev.Intent, ev.Outcome}
    assert set(ev.INTENT_TYPES) == intents and set(ev.OUTCOME_TYPES) == outcomes
    legal_somewhere = {t for (_p, t) in TRANSITIONS} | set(ANYWHERE)
    for etype in intents | outcomes:
        assert etype in legal_somewhere, etype
    assert set(SAMPLES) | set(ANYWHERE) >= intents | outcomes  # every row can be exercised
    assert ev.Quit in legal_intents(ControllerState())
    assert ev.StartSweep in legal_intents(ControllerState())
    assert ev.Cancel not in legal_intents(ControllerState())


@pytest.mark.parametrize("phase", list(Phase), ids=lambda p: p.value)
def test_the_key_hints_and_the_table_accept_the_same_intents(phase: Phase) -> None:
    """``intents.ACCEPTED``/``EVERYWHERE`` (what the console's keys read without the table)
    and the table's rows (what ``step`` does) name the same intents in every phase."""
    rows = {t for (p, t) in TRANSITIONS if p is phase and issubclass(t, ev.Intent)}
    rows |= {t for t in ANYWHERE if issubclass(t, ev.Intent)}
    declared = {t for t, phases in ACCEPTED.items() if phase in phases} | set(EVERYWHERE)
    assert rows == declared
    deferred = set(DEFERRABLE) if phase in DEFERRING_PHASES else set()
    assert legal_intents(ControllerState(phase=phase)) == declared | deferred


def test_resumed_session_knows_its_rollback_target() -> None:
    d = Driver()
    d.start()
    d.finish_trial()
    resumed = Driver(ControllerState(trials=d.state.trials))
    resumed.send(ev.StartSweep(plan=plan(), resume=True))
    assert resumed.state.last_good == d.state.trials[0].config
    assert resumed.state.trial.index == 1  # type: ignore[union-attr]


# --------------------------------------------------------------------------------------------
# Every row of the transition table is reachable and handled
# --------------------------------------------------------------------------------------------

SAMPLES: dict[type[ev.Event], ev.Event] = {
    ev.StartSweep: ev.StartSweep(plan=plan()),
    ev.Pause: ev.Pause(),
    ev.FocusBox: ev.FocusBox(box="b"),
    ev.Cancel: ev.Cancel(),
    ev.DeployConfig: ev.DeployConfig(config=plan().base),
    ev.BenchmarkOnly: ev.BenchmarkOnly(),
    ev.Resume: ev.Resume(),
    ev.ConfigValidated: ev.ConfigValidated(config=plan().at(plan().base, speculative_num_steps=1)),
    ev.ConfigInvalid: ev.ConfigInvalid(errors=("x",)),
    ev.ReattachChecked: ev.ReattachChecked(attached=True, artifact_hash="h"),
    ev.DeployPreviewed: ev.DeployPreviewed(diff="-a\n+b\n"),
    ev.DeployDone: ev.DeployDone(artifact_hash="h"),
    ev.Restarted: ev.Restarted(),
    ev.OperationFailed: ev.OperationFailed(operation="op", message="m"),
    ev.LoadStageSeen: ev.LoadStageSeen(stage=LoadStage.CUDA_GRAPH),
    ev.CapacitySeen: ev.CapacitySeen(max_total_num_tokens=5),
    ev.ServerReady: ev.ServerReady(),
    ev.FatalSeen: ev.FatalSeen(cause="c", message="m"),
    ev.SpeculationOffSeen: ev.SpeculationOffSeen(reason="the draft's vocabulary differs"),
    ev.ServerExited: ev.ServerExited(status=ServiceStatus(state=ServiceState.EXITED)),
    ev.TimerFired: ev.TimerFired(key=fx.LOAD_TIMER),
    ev.ServerInfoFetched: ev.ServerInfoFetched(),
    ev.CacheFlushed: ev.CacheFlushed(),
    ev.BenchProgressed: ev.BenchProgressed(
        progress=BenchProgress(
            level_index=0,
            concurrency=1,
            completed=1,
            failed=0,
            total=4,
            running=1,
            output_tokens=16,
            current_tok_s=10.0,
            elapsed_s=0.1,
        )
    ),
    ev.BenchLevelFinished: ev.BenchLevelFinished(level_index=0, level=levels()[0]),
    ev.BenchFinished: ev.BenchFinished(levels=levels()),
    ev.TrialRecorded: ev.TrialRecorded(index=0),
    ev.ServerStopped: ev.ServerStopped(),
}


OBSERVERS = (_observe_down, _observe_ready, _observe_capacity, _on_crashed_exit_seen)
"""Handlers that record what the watch saw about the server; with nothing new they do nothing."""


def _reach(phase: Phase) -> Driver:
    d = Driver()
    if phase is Phase.IDLE:
        d.state = replace(d.state, plan=plan())
    elif phase in PIPELINE:
        d.to_phase(phase)
    elif phase is Phase.CRASHED:
        d.to_phase(Phase.LOADING)
        d.send(ev.FatalSeen(cause="c", message="m"))
    elif phase is Phase.AWAITING_DECISION:
        d = _crashed_and_waiting()
    elif phase is Phase.PAUSED:
        d.to_phase(Phase.LOADING)
        d.send(ev.Pause())
        d.finish_trial()
    elif phase is Phase.CANCELLED:
        d.finish_trial()
        d.to_phase(Phase.LOADING)
        d.send(ev.Cancel())
        d.send(ev.TrialRecorded(index=1))
    elif phase is Phase.DONE:
        d.start(plan(axes=(("speculative_num_steps", (1,)),)))
        d.finish_trial()
    assert d.state.phase is phase
    return d


@pytest.mark.parametrize(
    ("phase", "etype"),
    sorted(TRANSITIONS, key=lambda k: (k[0].value, k[1].__name__)),
    ids=lambda v: getattr(v, "value", None) or getattr(v, "__name__", str(v)),
)
def test_every_table_row_is_handled(phase: Phase, etype: type[ev.Event]) -> None:
    d = _reach(phase)
    before = d.state
    handler = TRANSITIONS[(phase, etype)]
    try:
        effects = d.send(SAMPLES[etype])
    except IllegalTransition as exc:
        # only a precondition may refuse a row of the table, and it must say why
        assert exc.reason, exc
        assert etype in (ev.BenchmarkOnly, ev.Resume, ev.Pause, ev.StartSweep), exc
        return
    if handler is _ignore:  # a benign race: nothing at all changes
        assert d.state == before and effects == ()
    elif handler in OBSERVERS:  # learns about the server (maybe nothing new), never acts
        assert (d.state.phase is phase and d.state.trial == before.trial) or handler in (
            _observe_capacity,
            _on_crashed_exit_seen,
        )
        assert {type(e) for e in effects} <= {fx.Notify}, effects
    else:  # a handled row changes what is known or asks for work, for the current epoch
        assert d.state != before or effects, f"{handler.__name__} did nothing"
        assert all(e.epoch in (before.epoch, d.state.epoch) for e in effects), effects


def test_the_engine_release_is_kept_in_every_phase_and_epoch() -> None:
    d = Driver()
    d.start()
    assert d.state.phase is not Phase.IDLE
    stale = ev.EngineVersionKnown(version="0.5.23", source="detected", epoch=d.state.epoch - 1)
    state, effects = step(d.state, stale)
    assert (state.engine_version, state.engine_version_source) == ("0.5.23", "detected")
    assert effects == () and state.phase is d.state.phase
    state, _ = step(ControllerState(), ev.EngineVersionKnown(version=None, source="unknown"))
    assert state.engine_version is None and state.engine_version_source == "unknown"
