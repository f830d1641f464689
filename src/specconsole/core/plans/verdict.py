"""Judging recorded trials against each other, inside the measured noise: ties, improvements,
the assessment every view shows.

Why its own module: :mod:`core.plans.objective` says what a figure *is*; this module says what
a difference between two figures *means*. A real engine's figures move by a few percent from
one load to the next, so "trial 5 beats trial 3" holds only when the difference exceeds the
noise — measured from the session's own records (``core.measure.noise``: repeated levels,
configurations measured by more than one trial), or, where nothing was measured twice, from
the confidence intervals alone. The same rule decides for the report's "best", ``specconsole
best``, the optimiser's convergence, the contender repeat and pruning
(``core.search.prune``): none of them treats a difference inside the noise band as real.

* :func:`tied` — two trials' intervals overlap, or their difference is inside the band;
* :func:`improves` — a candidate clears the incumbent beyond the intervals, the band and the
  plan's ``noise_pct`` floor;
* :func:`assess` — the best, the trials tied with it ("tie"), the Pareto front, the
  constraint misses and the band itself.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from specconsole.core.measure.identity import identity
from specconsole.core.measure.noise import NoiseBand, Sample, pool
from specconsole.core.measure.trials import TrialRecord, TrialStatus
from specconsole.core.plans.objective import (
    DEFAULT_GOAL,
    Goal,
    ObjectiveKind,
    best,
    feasible_trials,
    pareto_front,
)

__all__ = ["Assessment", "assess", "improves", "marks", "measured_noise", "tied"]

_MEASURED = object()
"""``assess(noise=...)``'s default: measure the band from the trials themselves."""


def measured_noise(trials: Iterable[TrialRecord], goal: Goal = DEFAULT_GOAL) -> NoiseBand | None:
    """The noise of the goal's figure, pooled over the ``ok`` trials' repeated levels and the
    configurations several ``ok`` trials measured (None: nothing was measured twice, or the
    goal is not one metric)."""
    objective = goal.objective
    if objective.kind is not ObjectiveKind.METRIC:
        return None
    metric = objective.terms[0][0]
    samples: list[Sample] = []
    same: dict[object, list[TrialRecord]] = defaultdict(list)
    for trial in trials:
        if trial.status is not TrialStatus.OK or trial.speculation_off:
            continue
        got = metric.interval(trial)
        if got is None:
            continue
        same[identity(trial.config)].append(trial)
        level, field = metric.level_field(trial)
        spread = None if level is None else getattr(level, f"{field}_spread", None)
        if spread is not None and spread.n >= 2:
            samples.append(
                Sample(
                    spread.n, spread.mean, spread.std, f"trial {trial.index + 1} ({spread.n} runs)"
                )
            )
    for group in same.values():
        if len(group) >= 2:
            values = [v for t in group if (v := metric.value(t)) is not None]
            numbers = " and ".join(str(t.index + 1) for t in group)
            samples.append(Sample.of(values, f"trials {numbers} measured one configuration"))
    return pool(samples)


