"""``[bench] repeats`` while the ladder runs: each run's finished level is combined with the
runs before it (mean, sample std, 95 % CI), the next run reopens the level, and the trial's
figures are the same combination the final result records."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from specconsole.core.machine import events as ev
from specconsole.core.machine.results import combine_runs, level_summaries
from specconsole.core.machine.state import LevelSummary, Phase
from specconsole.core.measure.result import BenchResult
from specconsole.core.measure.stats import Spread, spread, t_975
from specconsole.core.ports import BenchProgress
from tests.controller.helpers import Driver
from tests.core.test_repeats_ci import _level, _result


def _summary(c: int, agg: float, per: float, *, completed: int = 4) -> LevelSummary:
    return LevelSummary(
        concurrency=c,
        output_tok_s=agg,
        per_request_tok_s=per,
        completed=completed,
        ttft_p99_ms=agg / 10,
    )


def test_combine_runs_is_mean_with_student_t_interval() -> None:
    runs = [_summary(4, 1000.0, 250.0), _summary(4, 1040.0, 262.0), _summary(4, 990.0, 255.0)]
    lv = combine_runs(runs)
    assert lv.repeats == 3
    assert lv.output_tok_s == pytest.approx(1010.0)  # (1000 + 1040 + 990) / 3
    # s = sqrt(((-10)^2 + 30^2 + (-20)^2) / 2) = sqrt(700); half = t(0.975, 2) * s / sqrt(3)
    half = 4.303 * math.sqrt(700.0) / math.sqrt(3)
    assert lv.output_tok_s_ci == pytest.approx((1010.0 - half, 1010.0 + half))
    assert lv.per_request_tok_s == pytest.approx(767.0 / 3)
    assert lv.ttft_p99_ms == pytest.approx(101.0)  # the mean of the runs' p99 TTFT
    assert lv.completed == 4  # counts are the first run's
    agg = lv.output_tok_s_spread
    assert agg is not None and agg.std == pytest.approx(math.sqrt(700.0))


def test_a_run_that_completed_nothing_leaves_the_first_runs_figures() -> None:
    first = _summary(16, 1500.0, 90.0)
    assert combine_runs([first]) is first
    assert combine_runs([first, _summary(16, 0.0, 0.0, completed=0)]) is first
    assert first.output_tok_s_spread is None and first.per_request_tok_s_spread is None


def test_the_recorded_interval_gives_back_the_sample_std() -> None:
    values = [1582.0, 1611.5, 1570.25, 1603.0]
    sp = spread(values)
    back = Spread.from_interval(sp.n, sp.mean, sp.ci_low, sp.ci_high)
    assert back.std == pytest.approx(sp.std) and back.ci_half_width == pytest.approx(
        t_975(3) * sp.std / 2.0
    )


def test_live_combination_equals_what_the_result_records() -> None:
    result: BenchResult = _result(0.010, 0.011, 0.0125)
    runs = [
        level_summaries(BenchResult(levels=(_level(s),), planned_levels=(1,)))[0]
        for s in (0.010, 0.011, 0.0125)
    ]
    assert combine_runs(runs) == level_summaries(result)[0]


def _tick(index: int, c: int, repeat: int, *, completed: int = 2) -> ev.Event:
    return ev.BenchProgressed(
        progress=BenchProgress(
            level_index=index,
            concurrency=c,
            completed=completed,
            failed=0,
            total=8,
            running=c,
            output_tokens=64,
            current_tok_s=321.0,
            elapsed_s=1.0,
            repeat=repeat,
            repeat_count=3,
        )
    )


def test_each_run_reopens_the_level_and_adds_to_its_interval() -> None:
    d = Driver()
    d.to_phase(Phase.BENCHMARKING)
    one = [_summary(1, 100.0, 100.0), _summary(4, 1000.0, 250.0)]
    two = [_summary(1, 104.0, 104.0), _summary(4, 1030.0, 258.0)]
    d.send(_tick(0, 1, 0))
    d.send(ev.BenchLevelFinished(level_index=0, level=one[0]))
    d.send(_tick(1, 4, 0))
    d.send(ev.BenchLevelFinished(level_index=1, level=one[1]))
    assert all(p.done and p.repeat_count == 3 for p in d.state.bench)
    d.send(_tick(0, 1, 1))  # run 2 reached c=1 again: the level runs, its run-1 figure kept
    level = d.state.bench[0]
    assert not level.done and level.repeat == 1 and level.result == one[0]
    assert d.state.bench[1].done  # c=4 waits for run 2 with its run-1 figure
    d.send(ev.BenchLevelFinished(level_index=0, level=two[0], repeat=1))
    level = d.state.bench[0]
    assert level.done and level.runs == (one[0], two[0])
    assert level.result == combine_runs([one[0], two[0]])
    trial = d.state.trial
    assert trial is not None and trial.single_request_tok_s == pytest.approx(102.0)
    single = trial.single_request_spread
    assert single is not None and single.n == 2 and single.std == pytest.approx(math.sqrt(8.0))
    # a level re-run in the same run (after a lost link) replaces that run's figure
    again = replace(two[0], output_tok_s=106.0, per_request_tok_s=106.0)
    d.send(ev.BenchLevelFinished(level_index=0, level=again, repeat=1))
    assert d.state.bench[0].runs == (one[0], again)
    assert d.state.trial is not None
    assert d.state.trial.single_request_tok_s == pytest.approx(103.0)
    assert d.state.trial.repeats == 2
