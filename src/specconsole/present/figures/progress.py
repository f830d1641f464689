"""The operator's glance: elapsed, the sweep's ETA and the current best, as one line.

Why here: "how long until this finishes, and what is winning?" is asked of the console's
header, the headless lines and the reports alike, so the words are written once. The figures
come from the core — the ETA from ``core.search.eta.estimate`` (a guess before this session
finished a trial, marked so; a lower bound for ``optimize``'s patience, marked ``≥``), the
best from ``core.plans.objective.best``, the very rule the report's best is chosen by — so
the best shown is the report's best at every moment.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specconsole.core.plans.objective import ObjectiveKind, best
from specconsole.core.search.eta import Costs, Eta, estimate
from specconsole.present.charts.symbols import TRIAL_MARKS
from specconsole.present.formats import format_elapsed, format_rate
from specconsole.present.labels import record_label

if TYPE_CHECKING:
    from specconsole.core.machine.state import ControllerState, TrialRecord
    from specconsole.core.plans.plan import SweepPlan


@dataclass(frozen=True, slots=True)
class Glance:
    """The three parts; each is '' when there is nothing to say."""

    elapsed: str
    eta: str
    best: str
    short: str = ""
    """The console header's compact form: ``12:03 elapsed · ETA 8:10 · ★ #3 steps=3 1,730
    tok/s`` (the trials table's mark for the best)."""

    @property
    def line(self) -> str:
        return " · ".join(part for part in (self.elapsed, self.eta, self.best) if part)


def eta_short(eta: Eta) -> str:
    """``ETA 8:10``, ``ETA ≥8:10`` (a lower bound) or ``ETA ~8:10?`` (a guess)."""
    if eta.trials_left == 0 and eta.remaining_s <= 0:
        return "ETA: finishing"
    mark = "≥" if eta.at_least else ("~" if eta.guess else "")
    return f"ETA {mark}{format_elapsed(eta.remaining_s)}{'?' if eta.guess else ''}"


def eta_text(eta: Eta, now: float | None = None) -> str:
    """``ETA 8:10 (3 trials left, ends 14:32)``; ``≥`` for a lower bound, ``guess`` before
    a trial of this session finished, ``budget`` when the wall-time budget ends it first."""
    if eta.trials_left == 0 and eta.remaining_s <= 0:
        return "ETA: finishing"
    bound = "≥ " if eta.at_least else ""
    parts = [f"{eta.trials_left}{'+' if eta.at_least else ''} trials left"]
    if now is not None:
        parts.append(f"ends {time.strftime('%H:%M', time.localtime(now + eta.remaining_s))}")
    if eta.capped:
        parts.append("at the wall-time budget")
    if eta.guess:
        parts.append("guess")
    return f"ETA {bound}{format_elapsed(eta.remaining_s)} ({', '.join(parts)})"


def figure_short(plan: SweepPlan, record: TrialRecord, *, precise: bool = False) -> str:
    """The objective's figure without its name: ``1,730 tok/s`` (``1,730.4 tok/s`` precise;
    req/s with two decimals); a weighted score as a number; a Pareto pair: ''."""
    objective = plan.goal.objective
    score = objective.score(record)
    if objective.kind is ObjectiveKind.PARETO or score is None:
        return ""
    if objective.kind is ObjectiveKind.WEIGHTED:
        return format_rate(score, 1)
    unit = objective.terms[0][0].kind.unit
    digits = 2 if unit == "req/s" else (1 if precise else 0)
    return f"{format_rate(abs(score), digits)} {unit}"


def figure_text(plan: SweepPlan, record: TrialRecord) -> str:
    """The objective's figure of a trial: ``peak_aggregate 1,730.4 tok/s``."""
    objective = plan.goal.objective
    figure = figure_short(plan, record, precise=True)
    if not figure:
        return objective.describe
    if objective.kind is ObjectiveKind.WEIGHTED:
        return f"{objective.describe} = {figure}"
    return f"{objective.terms[0][0].name} {figure}"


def best_short(plan: SweepPlan, trials: Sequence[TrialRecord]) -> str:
    """``★ #3 steps=3 1,730 tok/s`` (``core.plans.objective.best``); '' without a best."""
    top = best(trials, plan.goal)
    if top is None:
        return ""
    figure = figure_short(plan, top)
    text = f"{TRIAL_MARKS['best']} #{top.index + 1} {record_label(top, plan.base)}"
    return f"{text} {figure}" if figure else text


def best_text(plan: SweepPlan, trials: Sequence[TrialRecord]) -> str:
    """``best #3 steps=3: peak_aggregate 1,730.4 tok/s`` (``core.plans.objective.best``)."""
    top = best(trials, plan.goal)
    if top is None:
        return "best: none yet"
    return f"best #{top.index + 1} {record_label(top, plan.base)}: {figure_text(plan, top)}"


def glance(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    *,
    now: float,
    started_at: float | None,
    current: TrialRecord | None = None,
    prior: Costs | None = None,
    finished: bool = False,
    pool_trials: Sequence[TrialRecord] = (),
) -> Glance:
    """The glance for a sweep at ``now``; ``finished`` leaves the ETA out. ``pool_trials``
    are other boxes' trials of a pool (the best and the budget are the pool's)."""
    every = (*pool_trials, *trials)
    ran = "" if started_at is None else format_elapsed(now - started_at)
    eta = short = ""
    if not finished:
        seen = estimate(plan, every, now=now, started_at=started_at, current=current, prior=prior)
        eta, short = eta_text(seen, now), eta_short(seen)
    shown = (f"{ran} elapsed" if ran else "", short, best_short(plan, every))
    compact = " · ".join(p for p in shown if p)
    return Glance(f"elapsed {ran}" if ran else "", eta, best_text(plan, every), compact)


def span(trials: Sequence[TrialRecord]) -> tuple[float, float] | None:
    """(first start, last end) of recorded trials, None without any."""
    ends = [e for t in trials for e in (t.finished_at, *(s.ended_at for s in t.phases)) if e]
    starts = [t.started_at for t in trials if t.started_at]
    if not starts or not ends:
        return None
    return min(starts), max(ends)


def report_glance(plan: SweepPlan, trials: Sequence[TrialRecord]) -> Glance:
    """The glance as of the last recorded trial (reports: a finished sweep shows its
    elapsed time and best, an unfinished one the ETA from there)."""
    when = span(trials)
    if when is None:
        return Glance("", "", best_text(plan, trials))
    started, ended = when
    left = estimate(plan, trials, now=ended, started_at=None)
    return glance(
        plan,
        trials,
        now=ended,
        started_at=started,
        finished=left.trials_left == 0,
    )


def state_glance(state: ControllerState, now: float) -> Glance | None:
    """The glance for a controller snapshot (None without a plan or before a sweep)."""
    plan = state.plan
    if plan is None or (state.sweep_started_at is None and not state.trials):
        return None
    return glance(
        plan,
        state.trials,
        now=now,
        started_at=state.sweep_started_at,
        current=state.trial,
        prior=state.eta_prior,
        finished=not state.sweep_active,
        pool_trials=state.pool.trials if state.pool else (),
    )


__all__ = [
    "Glance",
    "best_short",
    "best_text",
    "eta_short",
    "eta_text",
    "figure_text",
    "glance",
    "report_glance",
    "span",
    "state_glance",
]
