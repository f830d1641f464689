"""The measured noise band (``core.measure.noise``) and every decision that uses it
(``core.plans.verdict``: ties, improvements, the assessment; ``core.search.prune``): a
difference inside the band is a tie, never a winner, never a reason to prune."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specconsole.core.config.model import ServerConfig
from specconsole.core.measure.noise import NoiseBand, Sample, pool
from specconsole.core.measure.stats import t_975
from specconsole.core.measure.trials import LevelSummary, TrialRecord, TrialStatus
from specconsole.core.plans.goalparse import parse_goal
from specconsole.core.plans.plan import StrategyKind
from specconsole.core.plans.verdict import assess, improves, measured_noise, tied
from specconsole.core.search import prune
from tests.controller.helpers import plan

SINGLE = parse_goal("single_request")


def _trial(index: int, steps: int, single: float, **level: object) -> TrialRecord:
    return TrialRecord(
        index=index,
        config=ServerConfig(model_path="m", speculative_num_steps=steps),
        status=TrialStatus.OK,
        levels=(
            LevelSummary(
                concurrency=1,
                output_tok_s=single,
                per_request_tok_s=single,
                completed=4,
                **level,  # type: ignore[arg-type]
            ),
        ),
    )


def test_pooling_weights_each_sources_relative_variance_by_its_degrees_of_freedom() -> None:
    a = Sample.of([100.0, 104.0, 96.0])  # s = 4, 2 dof
    b = Sample.of([50.0, 51.0])  # s = 0.707, 1 dof
    band = pool([a, b, Sample.of([7.0])])  # a single value measures nothing
    assert band is not None and band.dof == 3
    expected = math.sqrt((2 * (4 / 100) ** 2 + 1 * (0.7071068 / 50.5) ** 2) / 3)
    assert band.rel_std == pytest.approx(expected, rel=1e-6)
    assert band.half_width() == pytest.approx(t_975(3) * expected * math.sqrt(2))
    assert pool([Sample.of([3.0])]) is None and pool([]) is None


@given(
    st.lists(st.floats(min_value=1.0, max_value=1e4), min_size=2, max_size=8),
    st.floats(min_value=0.0, max_value=0.5),
)
def test_two_figures_differ_exactly_when_their_gap_exceeds_the_band(
    values: list[float], gap: float
) -> None:
    band = pool([Sample.of(values)])
    if band is None or band.rel_std == 0:
        return
    a = statistics.fmean(values)
    b = a * (1 + gap)
    limit = band.half_width() * (a + b) / 2
    assert band.differ(a, b) == (abs(b - a) > limit)
    assert not band.differ(a, a)


def test_the_session_measures_its_noise_from_repeats_and_from_remeasured_configurations() -> None:
    repeated = _trial(0, 1, 100.0, repeats=3, per_request_tok_s_ci=(94.0, 106.0))
    first, again = _trial(1, 2, 80.0), _trial(2, 2, 84.0)  # one configuration, two loads
    lone = _trial(3, 3, 90.0)
    band = measured_noise([repeated, first, again, lone], SINGLE)
    assert band is not None and band.dof == 2 + 1
    assert "trial 1 (3 runs)" in band.source and "trials 2 and 3" in band.source
    std_repeat = 6.0 * math.sqrt(3) / t_975(2)
    std_loads = statistics.stdev([80.0, 84.0])
    expected = math.sqrt((2 * (std_repeat / 100) ** 2 + (std_loads / 82) ** 2) / 3)
    assert band.rel_std == pytest.approx(expected)
    assert measured_noise([lone, first], SINGLE) is None  # nothing measured twice


def test_a_difference_inside_the_band_is_a_tie_and_the_best_says_so() -> None:
    band = NoiseBand(rel_std=0.02, dof=20, source="test")  # ±5.9 % for two single runs
    a, b, far = _trial(0, 1, 100.0), _trial(1, 2, 104.0), _trial(2, 3, 120.0)
    assert tied(a, b, SINGLE, band) and not tied(a, b, SINGLE, None)
    assert not tied(a, far, SINGLE, band)
    verdict = assess([a, b, far], SINGLE, noise=band)
    assert verdict.best is far and verdict.tied == ()
    verdict = assess([a, b], SINGLE, noise=band)
    assert verdict.best is b and verdict.tied == (a,) and verdict.tie
    assert "statistically tied with trial 1 (tie: inside the measured noise, ±5.9 %)" in (
        verdict.sentence
    )


def test_assess_measures_the_band_from_the_trials_by_default() -> None:
    trials = [_trial(0, 1, 100.0), _trial(1, 1, 96.0), _trial(2, 2, 101.0)]
    verdict = assess(trials, SINGLE)
    assert verdict.noise is not None and verdict.best is trials[2]
    assert trials[0] in verdict.tied  # 1 % apart, two loads of one point 4 % apart
    assert assess(trials, SINGLE, noise=None).tied == ()


def test_an_improvement_inside_the_band_does_not_count() -> None:
    band = NoiseBand(rel_std=0.03, dof=10, source="test")
    incumbent = _trial(0, 1, 100.0)
    assert improves(_trial(1, 2, 105.0), incumbent, SINGLE, noise=None)
    assert not improves(_trial(1, 2, 105.0), incumbent, SINGLE, noise=band)
    assert improves(_trial(1, 2, 115.0), incumbent, SINGLE, noise=band)


def test_pruning_never_discards_a_candidate_inside_the_measured_band() -> None:
    p = plan(strategy=StrategyKind.GRID, prune=True, goal=SINGLE, prune_margin_pct=2.0)
    best = _trial(0, 1, 100.0)
    quiet = [best]
    again = [_trial(i, 5, v) for i, v in enumerate((100.0, 104.0, 96.0, 102.0, 98.0), 1)]
    noisy = [best, *again]  # one point loaded five times: 3 % standard deviation
    candidate = LevelSummary(concurrency=1, output_tok_s=93.0, per_request_tok_s=93.0, completed=4)
    assert prune.verdict(p, quiet, candidate) is not None  # 7 % short, margin 2 %: pruned
    band = measured_noise(noisy, SINGLE)
    assert band is not None and 0.07 < band.half_width() < 0.2
    assert prune.verdict(p, noisy, candidate) is None  # inside the measured noise: runs on
    info = prune.verdict(p, noisy, LevelSummary(1, 80.0, 80.0, 4))
    assert info is not None and info.incumbent_value == 104.0  # the best single load
    assert info.threshold == pytest.approx(104.0 * (1 - band.half_width()))
