"""The per-level answer: at each concurrency of the ladder, which configuration is best, by how
much, what no speculation and a schedule measured there, and where speculation stops paying.

Why its own module: the seed's sweep ended in a dilemma one "best" cannot resolve — steps 5
wins a single request, steps 3 the aggregate — because the best depends on the traffic. So
every view (the console's trials pane, the headless summary, each report format) shows the
same per-level table, computed once here from the records, and the schedule is derived from
it (``core.search.per_level``).

The figure of a level is its aggregate output tok/s (at c=1, what the one request gets); its
interval the 95 % confidence interval over ``[bench] repeats``, else the figure itself. A
level's candidates are the trials the plan's goal deems feasible (``ok``, every constraint
and SLO met, real acceptance — ``core.plans.objective``) that draft one length at every
batch size (static) or nothing (the baseline); a schedule and a what-if have rows of their
own and never take a level. Noise: a difference counts when the intervals do not overlap and
it exceeds ``noise_pct`` percent (``[sweep] noise_pct``, the floor for single runs).

Where speculation stops paying: per level the gain of the best speculative configuration
over the best without speculation, as a range (the figures' intervals, widened by the noise
floor); speculation pays at a level when that range's low end is above zero, and it stops
paying from the smallest level above which it never pays again ("not within the ladder"
when it pays at the top level). The same rule gives each trial's own break-even
concurrency (:meth:`LevelTable.breakeven`: its figures against no speculation's).

Beside the schedule, the engine's own adaptive mode (``core.search.proof.contest``: its
defaults, and over the schedule's lengths) has a figure per level when it ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specconsole.core.engine.schedule import Role, config_role
from specconsole.core.plans.objective import Goal
from specconsole.core.plans.verdict import assess
from specconsole.core.search.proof.contest import Contender, contenders

if TYPE_CHECKING:
    from specconsole.core.measure.trials import TrialRecord

__all__ = [
    "Contender",
    "LevelFigure",
    "LevelRow",
    "LevelTable",
    "Rivalry",
    "WhatIf",
    "gain_range",
    "level_figure",
    "level_table",
    "role_of",
    "what_ifs",
]


@dataclass(frozen=True, slots=True)
class LevelFigure:
    """One trial's aggregate output tok/s at one level, with its interval."""

    trial: TrialRecord
    value: float
    low: float
    high: float

    @property
    def number(self) -> int:
        return self.trial.index + 1


def level_figure(trial: TrialRecord, concurrency: int) -> LevelFigure | None:
    """``trial``'s figure at ``concurrency`` (None: the level did not run)."""
    level = next((lv for lv in trial.levels if lv.concurrency == concurrency), None)
    if level is None:
        return None
    low, high = level.output_tok_s_ci or (level.output_tok_s, level.output_tok_s)
    value = level.output_tok_s
    return LevelFigure(trial, value, min(low, value), max(high, value))


def _pct(a: float, b: float) -> float | None:
    return None if b <= 0 else (a / b - 1.0) * 100.0


def gain_range(
    s: LevelFigure | None, b: LevelFigure | None, noise: float
) -> tuple[float, float, float] | None:
    """(gain, low, high) percent of ``s`` over ``b``: the intervals widened by the noise
    floor (None: one of them missing)."""
    if s is None or b is None or b.value <= 0 or b.low <= 0:
        return None
    mid = (s.value / b.value - 1.0) * 100.0
    low = (s.low / b.high - 1.0) * 100.0 - noise
    high = (s.high / b.low - 1.0) * 100.0 + noise
    return (mid, min(low, mid), max(high, mid))


