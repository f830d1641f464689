"""Incumbent pruning (``core.search.prune`` and the machine's ``measuring``): the deciding
level first, a loser stopped there and recorded as ``pruned`` with the figure that decided
it — never a crash or a failure, never the best, never proposed again."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from specconsole.core.config.model import ServerConfig
from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import LevelSummary, Phase, TrialRecord, TrialStatus
from specconsole.core.measure.stats import t_975
from specconsole.core.plans.goalparse import parse_goal
from specconsole.core.plans.plan import StrategyKind
from specconsole.core.plans.verdict import assess
from specconsole.core.search import prune
from specconsole.core.search.strategy import next_trial
from tests.controller.helpers import Driver, plan


def _plan(objective: object = None, **more: object):  # type: ignore[no-untyped-def]
    goal = parse_goal({"aggregate_at": 4} if objective is None else objective)
    return plan(strategy=StrategyKind.GRID, prune=True, goal=goal, **more)


def _level(c: int, agg: float, per: float | None = None, **more: object) -> LevelSummary:
    return LevelSummary(
        concurrency=c,
        output_tok_s=agg,
        per_request_tok_s=agg / c if per is None else per,
        completed=4,
        **more,  # type: ignore[arg-type]
    )


def _ok(index: int, steps: int, c1: float, c4: float, **more: object) -> TrialRecord:
    cfg = ServerConfig(model_path="m", speculative_num_steps=steps)
    return TrialRecord(
        index=index,
        config=cfg,
        status=TrialStatus.OK,
        levels=(_level(1, c1, c1), _level(4, c4, **more)),
    )


def test_pruning_is_on_for_the_searches_and_off_for_the_walks() -> None:
    assert plan(strategy=StrategyKind.OPTIMIZE).pruning
    assert plan(strategy=StrategyKind.STAGED).pruning
    assert not plan(strategy=StrategyKind.GRID).pruning
    assert not plan(strategy=StrategyKind.BOUNDARY).pruning
    assert plan(strategy=StrategyKind.GRID, prune=True).pruning
    assert not plan(strategy=StrategyKind.OPTIMIZE, prune=False).pruning


@pytest.mark.parametrize(
    ("objective", "lead"),
    [
        ({"aggregate_at": 4}, 4),
        ("single_request", 1),
        ("ttft_p99_ms_at_4", 4),
        ("peak_aggregate", 4),  # where the incumbent peaked
        ("accept_length", None),
        ({"weighted": {"single_request": 1.0, "peak_aggregate": 0.1}}, None),
    ],
)
def test_the_lead_level_is_where_the_objective_is_decided(objective: object, lead: int) -> None:
    trials = [_ok(0, 1, 100.0, 1000.0, ttft_p99_ms=50.0)]
    assert prune.lead_level(_plan(objective), trials) == lead
    assert prune.lead_level(_plan(objective), []) is None  # nothing to beat yet


def test_a_candidate_beaten_beyond_the_noise_is_pruned_with_its_figure() -> None:
    p = _plan()
    trials = [_ok(0, 1, 100.0, 1000.0)]
    info = prune.verdict(p, trials, _level(4, 900.0))
    assert info is not None
    assert (info.metric, info.value, info.incumbent, info.concurrency) == (
        "aggregate_at_4",
        900.0,
        0,
        4,
    )
    assert info.threshold == pytest.approx(950.0)  # the best less prune_margin_pct (5 %)
    assert "pruned at c=4: aggregate_at_4 900.0 < 950.0" in prune.describe(info)
    assert prune.verdict(p, trials, _level(4, 960.0)) is None  # within the noise: runs on
    assert prune.verdict(p, trials, _level(1, 1.0)) is None  # not the lead level


def test_a_latency_objective_prunes_the_slower_candidate() -> None:
    p = _plan("ttft_p99_ms_at_4")
    trials = [_ok(0, 1, 100.0, 1000.0, ttft_p99_ms=100.0)]
    info = prune.verdict(p, trials, _level(4, 1000.0, ttft_p99_ms=150.0))
    assert info is not None and info.threshold == pytest.approx(105.0)
    assert "> 105.0" in prune.describe(info)
    assert prune.verdict(p, trials, _level(4, 1000.0, ttft_p99_ms=104.0)) is None


def test_repeats_widen_the_bar_by_one_more_runs_prediction_interval() -> None:
    p = _plan()
    ci = (960.0, 1040.0)  # 3 runs, mean 1000
    trials = [_ok(0, 1, 100.0, 1000.0, repeats=3, output_tok_s_ci=ci)]
    std = (ci[1] - ci[0]) / 2.0 * math.sqrt(3) / t_975(2)
    expected = 1000.0 - 50.0 - t_975(2) * std * math.sqrt(1 + 1 / 3)
    info = prune.verdict(p, trials, _level(4, expected - 1.0))
    assert info is not None and info.threshold == pytest.approx(expected)
    assert prune.verdict(p, trials, _level(4, expected + 1.0)) is None


def _to_benchmark(d: Driver) -> fx.RunBenchmark:
    d.to_phase(Phase.BENCHMARKING)
    run = d.find(fx.RunBenchmark)
    assert isinstance(run, fx.RunBenchmark)
    return run


def test_the_machine_runs_the_lead_first_and_records_the_loser_as_pruned() -> None:
    d = Driver()
    d.start(_plan())
    first = _to_benchmark(d)
    assert first.spec.lead is None  # no incumbent yet: the ladder as planned
    d.send(ev.BenchFinished(levels=(_level(1, 100.0, 100.0), _level(4, 1000.0))))
    d.send(ev.TrialRecorded(index=0))
    second = _to_benchmark(d)
    assert second.spec.lead == 4 and second.spec.ladder == (1, 4)
    effects = d.send(ev.BenchLevelFinished(level_index=1, level=_level(4, 500.0)))
    types = [type(e) for e in effects]
    assert fx.CancelBenchmark in types and fx.RecordTrial in types
    record = d.find(fx.RecordTrial).record  # type: ignore[attr-defined]
    assert record.status is TrialStatus.PRUNED
    assert record.prune is not None and record.prune.value == 500.0
    assert record.levels == (_level(4, 500.0),)
    assert record.note.endswith("the rest of the ladder skipped")
    assert d.state.phase is Phase.RECORDING
    d.send(ev.BenchFinished(levels=()))  # the cancelled ladder's late answer: ignored
    d.send(ev.TrialRecorded(index=1))
    assert d.state.phase is Phase.VALIDATING  # pruning is not a failure: the sweep goes on
    trials = d.state.trials
    assert assess(trials, d.state.plan.goal).best is trials[0]  # type: ignore[union-attr]
    proposal = next_trial(d.state.plan, trials)  # type: ignore[arg-type]
    assert proposal is not None and proposal.config != trials[1].config


def test_a_candidate_within_the_noise_runs_its_whole_ladder() -> None:
    d = Driver()
    d.start(_plan())
    _to_benchmark(d)
    d.send(ev.BenchFinished(levels=(_level(1, 100.0, 100.0), _level(4, 1000.0))))
    d.send(ev.TrialRecorded(index=0))
    _to_benchmark(d)
    effects = d.send(ev.BenchLevelFinished(level_index=1, level=_level(4, 960.0)))
    assert effects == () and d.state.phase is Phase.BENCHMARKING
    d.send(ev.BenchFinished(levels=(_level(1, 90.0, 90.0), _level(4, 960.0))))
    assert d.find(fx.RecordTrial).record.status is TrialStatus.OK  # type: ignore[attr-defined]


def test_manual_trials_and_unpruned_plans_are_never_pruned() -> None:
    d = Driver()
    d.start(replace(_plan(), prune=False))
    _to_benchmark(d)
    d.send(ev.BenchFinished(levels=(_level(1, 100.0, 100.0), _level(4, 1000.0))))
    d.send(ev.TrialRecorded(index=0))
    run = _to_benchmark(d)
    assert run.spec.lead is None
    assert d.send(ev.BenchLevelFinished(level_index=1, level=_level(4, 1.0))) == ()


def test_optimize_sees_a_pruned_trial_as_a_low_scoring_load() -> None:
    from specconsole.core.search import optimize

    p = replace(_plan(), strategy=StrategyKind.OPTIMIZE)
    best = replace(_ok(0, 1, 100.0, 1000.0), config=p.at(p.base, speculative_num_steps=1))
    pruned = TrialRecord(
        index=1,
        config=p.at(p.base, speculative_num_steps=2),
        status=TrialStatus.PRUNED,
        levels=(_level(4, 500.0),),
    )
    obs = {o.trial.index: o for o in optimize.observations(p, [best, pruned])}
    assert obs[1].values == (500.0,) and obs[1].violation == 0.0
    assert optimize.stale_trials(p, [best, pruned]) == 1  # a load without an improvement


def test_the_margin_is_a_plan_key_that_reads_back() -> None:
    import tomli_w

    from specconsole.core.plans.parse import loads_plan, plan_document

    p = replace(_plan(), prune_margin_pct=2.0)
    again = loads_plan(tomli_w.dumps(plan_document(p)))
    assert (again.prune, again.prune_margin_pct) == (True, 2.0)
    info = prune.verdict(again, [_ok(0, 1, 100.0, 1000.0)], _level(4, 975.0))
    assert info is not None and info.threshold == pytest.approx(980.0)


def test_the_lead_level_running_first_leaves_the_others_pending() -> None:
    from specconsole.core.ports import BenchProgress

    d = Driver()
    d.start(_plan())
    _to_benchmark(d)
    d.send(ev.BenchFinished(levels=(_level(1, 100.0, 100.0), _level(4, 1000.0))))
    d.send(ev.TrialRecorded(index=0))
    _to_benchmark(d)
    assert [lv.position for lv in d.state.bench] == [1, 0]  # c=4 runs first

    def tick(index: int, c: int) -> None:
        d.send(
            ev.BenchProgressed(
                progress=BenchProgress(
                    level_index=index,
                    concurrency=c,
                    completed=1,
                    failed=0,
                    total=4,
                    running=1,
                    output_tokens=8,
                    current_tok_s=10.0,
                    elapsed_s=0.1,
                )
            )
        )

    tick(1, 4)
    assert not d.state.bench[0].done  # c=1 has not run yet
    d.send(ev.BenchLevelFinished(level_index=1, level=_level(4, 990.0)))
    tick(0, 1)
    assert d.state.bench[1].done and not d.state.bench[0].done
