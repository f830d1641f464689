"""The operator's glance (``present.figures.progress``): the same words for the console's header,
the
headless lines and the reports — elapsed, the ETA (a guess before the first trial, ``≥`` for a
lower bound) and the current best (the report's rule)."""

from __future__ import annotations

from dataclasses import replace

from specconsole.core.plans.objective import best
from specconsole.core.plans.plan import StrategyKind
from specconsole.core.search.eta import Eta
from specconsole.present.figures.bestlaunch import launch_block
from specconsole.present.figures.progress import (
    best_text,
    eta_short,
    eta_text,
    report_glance,
    state_glance,
)
from specconsole.ui.adapt import header_view
from tests.controller.helpers import Driver, plan


def _two() -> Driver:
    d = Driver()
    d.start(plan())
    d.finish_trial()
    d.finish_trial()
    return d


def test_the_glance_of_a_running_sweep() -> None:
    d = _two()
    seen = state_glance(d.state, d.now)
    assert seen is not None
    assert seen.elapsed.startswith("elapsed 0:")
    assert seen.eta.startswith("ETA 0:") and "trials left" in seen.eta and "guess" not in seen.eta
    top = best(d.state.trials, d.state.plan.goal)  # type: ignore[union-attr]
    assert top is not None and seen.best == best_text(d.state.plan, d.state.trials)  # type: ignore[arg-type]
    assert seen.best.startswith(f"best #{top.index + 1} ")
    assert seen.best.endswith("peak_aggregate 1,000.0 tok/s")
    header = header_view(d.state, d.now)
    assert header.ran == seen.ran and header.ran.endswith("elapsed")
    assert header.eta == seen.eta_short and header.eta.startswith("ETA")
    assert header.best[0] == f"★ #{top.index + 1} steps=1 draft=2 1,000 tok/s"
    assert header.best[-1] == f"★ #{top.index + 1}"


def test_before_a_sweep_nothing_and_at_its_start_a_guess() -> None:
    d = Driver()
    assert state_glance(d.state, d.now) is None
    d.start(plan())
    seen = state_glance(d.state, d.now)
    assert seen is not None and "guess" in seen.eta and seen.best == "best: none yet"
    assert "?" in seen.short


def test_eta_markers() -> None:
    bound = Eta(remaining_s=95.0, trials_left=3, at_least=True, guess=False, basis="x")
    assert eta_text(bound).startswith("ETA ≥ 1:35 (3+ trials left")
    assert eta_short(bound) == "ETA ≥1:35"
    capped = replace(bound, at_least=False, capped=True, guess=True)
    assert "at the wall-time budget" in eta_text(capped) and "guess" in eta_text(capped)
    done = Eta(remaining_s=0.0, trials_left=0, at_least=False, guess=False, basis="x")
    assert eta_text(done) == eta_short(done) == "ETA: finishing"


def test_the_report_glance_of_a_finished_and_an_unfinished_sweep() -> None:
    d = _two()
    unfinished = report_glance(d.state.plan, d.state.trials)  # type: ignore[arg-type]
    assert unfinished.eta.startswith("ETA ")
    grid = replace(
        d.state.plan, strategy=StrategyKind.GRID, axes=(("speculative_num_steps", (1, 2)),)
    )  # type: ignore[arg-type]
    finished = report_glance(grid, d.state.trials)
    assert finished.eta == "" and finished.elapsed.startswith("elapsed ")


def test_the_launch_block_names_the_best_or_nothing() -> None:
    d = _two()
    block = launch_block(d.state.plan, d.state.trials, "/s")  # type: ignore[arg-type]
    assert block is not None and block[0].endswith("(specconsole best /s):")
    assert "python3 -m sglang.launch_server" in block[1]
    assert launch_block(d.state.plan, (), "/s") is None  # type: ignore[arg-type]


def test_trial_count_says_planned_plus_added_and_the_eta_counts_the_running_trial() -> None:
    from specconsole.present.figures.progress import trial_count

    assert trial_count(4, 2, 6) == ("trial 4/6",)
    assert trial_count(8, 1, 6, "bisection") == (
        "trial 8/9 (6 planned + 3 bisection)",
        "trial 8/9",
    )
    assert trial_count(3, None, 6) == ("trial 3/6",)  # finished: the plan's estimate
    assert trial_count(7, None, 6)[0] == "trial 7/7 (6 planned + 1 added)"
    one = Eta(remaining_s=30.0, trials_left=0, at_least=False, guess=False, basis="x")
    assert eta_text(one, running=True).startswith("ETA 0:30 (1 trial left")
    assert eta_text(replace(one, trials_left=2), running=True).startswith("ETA 0:30 (3 trials")