@dataclass(frozen=True, slots=True)
class LevelRow:
    """One ladder level."""

    concurrency: int
    best: LevelFigure | None
    """The best static trial or baseline here."""
    runner_up: LevelFigure | None
    """The best of another configuration."""
    baseline: LevelFigure | None
    """The best trial without speculation."""
    speculative: LevelFigure | None
    """The best trial with speculation (static)."""
    schedule: LevelFigure | None
    """The last schedule trial's figure here."""
    single: LevelFigure | None
    """The single best static trial (by the plan's goal) here."""
    noise_pct: float
    contenders: tuple[tuple[str, LevelFigure | None], ...] = ()
    """The engine's adaptive contenders' figures here, by key (``a``, ``b``)."""

    @property
    def margin_pct(self) -> float | None:
        """How far the best leads the runner-up, percent."""
        if self.best is None or self.runner_up is None:
            return None
        return _pct(self.best.value, self.runner_up.value)

    @property
    def tied(self) -> bool:
        """The lead is not shown to be real: the intervals overlap or it is within the noise."""
        if self.best is None or self.runner_up is None:
            return False
        margin = self.margin_pct or 0.0
        return self.best.low <= self.runner_up.high or margin <= self.noise_pct

    @property
    def gain(self) -> tuple[float, float, float] | None:
        """(gain, low, high) percent of the best speculative over no speculation."""
        return gain_range(self.speculative, self.baseline, self.noise_pct)

    def contender(self, key: str) -> LevelFigure | None:
        """The adaptive contender ``key``'s figure here."""
        return dict(self.contenders).get(key)

    @property
    def pays(self) -> bool | None:
        """Speculation beats none here beyond the noise (None: not both measured)."""
        gain = self.gain
        return None if gain is None else gain[1] > 0.0

    @property
    def single_behind(self) -> float | None:
        """How far (percent, negative) the single best static falls behind this level's
        best, when that is real: another configuration, outside the intervals and beyond
        the noise (None: the single best is this level's best, or the gap is noise)."""
        single, top = self.single, self.best
        if single is None or top is None or single.trial.config == top.trial.config:
            return None
        gap = _pct(single.value, top.value)
        if gap is None or -gap <= self.noise_pct or single.high >= top.low:
            return None
        return gap

    def versus(self, other: LevelFigure | None) -> float | None:
        """The schedule's figure against ``other``'s, percent."""
        if self.schedule is None or other is None:
            return None
        return _pct(self.schedule.value, other.value)


@dataclass(frozen=True, slots=True)
class LevelTable:
    """The per-level answer for a set of records."""

    rows: tuple[LevelRow, ...]
    single: TrialRecord | None
    """The single best static configuration by the goal (what one static deploy would be)."""
    schedule: TrialRecord | None
    """The last schedule trial that was benchmarked."""
    contenders: tuple[Contender, ...] = ()
    """The engine's own adaptive mode beside :attr:`schedule` (its defaults, over its
    lengths), each with its trial or the engine's reason it has none."""
    candidates: tuple[TrialRecord, ...] = ()
    """Every feasible static trial and baseline the levels' bests were chosen from."""

    @property
    def stops_paying(self) -> int | None:
        """The smallest level from which speculation never pays again (None: it pays at the
        top of the ladder, or it was not measured against no speculation)."""
        return _stop([(r.concurrency, r.pays) for r in self.rows])

    def breakeven(self, trial: TrialRecord) -> int | None:
        """``trial``'s break-even concurrency: the smallest level from which it never beats
        no speculation beyond the noise (None: it pays at the top of the ladder, or it was
        not measured against no speculation)."""
        paying = []
        for row in self.rows:
            gain = gain_range(level_figure(trial, row.concurrency), row.baseline, row.noise_pct)
            paying.append((row.concurrency, None if gain is None else gain[1] > 0.0))
        return _stop(paying)

    def rivalry(self, key: str) -> Rivalry | None:
        """The schedule against the adaptive contender ``key`` (None: either did not run)."""
        pairs = [
            (r.concurrency, r.schedule.value, f.value, r.best.value if r.best else None)
            for r in self.rows
            if r.schedule is not None and (f := r.contender(key)) is not None and f.value > 0
        ]
        if not pairs:
            return None
        weakest = min(pairs, key=lambda p: p[2] / p[3] if p[3] else p[2] / p[1])
        worst = min(pairs, key=lambda p: p[1] / p[2])
        best = max(pairs, key=lambda p: p[1] / p[2])
        noise = self.rows[0].noise_pct if self.rows else 0.0

        def gap(p: tuple[int, float, float, float | None]) -> tuple[int, float]:
            return p[0], (p[1] / p[2] - 1.0) * 100.0

        return Rivalry(key, gap(weakest), gap(worst), gap(best), noise)

    @property
    def has_baseline(self) -> bool:
        return any(r.baseline is not None for r in self.rows)

    @property
    def worst_single(self) -> LevelRow | None:
        """The level where the single best static falls furthest behind the level's best,
        beyond the noise (None: it is the best, or within the noise, at every level)."""
        rows = [r for r in self.rows if r.single_behind is not None]
        if not rows:
            return None
        return min(rows, key=lambda r: r.single_behind or 0.0)


