"""The optimiser's repeat of a close contender (core.search.contenders): when, what, and when
not."""

from __future__ import annotations

from dataclasses import replace

from specconsole.core.machine.state import LevelSummary, TrialRecord, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.plans.verdict import assess
from specconsole.core.search.contenders import MAX_MEASUREMENTS, contender, measurements
from specconsole.core.search.optimize import observations
from specconsole.core.search.strategy import next_trial
from tests.fixtures.plans import SEED_SERVER

BASE = f"""
{SEED_SERVER}
[bench]
ladder = [1]
repeats = 3

[sweep]
strategy = "optimize"
startup_trials = 1
noise_pct = 0
"""
AXES = "\n[sweep.axes]\nspeculative_num_steps = { min = 1, max = 9 }\n"


def plan(extra: str = "") -> SweepPlan:
    return loads_plan(BASE + extra + AXES)


def trial(index: int, steps: int, agg: float, half: float = 0.0) -> TrialRecord:
    cfg = replace(plan().base, speculative_num_steps=steps, speculative_num_draft_tokens=steps + 1)
    ci = (agg - half, agg + half) if half else None
    level = LevelSummary(1, agg, agg / 4, 1, repeats=3 if half else 1, output_tok_s_ci=ci)
    return TrialRecord(index, cfg, normalized=cfg, status=TrialStatus.OK, levels=(level,))


def test_tied_runner_up_is_repeated_once_with_the_reason() -> None:
    p = plan()
    trials = [trial(0, 2, 1000.0, 40.0), trial(1, 3, 1050.0, 40.0), trial(2, 4, 700.0, 40.0)]
    again = contender(p, trials)
    assert again is not None and again.config == trials[0].config
    assert again.reason.startswith("repeat: trial 1 (1,000.0, 960.0-1,040.0)")
    assert "best, trial 2 (1,050.0, 1,010.0-1,090.0)" in again.reason
    # the repeat is a new trial of the same configuration; after MAX_MEASUREMENTS no more
    trials.append(replace(trial(3, 2, 990.0, 40.0)))
    assert measurements(trials, trials[0].config) == MAX_MEASUREMENTS == 2
    assert contender(p, trials) is None
    # the report still says the two are tied: intervals, not single numbers
    verdict = assess(trials, p.goal)
    assert verdict.best is trials[1] and trials[0] in verdict.tied


def test_no_repeat_when_separated_unrepeated_pareto_or_running_elsewhere() -> None:
    p = plan()
    apart = [trial(0, 2, 1000.0, 10.0), trial(1, 3, 1100.0, 10.0)]
    assert contender(p, apart) is None  # intervals do not overlap
    single = [trial(0, 2, 1000.0), trial(1, 3, 1000.0)]
    assert contender(p, single) is None  # equal single numbers: no interval to compare
    tied = [trial(0, 2, 1000.0, 40.0), trial(1, 3, 1010.0, 40.0)]
    assert contender(p, tied) is not None
    assert contender(p, tied, pending=[tied[0].config]) is None
    pareto = plan('objective = { pareto = ["single_request", "peak_aggregate"] }\n')
    assert contender(pareto, tied) is None
    # the best configuration measured twice is not a contender of itself
    same = [trial(0, 2, 1000.0, 40.0), trial(1, 2, 1010.0, 40.0)]
    assert contender(p, same) is None


def test_strategy_repeats_only_before_stopping() -> None:
    tied = [trial(0, 2, 1000.0, 40.0), trial(1, 3, 1010.0, 40.0), trial(2, 5, 500.0, 40.0)]
    # budget left and not converged: the search explores instead of repeating
    roomy = plan("max_trials = 10\npatience = 5\n")
    assert len(observations(roomy, tied)) == 3  # the trials are points of the plan's space
    proposal = next_trial(roomy, tied)
    assert proposal is not None and proposal.config not in {t.config for t in tied}
    # one trial of the budget left: the contender is measured again
    tight = plan("max_trials = 4\npatience = 5\n")
    proposal = next_trial(tight, tied)
    assert proposal is not None and proposal.config == tied[0].config
    assert proposal.reason.startswith("optimize repeat: trial 1")
    # converged (patience 1): repeat first, then stop
    stale = plan("patience = 1\n")
    proposal = next_trial(stale, tied)
    assert proposal is not None and proposal.config == tied[0].config
    assert next_trial(stale, [*tied, trial(3, 2, 995.0, 40.0)]) is None