def _overlap(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    return a[1] <= b[2] and b[1] <= a[2]


def tied(
    a: TrialRecord,
    b: TrialRecord,
    goal: Goal = DEFAULT_GOAL,
    noise: NoiseBand | None = None,
) -> bool:
    """True when the difference between the two trials is not shown to be real: their
    objective intervals overlap, or (with a measured ``noise`` band) their scores differ
    by no more than the band for figures measured that many times."""
    ia, ib = goal.objective.interval(a), goal.objective.interval(b)
    if ia is None or ib is None:
        return False
    if _overlap(ia, ib):
        return True
    if noise is None or goal.objective.kind is not ObjectiveKind.METRIC:
        return False
    metric = goal.objective.terms[0][0]
    return not noise.differ(ia[0], ib[0], metric.runs(a), metric.runs(b))


def improves(
    candidate: TrialRecord,
    incumbent: TrialRecord | None,
    goal: Goal = DEFAULT_GOAL,
    *,
    noise_pct: float = 0.0,
    noise: NoiseBand | None = None,
) -> bool:
    """True when ``candidate`` is feasible and beats ``incumbent`` beyond the noise: its
    interval's low end clears the incumbent's high end, by more than ``noise_pct`` of the
    incumbent's score (the floor when nothing was measured twice), and the difference is
    outside the measured band."""
    if not goal.feasible(candidate):
        return False
    if incumbent is None:
        return True
    ic, ii = goal.objective.interval(candidate), goal.objective.interval(incumbent)
    if ic is None or ii is None:
        return ic is not None
    margin = abs(ii[0]) * noise_pct / 100.0
    if not (ic[1] > ii[2] + margin and ic[0] > ii[0] + margin):
        return False
    return not tied(candidate, incumbent, goal, noise)


@dataclass(frozen=True, slots=True)
class Assessment:
    """The verdict on a set of trials, for reports, the console and ``finally = "best"``."""

    goal: Goal
    best: TrialRecord | None
    tied: tuple[TrialRecord, ...]
    """Other feasible trials tied with the best (intervals overlap, or the difference is
    inside the measured noise band)."""
    front: tuple[TrialRecord, ...]
    """The Pareto front (the goal's pair, or single-request vs peak aggregate)."""
    infeasible: tuple[TrialRecord, ...]
    """``ok`` trials that miss a constraint."""
    noise: NoiseBand | None = None
    """The band the ties were judged with (None: intervals only)."""

    @property
    def sentence(self) -> str:
        """One line: the best trial, its score and who it is tied with."""
        if self.best is None:
            if self.infeasible:
                return (
                    f"no trial meets the constraints ({len(self.infeasible)} loaded but "
                    "missed them)"
                )
            return "no successful trial yet"
        got = self.goal.objective.interval(self.best)
        text = f"best: trial {self.best.index + 1}"
        if got is not None and self.goal.objective.kind is not ObjectiveKind.PARETO:
            v, lo, hi = got
            text += f" ({self.goal.objective.describe} {abs(v):,.1f}"
            if hi > lo:
                text += f", {abs(lo):,.1f}-{abs(hi):,.1f}"
            text += ")"
        if self.tied:
            others = ", ".join(str(t.index + 1) for t in self.tied)
            text += f"; statistically tied with trial{'s' if len(self.tied) > 1 else ''} {others}"
            if self.noise is not None:
                text += f" (tie: inside the measured noise, ±{self.noise.pct:.1f} %)"
        return text

    @property
    def tie(self) -> bool:
        """Whether the best is not shown to be better than another trial."""
        return bool(self.tied)


def assess(
    trials: Sequence[TrialRecord],
    goal: Goal = DEFAULT_GOAL,
    noise: NoiseBand | object | None = _MEASURED,
) -> Assessment:
    """Best, ties, front and constraint misses of the recorded trials; ties are judged with
    ``noise`` (default: the band measured from ``trials`` themselves, :func:`measured_noise`;
    None: intervals only)."""
    band = measured_noise(trials, goal) if noise is _MEASURED else noise
    assert band is None or isinstance(band, NoiseBand)
    top = best(trials, goal)
    pool_ = feasible_trials(trials, goal)
    ties: tuple[TrialRecord, ...] = ()
    if top is not None and goal.objective.kind is not ObjectiveKind.PARETO:
        ties = tuple(t for t in pool_ if t is not top and tied(t, top, goal, band))
    missed = tuple(
        t for t in trials if t.status is TrialStatus.OK and goal.violation(t) not in (None, 0.0)
    )
    return Assessment(
        goal=goal,
        best=top,
        tied=ties,
        front=tuple(pareto_front(trials, goal)),
        infeasible=missed,
        noise=band,
    )


def marks(trials: Sequence[TrialRecord], goal: Goal = DEFAULT_GOAL) -> dict[int, str]:
    """Trial index → ``"best"``, ``"tied"`` (tied with the best) or ``"pareto"`` (on the
    front), for tables that mark them."""
    verdict = assess(trials, goal)
    out = {t.index: "pareto" for t in verdict.front}
    out.update({t.index: "tied" for t in verdict.tied})
    if verdict.best is not None:
        out[verdict.best.index] = "best"
    return out
