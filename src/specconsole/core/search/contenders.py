"""Re-measuring a close contender: the optimiser's noise-aware repeat.

Why a module of its own: when benchmark levels are repeated (``[bench] repeats``), every
headline number carries a confidence interval, and two configurations whose intervals
overlap are statistically tied — the search has not shown which one is better. Before the
``optimize`` strategy stops (it converged, or one trial of ``max_trials`` is left) it may
spend a trial re-benchmarking the runner-up: the repeat is recorded as a new trial of the
same configuration with the reason, and both measurements are observations of the search.
"best" and "converged" then compare intervals as everywhere else (``core.plans.objective``).

The rule is a pure function of the records, so ``resume`` makes the same decision: a
configuration is measured at most ``MAX_MEASUREMENTS`` times by this rule, which bounds the
repeats by the number of configurations tried (and the budget bounds them all).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from specconsole.core.config.model import ServerConfig
from specconsole.core.measure.identity import identity
from specconsole.core.measure.trials import TrialRecord, TrialStatus
from specconsole.core.plans.objective import ObjectiveKind, best, feasible_trials
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.plans.verdict import tied

MAX_MEASUREMENTS = 2
"""Measurements of one configuration after which it is not repeated again."""


def not_to_propose(
    trials: Iterable[TrialRecord],
    skipped: Iterable[ServerConfig],
    pending: Iterable[ServerConfig] = (),
) -> set[ServerConfig]:
    """Configurations (by :func:`identity`) a strategy must not propose: every decided
    trial's (a cancelled one runs again), every one the user skipped and every one pending
    (proposed, not yet recorded)."""
    out = {identity(t.config) for t in trials if t.status is not TrialStatus.CANCELLED}
    return out | {identity(c) for c in skipped} | {identity(c) for c in pending}


def measurements(trials: Iterable[TrialRecord], config: ServerConfig) -> int:
    """How many successful trials measured ``config``."""
    key = identity(config)
    return sum(1 for t in trials if t.status is TrialStatus.OK and identity(t.config) == key)


@dataclass(frozen=True, slots=True)
class Repeat:
    """A contender to re-benchmark and the one line that says why."""

    config: ServerConfig
    reason: str


def _span(goal_interval: tuple[float, float, float] | None) -> bool:
    return goal_interval is not None and goal_interval[2] > goal_interval[1]


def contender(
    plan: SweepPlan, trials: Sequence[TrialRecord], pending: Iterable[ServerConfig] = ()
) -> Repeat | None:
    """The runner-up configuration to measure again, or None.

    A repeat is proposed when the best feasible trial and the best trial of any *other*
    configuration have overlapping confidence intervals (at least one of them from repeated
    levels: single measurements carry no interval to compare), the runner-up has been
    measured fewer than ``MAX_MEASUREMENTS`` times and is not running elsewhere. Pareto
    goals have no single runner-up and are never repeated."""
    goal = plan.goal
    if goal.objective.kind is ObjectiveKind.PARETO:
        return None
    pool = feasible_trials(trials, goal)
    top = best(pool, goal)
    if top is None:
        return None
    others = [t for t in pool if identity(t.config) != identity(top.config)]
    runner = best(others, goal)
    if runner is None or not tied(runner, top, goal):
        return None
    a, b = goal.objective.interval(top), goal.objective.interval(runner)
    if not (_span(a) or _span(b)) or a is None or b is None:
        return None
    if measurements(trials, runner.config) >= MAX_MEASUREMENTS:
        return None
    if identity(runner.config) in {identity(c) for c in pending}:
        return None
    reason = (
        f"repeat: trial {runner.index + 1} ({abs(b[0]):,.1f}, {abs(b[1]):,.1f}-{abs(b[2]):,.1f})"
        f" is statistically tied with the best, trial {top.index + 1} ({abs(a[0]):,.1f}, "
        f"{abs(a[1]):,.1f}-{abs(a[2]):,.1f}); measuring it again to tell them apart"
    )
    return Repeat(runner.config, reason)


__all__ = ["MAX_MEASUREMENTS", "Repeat", "contender", "identity", "measurements", "not_to_propose"]