@dataclass(frozen=True, slots=True)
class Rivalry:
    """The schedule against one of the engine's adaptive contenders, level by level."""

    key: str
    at_weakest: tuple[int, float]
    """(level, the schedule's margin over the contender there, percent) at the contender's
    weakest level: where it falls furthest behind the level's best static."""
    worst: tuple[int, float]
    """The level where the schedule is furthest below the contender (or least above)."""
    best: tuple[int, float]
    """The level where the schedule is furthest above it."""
    noise_pct: float

    @property
    def contender_wins(self) -> bool:
        """The engine's mode is ahead beyond the noise somewhere and never behind beyond it:
        the sweep should deploy it."""
        return self.worst[1] < -self.noise_pct and self.best[1] <= self.noise_pct


def _stop(paying: list[tuple[int, bool | None]]) -> int | None:
    """The smallest level from which it never pays again (levels in ladder order)."""
    measured = [(c, p) for c, p in paying if p is not None]
    if not measured or measured[-1][1]:
        return None
    start = None
    for concurrency, pays in reversed(measured):
        if pays:
            break
        start = concurrency
    return start


def role_of(trial: TrialRecord) -> Role:
    """What the trial ran, as its engine says (static, baseline, schedule, adaptive,
    what-if), or that it re-measured a configuration under other settings."""
    if trial.remeasure is not None:
        return Role.REMEASURE
    return config_role(trial.effective)


def _best_two(figures: list[LevelFigure]) -> tuple[LevelFigure | None, LevelFigure | None]:
    ranked = sorted(figures, key=lambda f: (-f.value, f.trial.index))
    if not ranked:
        return None, None
    top = ranked[0]
    other = next((f for f in ranked[1:] if f.trial.config != top.trial.config), None)
    return top, other


def level_table(trials: Sequence[TrialRecord], goal: Goal, noise_pct: float = 1.0) -> LevelTable:
    """The per-level table of ``trials`` under ``goal`` (see the module docstring)."""
    feasible = [t for t in trials if goal.feasible(t)]
    roles = {t.index: role_of(t) for t in feasible}
    candidates = [t for t in feasible if roles[t.index] in (Role.STATIC, Role.BASELINE)]
    schedules = [t for t in feasible if roles[t.index] is Role.SCHEDULE and t.levels]
    single = assess(candidates, goal).best
    rivals = contenders(schedules[-1].config if schedules else None, trials)
    ran = [(c.key, c.trial) for c in rivals if c.trial is not None and c.trial.levels]
    ladder = sorted({lv.concurrency for t in candidates + schedules for lv in t.levels})
    rows: list[LevelRow] = []
    for c in ladder:
        figures = [f for t in candidates if (f := level_figure(t, c)) is not None]
        best, runner = _best_two(figures)
        base = [f for f in figures if roles[f.trial.index] is Role.BASELINE]
        spec = [f for f in figures if roles[f.trial.index] is Role.STATIC]
        rows.append(
            LevelRow(
                concurrency=c,
                best=best,
                runner_up=runner,
                baseline=_best_two(base)[0],
                speculative=_best_two(spec)[0],
                schedule=level_figure(schedules[-1], c) if schedules else None,
                single=level_figure(single, c) if single is not None else None,
                noise_pct=noise_pct,
                contenders=tuple((key, level_figure(t, c)) for key, t in ran),
            )
        )
    last = schedules[-1] if schedules else None
    return LevelTable(tuple(rows), single, last, rivals, tuple(candidates))


@dataclass(frozen=True, slots=True)
class WhatIf:
    """The what-if trials that fixed one acceptance, and each level's best of them: what the
    box would do with a draft that accepts that much (never mixed with the measured table)."""

    fixed: str
    """How they fixed it (``Engine.fixed_acceptance``)."""
    trials: tuple[TrialRecord, ...]
    bests: tuple[tuple[int, LevelFigure], ...]
    """(concurrency, the best what-if trial's figure there), in ladder order."""


def what_ifs(trials: Sequence[TrialRecord]) -> tuple[WhatIf, ...]:
    """The ``ok`` what-if trials, grouped by the acceptance they fixed, with per-level bests."""
    from specconsole.core.engine.registry import engine_for

    groups: dict[str, list[TrialRecord]] = {}
    for t in trials:
        if t.status.value == "ok" and t.levels and role_of(t) is Role.WHAT_IF:
            said = engine_for(t.effective).fixed_acceptance(t.effective) or ""
            groups.setdefault(said, []).append(t)
    out = []
    for fixed, members in groups.items():
        ladder = sorted({lv.concurrency for t in members for lv in t.levels})
        bests = []
        for c in ladder:
            figures = [f for t in members if (f := level_figure(t, c)) is not None]
            bests.append((c, max(figures, key=lambda f: (f.value, -f.trial.index))))
        out.append(WhatIf(fixed, tuple(members), tuple(bests)))
    return tuple(out)
