"""``objective = "max_rate_under_slo"``: the plan's rate search, the bisection's rule (bounded
rounds, relative tolerance), every probe recorded, and the machine running probe after
probe until the search is done (pruned at its first probe when the best holds more)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import LevelSummary, Phase, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.plan import PlanError, StrategyKind
from specconsole.core.plans.ratespec import RateSearchSpec
from specconsole.core.search import ratesearch
from tests.controller.helpers import PLAN_TEXT, Driver

GOAL = """
objective = "max_rate_under_slo"
constraints = ["ttft_p99_ms_at_4 <= 1000"]
"""
TABLE = """
[sweep.rate_search]
min = 0.5
max = 32.0
rounds = 12
tolerance = 0.05
"""


def rate_plan(goal: str = GOAL, table: str = TABLE, **more: object):  # type: ignore[no-untyped-def]
    text = PLAN_TEXT.replace('strategy = "boundary"', 'strategy = "grid"\n' + goal) + table
    return replace(loads_plan(text), **more)  # type: ignore[arg-type]


def _probe_level(rate: float, boundary: float) -> LevelSummary:
    """A server whose p99 TTFT crosses 1000 ms at ``boundary`` req/s."""
    ttft = 1000.0 * rate / boundary
    return LevelSummary(
        concurrency=4, output_tok_s=rate * 16, per_request_tok_s=50.0, completed=8, ttft_p99_ms=ttft
    )


def test_the_plan_reads_the_rate_search_and_refuses_mistakes() -> None:
    p = rate_plan()
    assert p.rate_search == RateSearchSpec(0.5, 32.0, 12, 0.05, None)
    assert p.rate_search.cap(p.bench.ladder) == 4
    with pytest.raises(PlanError, match="needs the SLOs"):
        rate_plan('objective = "max_rate_under_slo"\n')
    with pytest.raises(PlanError, match="names concurrency 1"):
        rate_plan('objective = "max_rate_under_slo"\nconstraints = ["ttft_p99_ms_at_1 <= 9"]\n')
    with pytest.raises(PlanError, match="only used with"):
        rate_plan("")
    with pytest.raises(PlanError, match="must be below max"):
        rate_plan(table=TABLE.replace("min = 0.5", "min = 40"))
    assert rate_plan(table="").rate_search == RateSearchSpec()  # the defaults


@pytest.mark.parametrize("boundary", [0.7, 1.0, 3.3, 7.9, 20.0, 31.0])
def test_the_bisection_brackets_the_boundary_within_the_tolerance(boundary: float) -> None:
    spec = RateSearchSpec(0.5, 32.0, 12, 0.05)
    goal = rate_plan().goal
    probes: list = []
    while (rate := ratesearch.next_rate(spec, probes)) is not None:
        probes.append(ratesearch.probe(goal, rate, _probe_level(rate, boundary)))
    assert len(probes) <= spec.rounds
    lo, hi = ratesearch.bracket(probes)
    assert lo is not None and hi is not None
    assert lo <= boundary < hi and hi / lo <= 1.05
    assert replace(probes[0].level, concurrency=4) == probes[0].level


def test_bounds_rounds_and_failed_requests() -> None:
    spec = RateSearchSpec(1.0, 8.0, 3, 0.01)
    goal = rate_plan().goal
    everything_holds = [ratesearch.probe(goal, 8.0, _probe_level(8.0, 100.0))]
    assert ratesearch.next_rate(spec, everything_holds) is None  # at least the max
    nothing = [ratesearch.probe(goal, 8.0, _probe_level(8.0, 0.1))]
    assert ratesearch.next_rate(spec, nothing) == 1.0
    nothing.append(ratesearch.probe(goal, 1.0, _probe_level(1.0, 0.1)))
    assert ratesearch.next_rate(spec, nothing) is None  # even the min fails
    assert "no rate holds" in ratesearch.summary(spec, nothing)
    three = [*nothing, ratesearch.probe(goal, 2.0, _probe_level(2.0, 0.1))]
    assert ratesearch.next_rate(spec, three) is None  # rounds spent
    failed = replace(_probe_level(1.0, 100.0), failed=2)
    met, why = ratesearch.holds(goal, failed)
    assert not met and "2 of 10 requests failed" in why


def _bench(d: Driver) -> fx.RunBenchmark:
    run = d.find(fx.RunBenchmark)
    assert isinstance(run, fx.RunBenchmark)
    return run


def test_the_machine_probes_until_the_search_is_done_and_records_every_probe() -> None:
    d = Driver()
    d.start(rate_plan())
    d.to_phase(Phase.BENCHMARKING)
    rates = []
    for _ in range(20):
        run = _bench(d)
        rate = run.spec.request_rate
        assert rate is not None and run.spec.ladder == (4,) and run.spec.window == "completed"
        assert d.state.bench[0].request_rate == rate
        rates.append(rate)
        level = _probe_level(rate, 5.0)
        d.send(ev.BenchLevelFinished(level_index=0, level=level))
        d.send(ev.BenchFinished(levels=(level,)))
        if d.state.phase is not Phase.BENCHMARKING:
            break
    record = d.find(fx.RecordTrial).record  # type: ignore[attr-defined]
    assert record.status is TrialStatus.OK
    assert [p.rate for p in record.rate_probes] == rates
    assert record.slo_rate is not None and record.slo_rate <= 5.0 < record.slo_rate * 1.05
    assert record.levels[0].ttft_p99_ms <= 1000.0  # the highest rate that held
    assert d.state.plan.goal.feasible(record)  # type: ignore[union-attr]
    assert "req/s holds the SLOs" in record.note


def test_a_probe_that_measured_nothing_fails_the_trial() -> None:
    d = Driver()
    d.start(rate_plan())
    d.to_phase(Phase.BENCHMARKING)
    d.send(ev.BenchFinished(levels=(), error="connect refused"))
    assert d.find(fx.RecordTrial).record.status is TrialStatus.FAILED  # type: ignore[attr-defined]


def test_under_pruning_the_first_probe_sits_under_the_best_rate() -> None:
    d = Driver()
    d.start(rate_plan(prune=True, strategy=StrategyKind.GRID))
    d.to_phase(Phase.BENCHMARKING)
    for _ in range(20):  # trial 1: the best, 5 req/s
        rate = _bench(d).spec.request_rate
        assert rate is not None
        d.send(ev.BenchFinished(levels=(_probe_level(rate, 5.0),)))
        if d.state.phase is not Phase.BENCHMARKING:
            break
    d.send(ev.TrialRecorded(index=0))
    best = d.state.trials[0].slo_rate
    d.to_phase(Phase.BENCHMARKING)
    first = _bench(d).spec.request_rate
    assert first == pytest.approx(best * 0.95)  # type: ignore[operator]
    d.send(ev.BenchFinished(levels=(_probe_level(first, 2.0),)))  # type: ignore[arg-type]
    record = d.find(fx.RecordTrial).record  # type: ignore[attr-defined]
    assert record.status is TrialStatus.PRUNED and len(record.rate_probes) == 1
    assert record.prune.metric == "max_rate_under_slo"
    assert "the SLOs fail at" in record.note
