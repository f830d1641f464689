"""Which trials a report shows, and which of them are worth keeping.

Shared by every report format (Markdown, CSV, JSON, HTML) so they always agree: rollbacks
are not measurements; the Pareto set on (single-request tok/s, peak aggregate tok/s) names
the configurations worth keeping; the best per concurrency answers "what do I deploy for my
traffic".
"""

from __future__ import annotations

from collections.abc import Sequence

from specconsole.core.machine.state import TrialKind, TrialRecord, TrialStatus
from specconsole.core.plans.objective import DEFAULT_GOAL, Goal
from specconsole.core.search.levels import level_table


def report_trials(trials: Sequence[TrialRecord]) -> list[TrialRecord]:
    """The trials a report shows: everything except rollbacks (they are not measurements)."""
    return [t for t in trials if t.kind is not TrialKind.ROLLBACK]


def pareto(trials: Sequence[TrialRecord]) -> list[TrialRecord]:
    """Successful trials not dominated on (single-request tok/s, peak aggregate tok/s), each
    measured on the plan's ladder and workload."""
    ok = [
        t
        for t in report_trials(trials)
        if t.status is TrialStatus.OK
        and t.single_request_tok_s is not None
        and t.remeasure is None  # measured at other levels or on other traffic
    ]
    front: list[TrialRecord] = []
    for t in ok:
        s, a = t.single_request_tok_s or 0.0, t.peak_aggregate_tok_s or 0.0
        dominated = any(
            (o.single_request_tok_s or 0.0) >= s
            and (o.peak_aggregate_tok_s or 0.0) >= a
            and ((o.single_request_tok_s or 0.0) > s or (o.peak_aggregate_tok_s or 0.0) > a)
            for o in ok
        )
        if not dominated:
            front.append(t)
    return sorted(front, key=lambda t: t.single_request_tok_s or 0.0)


def best_per_concurrency(
    trials: Sequence[TrialRecord], goal: Goal = DEFAULT_GOAL
) -> list[tuple[int, TrialRecord, float]]:
    """For each concurrency level measured: (level, best static trial, its aggregate tok/s)
    — the per-level table's best (``core.search.levels``: feasible under ``goal``, real
    acceptance, a schedule aside)."""
    table = level_table(report_trials(trials), goal)
    return [(r.concurrency, r.best.trial, r.best.value) for r in table.rows if r.best is not None]
