"""The sweep's ETA (``core.search.eta``): trial costs learnt from phase stamps, the strategy run
forward over predicted outcomes, the guesses before the first trial, and the wall-time
budget that refuses a trial which cannot finish in it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specconsole.core.machine.state import (
    ControllerState,
    LevelSummary,
    Phase,
    PhaseStamp,
    TrialRecord,
    TrialStatus,
)
from specconsole.core.plans.plan import StrategyKind
from specconsole.core.search import eta
from tests.controller.helpers import Driver, plan

LOAD, BENCH, GAP = 2.0, 10.0, 0.5
CAPACITY = {1: 455_362, 2: 402_220, 3: 349_078}
"""The simulated seed box's capacity line (README's demo table): -53,142 tokens per step."""


def _demo():  # type: ignore[no-untyped-def]
    """The demo's walk: steps 1, 2, 3, 4, 5, 10 (crashes), then 7, 8, 9."""
    p = plan()
    return replace(p, axes=(("speculative_num_steps", (1, 2, 3, 4, 5, 10)),), max_trials=None)


def _record(
    index: int, steps: int, start: float, status: TrialStatus = TrialStatus.OK
) -> TrialRecord:
    p = _demo()
    config = p.at(p.base, speculative_num_steps=steps)
    loaded = status is TrialStatus.OK
    stamps = [
        PhaseStamp(Phase.VALIDATING, start, start + 0.1),
        PhaseStamp(Phase.LOADING, start + 0.1, start + LOAD),
    ]
    if loaded:
        stamps += [
            PhaseStamp(Phase.BENCHMARKING, start + LOAD, start + LOAD + BENCH),
            PhaseStamp(Phase.RECORDING, start + LOAD + BENCH, start + LOAD + BENCH),
        ]
    levels = (
        LevelSummary(
            concurrency=1, output_tok_s=100.0 * steps, per_request_tok_s=100.0, completed=4
        ),
    )
    return TrialRecord(
        index=index,
        config=config,
        status=status,
        started_at=start,
        finished_at=start + (LOAD + BENCH if loaded else LOAD),
        phases=tuple(stamps),
        capacity=CAPACITY.get(steps) if loaded else None,
        levels=levels if loaded else (),
    )


def _two() -> list[TrialRecord]:
    first = _record(0, 1, 0.0)
    return [first, _record(1, 2, LOAD + BENCH + GAP)]


def test_costs_are_learnt_from_the_phase_stamps() -> None:
    costs = eta.learn(_two())
    assert costs is not None
    assert costs.load_s == pytest.approx(LOAD) and costs.bench_s == pytest.approx(BENCH)
    assert costs.gap_s == pytest.approx(GAP) and not costs.guess
    assert costs.failed_s == pytest.approx(LOAD)  # no crash seen yet: about a load
    assert costs.source == "this session (2 trials)"


def test_after_two_trials_the_walk_is_run_forward_through_the_predicted_crash() -> None:
    p = _demo()
    ahead = eta.ahead(p, _two())
    ok, crash = TrialStatus.OK, TrialStatus.CRASHED
    assert ahead.statuses == (ok, ok, ok, crash, ok, ok, ok)  # 3 4 5 10✗ then 7 8 9
    now = 2 * (LOAD + BENCH) + GAP
    got = eta.estimate(p, _two(), now=now, started_at=0.0)
    assert got.trials_left == 7 and not got.guess and not got.at_least
    assert got.remaining_s == pytest.approx(6 * (LOAD + BENCH + GAP) + (LOAD + GAP))


def test_the_running_trial_counts_what_it_still_needs() -> None:
    p = _demo()
    trials = _two()
    current = replace(_record(2, 3, 25.0), status=TrialStatus.RUNNING, finished_at=None, phases=())
    got = eta.estimate(p, trials, now=25.0 + 4.0, started_at=0.0, current=current)
    assert got.trials_left == 6
    assert got.remaining_s == pytest.approx(
        (LOAD + BENCH - 4.0) + 5 * (LOAD + BENCH + GAP) + LOAD + GAP
    )


def test_before_the_first_trial_it_is_a_guess_from_the_box_or_the_plan() -> None:
    p = _demo()
    guess = eta.estimate(p, [], now=0.0, started_at=0.0)
    assert guess.guess and guess.basis.startswith("a guess from the plan")
    assert eta.guess(p).load_s == pytest.approx(p.load_timeout_s * eta.GUESS_LOAD_SHARE)
    prior = eta.learn(_two())
    from_box = eta.estimate(p, [], now=0.0, started_at=0.0, prior=prior)
    assert from_box.guess and from_box.basis == "the box's last session"
    assert from_box.trials_left == 6  # nothing measured: no crash can be predicted yet


def test_optimize_is_a_lower_bound_from_its_patience() -> None:
    p = replace(_demo(), strategy=StrategyKind.OPTIMIZE, patience=4)
    got = eta.estimate(p, _two(), now=30.0, started_at=0.0)
    assert got.at_least and got.trials_left == 4  # trial 2 improved: patience starts again
    assert got.remaining_s == pytest.approx(4 * (LOAD + BENCH + GAP))  # the mean trial's cost
    worse = replace(_record(2, 1, 30.0), index=2)  # steps=1 again: no improvement
    assert eta.estimate(p, [*_two(), worse], now=45.0, started_at=0.0).trials_left == 3


def test_max_trials_and_the_wall_budget_cap_the_estimate() -> None:
    p = replace(_demo(), max_trials=4)
    assert eta.estimate(p, _two(), now=25.0, started_at=0.0).trials_left == 2
    walled = eta.estimate(replace(_demo(), max_wall_s=60.0), _two(), now=25.0, started_at=0.0)
    assert walled.capped and walled.remaining_s == pytest.approx(35.0)


def test_a_trial_that_cannot_finish_inside_the_budget_is_not_started() -> None:
    p = replace(_demo(), max_wall_s=30.0)
    trials = _two()
    config = p.at(p.base, speculative_num_steps=3)
    assert eta.budget_refusal(p, trials, config, now=10.0, started_at=0.0) == ""
    why = eta.budget_refusal(p, trials, config, now=25.0, started_at=0.0)
    assert why.startswith("max wall time: the next trial needs about 12 s and 5 s")
    assert eta.budget_refusal(p, [], config, now=25.0, started_at=0.0) == ""  # a guess: never


def test_the_machine_ends_the_sweep_when_the_next_trial_cannot_fit() -> None:
    p = replace(plan(), max_wall_s=35.0)
    d = Driver(ControllerState())
    d.start(p)
    for _ in range(2):
        d.finish_trial()
    # the driver's clock moves 1 s per event: a trial costs 10 s; 35 s fit three
    assert d.state.phase is Phase.VALIDATING
    d.finish_trial()
    assert d.state.phase is Phase.DONE
    assert d.state.finished_reason.startswith("max wall time: the next trial needs about")
