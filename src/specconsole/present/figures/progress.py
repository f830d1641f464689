"""The operator's glance: elapsed, the sweep's ETA and the current best, as one line.

Why here: "how long until this finishes, and what is winning?" is asked of the console's
header, the headless lines and the reports alike, so the words are written once. The figures
come from the core — the ETA from ``core.search.eta.estimate`` (a guess before this session
finished a trial, marked so; a lower bound for ``optimize``'s patience, marked ``≥``), the
best from ``core.search.answer.answer`` (a proven schedule, else the best by the goal), the
very rule the report's verdict, ``specconsole best`` and ``finally = "best"`` use — so the
best shown is the sweep's answer at every moment.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specconsole.core.plans.objective import ObjectiveKind
from specconsole.core.search.answer import answer
from specconsole.core.search.eta import Costs, Eta, estimate
from specconsole.present.charts.symbols import TRIAL_MARKS
from specconsole.present.figures.levels import pct, result_text
from specconsole.present.formats import format_elapsed, format_rate
from specconsole.present.labels import record_label

if TYPE_CHECKING:
    from specconsole.core.machine.state import ControllerState, TrialRecord
    from specconsole.core.plans.plan import SweepPlan
    from specconsole.core.search.answer import Answer


@dataclass(frozen=True, slots=True)
class Glance:
    """The three parts; each is '' when there is nothing to say."""

    elapsed: str
    eta: str
    best: str
    short: str = ""
    """The compact form: ``12:03 elapsed · ETA 8:10 · ★ #3 steps=3 1,730 tok/s`` (the
    trials table's mark for the best)."""
    ran: str = ""
    """``12:03 elapsed`` (the header's own part)."""
    eta_short: str = ""
    """``ETA 8:10`` (the header's own part)."""
    best_forms: tuple[str, ...] = ()
    """The best in the header, longest form first (:func:`best_forms`)."""
    trials_after: int | None = None
    """Trials the strategy will still start after the running one (None: finished)."""

    @property
    def line(self) -> str:
        return " · ".join(part for part in (self.elapsed, self.eta, self.best) if part)


def eta_short(eta: Eta) -> str:
    """``ETA 8:10``, ``ETA ≥8:10`` (a lower bound) or ``ETA ~8:10?`` (a guess)."""
    if eta.trials_left == 0 and eta.remaining_s <= 0:
        return "ETA: finishing"
    mark = "≥" if eta.at_least else ("~" if eta.guess else "")
    return f"ETA {mark}{format_elapsed(eta.remaining_s)}{'?' if eta.guess else ''}"


def eta_text(eta: Eta, now: float | None = None, *, running: bool = False) -> str:
    """``ETA 8:10 (3 trials left, ends 14:32)``; ``≥`` for a lower bound, ``guess`` before
    a trial of this session finished, ``budget`` when the wall-time budget ends it first.
    ``running``: a trial runs now, and counts among those left."""
    if eta.trials_left == 0 and eta.remaining_s <= 0:
        return "ETA: finishing"
    bound = "≥ " if eta.at_least else ""
    left = eta.trials_left + int(running)
    parts = [f"{left}{'+' if eta.at_least else ''} trial{'' if left == 1 else 's'} left"]
    if now is not None:
        parts.append(f"ends {time.strftime('%H:%M', time.localtime(now + eta.remaining_s))}")
    if eta.capped:
        parts.append("at the wall-time budget")
    if eta.guess:
        parts.append("guess")
    return f"ETA {bound}{format_elapsed(eta.remaining_s)} ({', '.join(parts)})"


def trial_count(
    number: int, after: int | None, planned: int | None, added: str = "added"
) -> tuple[str, ...]:
    """Trial *i of n*, longest form first: ``trial 8/9 (6 planned + 3 bisection)`` once the
    strategy runs more trials than the plan's estimate (``added`` says why), ``trial 8/9``,
    ``trial 4/6``; ``after`` is what the strategy will still start (the ETA's count),
    ``planned`` the plan's estimate."""
    total = number + after if after is not None else max(number, planned or 0) or None
    if total is None:
        return (f"trial {number}",)
    short = f"trial {number}/{total}"
    if planned is not None and total > planned:
        return (f"{short} ({planned} planned + {total - planned} {added})", short)
    return (short,)


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


def plan_answer(plan: SweepPlan, trials: Sequence[TrialRecord]) -> Answer | None:
    """The sweep's answer for ``plan`` (``core.search.answer.answer``)."""
    return answer(trials, plan.goal, plan.noise_pct)


def best_forms(plan: SweepPlan, trials: Sequence[TrialRecord]) -> tuple[str, ...]:
    """The answer for a status line, longest first: ``★ #3 steps=3 1,730 tok/s``, ``★ #3
    steps=3``, ``★ #3 1,730 tok/s``, ``★ #3``; for a proven schedule ``★ #12 schedule
    1-2:5,3-8:4,9+:3 +15.6 % at c=1`` (its largest lead over the single best static), then
    without the lead. Empty without a best."""
    found = plan_answer(plan, trials)
    if found is None:
        return ()
    top = found.trial
    mark = f"{TRIAL_MARKS['best']} #{top.index + 1}"
    label = f"{mark} {record_label(top, plan.base)}"
    if found.gain_pct is not None:
        return (f"{label} {pct(found.gain_pct)} at c={found.gain_at}", label, mark)
    figure = figure_short(plan, top)
    if not figure:
        return (label, mark)
    return (f"{label} {figure}", label, f"{mark} {figure}", mark)


def best_short(plan: SweepPlan, trials: Sequence[TrialRecord]) -> str:
    """The longest of :func:`best_forms` ('' without a best)."""
    forms = best_forms(plan, trials)
    return forms[0] if forms else ""


def answer_text(plan: SweepPlan, found: Answer) -> str:
    """The answer in a sentence: ``best #3 steps=3: peak_aggregate 1,730.4 tok/s``, or for a
    proven schedule ``result: #12 schedule 1-2:5,3-8:4,9+:3 (batch size:steps): +15.6 % over
    the single best static #3 steps=3 at c=1, …`` (``present.figures.levels.result_text``)."""
    top = found.trial
    if found.gain_pct is None or found.gain_at is None or found.static is None:
        return f"best #{top.index + 1} {record_label(top, plan.base)}: {figure_text(plan, top)}"
    return result_text(top, found.static, found.gain_pct, found.gain_at, plan.base)


def best_text(plan: SweepPlan, trials: Sequence[TrialRecord]) -> str:
    """The sweep's answer in a sentence (:func:`answer_text`); ``best: none yet``."""
    found = plan_answer(plan, trials)
    return "best: none yet" if found is None else answer_text(plan, found)


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
    after: int | None = None
    if not finished:
        seen = estimate(plan, every, now=now, started_at=started_at, current=current, prior=prior)
        eta, short = eta_text(seen, now, running=current is not None), eta_short(seen)
        after = seen.trials_left
    forms = best_forms(plan, every)
    shown = (f"{ran} elapsed" if ran else "", short, forms[0] if forms else "")
    compact = " · ".join(p for p in shown if p)
    return Glance(
        f"elapsed {ran}" if ran else "",
        eta,
        best_text(plan, every),
        compact,
        shown[0],
        short,
        forms,
        after,
    )


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
    "answer_text",
    "best_forms",
    "best_short",
    "best_text",
    "eta_short",
    "eta_text",
    "figure_text",
    "glance",
    "plan_answer",
    "report_glance",
    "span",
    "state_glance",
    "trial_count",
]
