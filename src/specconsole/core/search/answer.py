"""The sweep's answer: the one trial every view names as the result, and its exact launch.

Why its own module: "best by the objective" (``core.plans.verdict.assess``) ranks trials by
one figure, but a sweep that measured per level and proved a schedule by batch size has a
better answer than any static trial — the schedule holds each level's best draft length, so
it is never behind the single best static and ahead of it where that one is weak (the
seed's dilemma: steps 5 wins c=1, steps 3 the aggregate). The console's header ★ and its
trials table, the exit line, ``specconsole best``, ``finally = "best"`` and the report's
verdict must all name the same answer, so the rule lives once, here:

* the answer is the last schedule trial that was benchmarked and meets the goal
  (``core.search.levels.level_table``) when it is *proven*: measured at every level the
  single best static was, behind it at none beyond the noise (the intervals overlap, or the
  gap is within the noise), and ahead of it at one level at least beyond the noise —
  deploying it loses nothing anywhere and gains somewhere;
* otherwise it is the best by the goal (``assess``), as before.

The noise is ``[sweep] noise_pct``, or more where the records show more: at a level whose
best static *is* the single best static, the schedule drafts that very length, so their gap
there is the measurement's noise by construction (a loaded box moves c=64 by a few percent
between two runs of one configuration) — a lead or a loss elsewhere counts only beyond it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specconsole.core.measure.trials import TrialRecord
from specconsole.core.plans.objective import Goal
from specconsole.core.plans.verdict import assess, marks
from specconsole.core.search.levels import LevelRow, LevelTable, level_table

__all__ = ["Answer", "answer", "answer_marks", "proven", "schedule_noise"]


@dataclass(frozen=True, slots=True)
class Answer:
    """The sweep's result and the best static trial it was chosen against."""

    trial: TrialRecord
    """What the sweep proved: a schedule, or the best trial by the goal."""
    static: TrialRecord | None
    """The best trial by the goal (``assess``); the same as ``trial`` unless a schedule won."""
    gain_pct: float | None = None
    """A schedule's largest real lead over the single best static, percent (None: static)."""
    gain_at: int | None = None
    """The level of that lead."""

    @property
    def scheduled(self) -> bool:
        return self.gain_pct is not None


def _behind(row: LevelRow, noise: float) -> bool:
    """The schedule is behind the single best static here beyond the noise."""
    s, single = row.schedule, row.single
    assert s is not None and single is not None
    gap = row.versus(single)
    return gap is not None and -gap > noise and s.high < single.low


def _ahead(row: LevelRow, noise: float) -> float | None:
    """The schedule's lead over the single best static here, when it is real."""
    s, single = row.schedule, row.single
    if s is None or single is None:
        return None
    gap = row.versus(single)
    if gap is None or gap <= noise or s.low <= single.high:
        return None
    return gap


def schedule_noise(table: LevelTable) -> float:
    """The noise a schedule is judged with: ``noise_pct``, or its largest gap to the single
    best static at a level where that one is the level's best (the same draft length)."""
    floor = [r.noise_pct for r in table.rows]
    same = [
        abs(gap)
        for r in table.rows
        if r.best is not None
        and table.single is not None
        and r.best.trial.config == table.single.config
        and (gap := r.versus(r.single)) is not None
    ]
    return max([*floor, *same], default=0.0)


def proven(table: LevelTable) -> tuple[float, int] | None:
    """(largest real lead over the single best static, its level) when the table's schedule
    is proven (see the module docstring); None otherwise."""
    if table.schedule is None or table.single is None:
        return None
    measured = [r for r in table.rows if r.single is not None]
    noise = schedule_noise(table)
    if not measured or any(r.schedule is None or _behind(r, noise) for r in measured):
        return None
    leads = [(lead, r.concurrency) for r in measured if (lead := _ahead(r, noise)) is not None]
    return max(leads) if leads else None


def answer(trials: Sequence[TrialRecord], goal: Goal, noise_pct: float = 1.0) -> Answer | None:
    """The sweep's answer (None: no trial meets the goal)."""
    static = assess(trials, goal).best
    table = level_table(trials, goal, noise_pct)
    lead = proven(table)
    if lead is not None and table.schedule is not None:
        return Answer(table.schedule, static, lead[0], lead[1])
    return None if static is None else Answer(static, static)


def answer_marks(
    trials: Sequence[TrialRecord], goal: Goal, noise_pct: float = 1.0
) -> dict[int, str]:
    """``core.plans.verdict.marks`` with the answer marked best: a proven schedule takes the
    ★ from the static trial it beat (which keeps no mark of its own)."""
    out = marks(trials, goal)
    found = answer(trials, goal, noise_pct)
    if found is not None and found.scheduled:
        out = {i: m for i, m in out.items() if m != "best"}
        out[found.trial.index] = "best"
    return out
