"""``[bench] repeats`` reach the trial: each level's throughputs are the means over the
repeats with 95 % intervals, recorded in trials.jsonl, and ``core.plans.objective`` compares the
intervals (two trials whose intervals overlap are statistically tied)."""

from __future__ import annotations

import pytest

from specconsole.core.config.model import ServerConfig
from specconsole.core.machine.results import level_summaries
from specconsole.core.machine.state import TrialRecord, TrialStatus
from specconsole.core.measure.metrics import RequestTimeline, compute_level_metrics
from specconsole.core.measure.result import BenchResult
from specconsole.core.plans.verdict import assess, tied
from specconsole.session.records import record_from_dict, record_to_dict


def _level(step_s: float, n: int = 11):  # type: ignore[no-untyped-def]
    r = RequestTimeline(
        start=0.0,
        latency=0.1 + step_s * (n - 1),
        prompt_len=4,
        output_len=n,
        chunk_times=tuple(0.1 + step_s * i for i in range(n)),
        chunk_tokens=(1,) * n,
    )
    return compute_level_metrics([r, r], duration=1.0 + step_s, max_concurrency=1)


def _result(*steps: float) -> BenchResult:
    runs = [(_level(s),) for s in steps]
    return BenchResult(
        levels=runs[0],
        extra_repeats=tuple(runs[1:]),
        planned_levels=(1,),
        planned_repeats=len(runs),
    )


def test_repeated_levels_carry_means_and_intervals_through_the_record() -> None:
    (one,) = level_summaries(_result(0.010))
    assert one.repeats == 1 and one.output_tok_s_ci is None
    (lv,) = level_summaries(_result(0.010, 0.011, 0.012))
    assert lv.repeats == 3
    assert lv.output_tok_s_ci is not None and lv.per_request_tok_s_ci is not None
    low, high = lv.per_request_tok_s_ci
    assert low < lv.per_request_tok_s < high
    trial = TrialRecord(0, ServerConfig(model_path="m"), status=TrialStatus.OK, levels=(lv,))
    back = record_from_dict(record_to_dict(trial))
    assert back.levels == trial.levels


def _trial(index: int, steps: int, *step_s: float) -> TrialRecord:
    """A trial at ``steps`` whose ladder ran once per ``step_s`` (seconds per token)."""
    config = ServerConfig(model_path="m", speculative_num_steps=steps)
    return TrialRecord(
        index, config, status=TrialStatus.OK, levels=level_summaries(_result(*step_s))
    )


def test_overlapping_intervals_tie_and_the_report_sentence_says_so() -> None:
    a = _trial(0, 3, 0.010, 0.0104, 0.0098)
    b = _trial(1, 4, 0.0101, 0.0099, 0.0103)
    far = _trial(2, 5, 0.005, 0.0051, 0.0049)
    assert tied(a, b) and not tied(a, far)
    verdict = assess([a, b])
    assert verdict.tied and "statistically tied with trial" in verdict.sentence
    assert assess([a, b, far]).best is far
    assert far.peak_aggregate_tok_s == pytest.approx(far.levels[0].output_tok_s)


def test_findings_of_any_strategy_say_when_the_best_is_tied() -> None:
    from specconsole.core.plans.parse import loads_plan
    from specconsole.core.search.strategy import findings

    grid = loads_plan('[server]\nmodel_path = "m"\n[sweep.axes]\nspeculative_num_steps = [3, 4]\n')
    a, b = _trial(0, 3, 0.010, 0.0104, 0.0098), _trial(1, 4, 0.0101, 0.0099, 0.0103)
    (sentence,) = findings(grid, [a, b])
    assert "statistically tied with trial" in sentence
    assert findings(grid, [_trial(0, 3, 0.01), _trial(1, 4, 0.01)]) == ()
