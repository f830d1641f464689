"""What "best" means: the objective a sweep optimises and the constraints it must meet.

Why its own module: the optimising strategy, ``[sweep] finally = "best"``, the report and the
console all have to agree on which trial is best, so the rule lives once, as a pure function
of the recorded trials. A plan says it in TOML (``[sweep]``)::

    objective = "peak_aggregate"             # or "single_request", "aggregate_at_64", ...
    objective = { aggregate_at = 64 }        # the aggregate tok/s at concurrency 64
    objective = { weighted = { single_request = 1.0, peak_aggregate = 0.1 } }
    objective = { pareto = ["single_request", "peak_aggregate"] }
    constraints = ["ttft_p99_ms_at_64 <= 2000", "single_request >= 200"]

Metrics are named after the keys the trial records already use (``trials.jsonl``: the
headline ``single_request_tok_s`` / ``peak_aggregate_tok_s``, each level's ``output_tok_s``,
``per_request_tok_s``, ``ttft_p50_ms``...; ``_at_C`` picks the ladder level with concurrency
C). Each metric has a better direction: throughputs are maximised, latencies minimised. A
weighted sum adds each metric in its better direction (a latency's weight subtracts), so
weights are positive and carry the units ("0.1 per tok/s"). A Pareto pair has no single
best; :func:`best` then picks the front's balanced member (largest sum of both metrics
normalised over the front) and :func:`pareto_front` gives the whole front.

Only ``ok`` trials have figures; a trial that misses a constraint (or lacks the figure a
constraint names) is *infeasible* and never best. Noise: a score carries an interval (the
confidence interval of repeated benchmark levels when the record has one, else the single
figure itself); two feasible trials whose intervals overlap are *tied*
(:func:`assess`), and an improvement counts only when it clears the incumbent's interval by
more than the noise (:func:`improves`).

The TOML forms are read by ``core.plans.goalparse``; its mistakes raise :class:`ObjectiveError`,
whose message names the field and the fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from specconsole.core.engine.schedule import Role, config_role
from specconsole.core.measure.trials import LevelSummary, TrialRecord, TrialStatus


class ObjectiveError(ValueError):
    """An objective or constraint is wrong; the message names the field and the fix."""


class Direction(StrEnum):
    MAXIMIZE = "maximize"
    MINIMIZE = "minimize"


@dataclass(frozen=True, slots=True)
class MetricKind:
    """One family of figures a trial record holds."""

    name: str
    """Canonical name (``aggregate_at`` for ``aggregate_at_64``)."""
    direction: Direction
    unit: str
    per_level: bool
    """True when the name needs ``_at_C`` (a ladder level)."""
    level_field: str = ""
    """The ``LevelSummary`` field for a per-level metric."""


METRIC_KINDS: dict[str, MetricKind] = {
    k.name: k
    for k in (
        MetricKind("single_request", Direction.MAXIMIZE, "tok/s", False),
        MetricKind("peak_aggregate", Direction.MAXIMIZE, "tok/s", False),
        MetricKind("accept_length", Direction.MAXIMIZE, "tokens", False),
        MetricKind("capacity", Direction.MAXIMIZE, "KV tokens", False),
        MetricKind("max_rate_under_slo", Direction.MAXIMIZE, "req/s", False),
        MetricKind("aggregate_at", Direction.MAXIMIZE, "tok/s", True, "output_tok_s"),
        MetricKind("per_request_at", Direction.MAXIMIZE, "tok/s", True, "per_request_tok_s"),
        MetricKind("ttft_p50_ms_at", Direction.MINIMIZE, "ms", True, "ttft_p50_ms"),
        MetricKind("ttft_p99_ms_at", Direction.MINIMIZE, "ms", True, "ttft_p99_ms"),
        MetricKind("itl_p50_ms_at", Direction.MINIMIZE, "ms", True, "itl_p50_ms"),
        MetricKind("itl_p99_ms_at", Direction.MINIMIZE, "ms", True, "itl_p99_ms"),
    )
}
METRIC_ALIASES = {
    "single_request_tok_s": "single_request",
    "peak_aggregate_tok_s": "peak_aggregate",
    "output_tok_s_at": "aggregate_at",
    "per_request_tok_s_at": "per_request_at",
}
"""The record's own key names are accepted too."""

METRIC_HELP = (
    "single_request, peak_aggregate, accept_length, capacity, max_rate_under_slo, "
    "aggregate_at_C, per_request_at_C, ttft_p50_ms_at_C, ttft_p99_ms_at_C, itl_p50_ms_at_C, "
    "itl_p99_ms_at_C (C: a concurrency of the [bench] ladder)"
)


@dataclass(frozen=True, slots=True)
class Metric:
    """A named figure of a trial, e.g. ``ttft_p99_ms_at_64``."""

    kind: MetricKind
    concurrency: int | None = None

    @property
    def name(self) -> str:
        if self.concurrency is None:
            return self.kind.name
        return f"{self.kind.name}_{self.concurrency}"

    @property
    def direction(self) -> Direction:
        return self.kind.direction

    def sign(self) -> float:
        """+1 when larger is better, -1 when smaller is."""
        return 1.0 if self.direction is Direction.MAXIMIZE else -1.0

    def value(self, trial: TrialRecord) -> float | None:
        """The trial's figure (None when the record does not hold it)."""
        interval = self.interval(trial)
        return None if interval is None else interval[0]

    def interval(self, trial: TrialRecord) -> tuple[float, float, float] | None:
        """(value, low, high): the figure and its confidence interval (the figure itself
        when the record has no repeats)."""
        name = self.kind.name
        if name == "accept_length":
            return _point(trial.accept_length)
        if name == "capacity":
            return _point(None if trial.capacity is None else float(trial.capacity))
        if name == "max_rate_under_slo":  # the rate search's answer (core.search.ratesearch)
            return _point(trial.slo_rate)
        level, field = self.level_field(trial)
        return _level_interval(level, field)

    def level_field(self, trial: TrialRecord) -> tuple[LevelSummary | None, str]:
        """The level a per-level figure is read from and the ``LevelSummary`` field
        (``(None, "")`` for a figure of the whole trial)."""
        name = self.kind.name
        if name == "single_request":
            return _lowest(trial.levels), "per_request_tok_s"
        if name == "peak_aggregate":
            return _peak(trial.levels), "output_tok_s"
        if not self.kind.per_level:
            return None, ""
        level = next((lv for lv in trial.levels if lv.concurrency == self.concurrency), None)
        return level, self.kind.level_field

    def runs(self, trial: TrialRecord) -> int:
        """How many benchmark runs the figure averages (a level's ``repeats``; 1 otherwise)."""
        level, _field = self.level_field(trial)
        return 1 if level is None else max(1, level.repeats)


def _lowest(levels: Sequence[LevelSummary]) -> LevelSummary | None:
    return min(levels, key=lambda lv: lv.concurrency) if levels else None


def _peak(levels: Sequence[LevelSummary]) -> LevelSummary | None:
    return max(levels, key=lambda lv: lv.output_tok_s) if levels else None


def _point(value: float | None) -> tuple[float, float, float] | None:
    return None if value is None else (value, value, value)


def _level_interval(level: LevelSummary | None, field: str) -> tuple[float, float, float] | None:
    """A level's figure with its interval: ``<field>_ci`` (low, high) when the level was
    repeated, else the figure itself."""
    if level is None:
        return None
    value = getattr(level, field, None)
    if value is None:
        return None
    ci = getattr(level, f"{field}_ci", None)
    if ci is None:
        return (float(value), float(value), float(value))
    low, high = ci
    return (float(value), float(min(low, value)), float(max(high, value)))


# --------------------------------------------------------------------------------------------
# Objectives and constraints
# --------------------------------------------------------------------------------------------


class ObjectiveKind(StrEnum):
    METRIC = "metric"
    WEIGHTED = "weighted"
    PARETO = "pareto"


@dataclass(frozen=True, slots=True)
class Objective:
    """One metric, a weighted sum of metrics, or a Pareto pair."""

    kind: ObjectiveKind
    terms: tuple[tuple[Metric, float], ...]
    """(metric, weight); weight 1 for a single metric and for each member of a pair."""

    @property
    def metrics(self) -> tuple[Metric, ...]:
        return tuple(m for m, _w in self.terms)

    @property
    def describe(self) -> str:
        if self.kind is ObjectiveKind.METRIC:
            return self.terms[0][0].name
        if self.kind is ObjectiveKind.PARETO:
            return "pareto(" + ", ".join(m.name for m in self.metrics) + ")"
        return " + ".join(f"{w:g}*{m.name}" for m, w in self.terms)

    def interval(self, trial: TrialRecord) -> tuple[float, float, float] | None:
        """(score, low, high) to maximise, or None without the figures. A Pareto pair's
        scalar score is its first metric (its front is :func:`pareto_front`)."""
        if self.kind is ObjectiveKind.PARETO:
            metric = self.terms[0][0]
            got = metric.interval(trial)
            return None if got is None else _signed(got, metric.sign())
        total = [0.0, 0.0, 0.0]
        for metric, weight in self.terms:
            got = metric.interval(trial)
            if got is None:
                return None
            v, lo, hi = _signed(got, metric.sign() * weight)
            total[0] += v
            total[1] += lo
            total[2] += hi
        return (total[0], total[1], total[2])

    def score(self, trial: TrialRecord) -> float | None:
        got = self.interval(trial)
        return None if got is None else got[0]


def _signed(got: tuple[float, float, float], factor: float) -> tuple[float, float, float]:
    v, lo, hi = (x * factor for x in got)
    return (v, min(lo, hi), max(lo, hi))


class Op(StrEnum):
    LE = "<="
    LT = "<"
    GE = ">="
    GT = ">"


@dataclass(frozen=True, slots=True)
class Constraint:
    """``metric op bound``, e.g. ``ttft_p99_ms_at_64 <= 2000``."""

    metric: Metric
    op: Op
    bound: float

    @property
    def text(self) -> str:
        return f"{self.metric.name} {self.op.value} {self.bound:g}"

    def violation(self, trial: TrialRecord) -> float | None:
        """How far the trial misses the bound, relative to the bound (0 when met; None when
        the record lacks the figure)."""
        value = self.metric.value(trial)
        if value is None:
            return None
        scale = max(abs(self.bound), 1e-9)
        if self.op in (Op.LE, Op.LT):
            over = value - self.bound
            met = value <= self.bound if self.op is Op.LE else value < self.bound
        else:
            over = self.bound - value
            met = value >= self.bound if self.op is Op.GE else value > self.bound
        return 0.0 if met else max(over, 0.0) / scale + 1e-9

    def met(self, trial: TrialRecord) -> bool:
        return self.violation(trial) == 0.0


@dataclass(frozen=True, slots=True)
class Goal:
    """The objective and the constraints together: what the sweep is after."""

    objective: Objective
    constraints: tuple[Constraint, ...] = ()

    @property
    def metrics(self) -> tuple[Metric, ...]:
        return (*self.objective.metrics, *(c.metric for c in self.constraints))

    @property
    def describe(self) -> str:
        text = f"maximise {self.objective.describe}"
        if self.constraints:
            text += " subject to " + ", ".join(c.text for c in self.constraints)
        return text

    def violation(self, trial: TrialRecord) -> float | None:
        """Total relative violation (0: feasible); None when the trial has no figures
        (not ok, or a figure the goal needs is missing), ran without the speculation it
        asked for (``speculation_off``: it never wins a sweep), with its acceptance fixed
        (a what-if, ``core.engine.schedule.Role``) or re-measured a configuration under
        other benchmark settings (``TrialRecord.remeasure``)."""
        if trial.status is not TrialStatus.OK or self.objective.interval(trial) is None:
            return None
        if trial.speculation_off or config_role(trial.effective) is Role.WHAT_IF:
            return None  # never measured with the real draft's acceptance: never the best
        if trial.remeasure is not None:
            return None  # measured at other levels or on other traffic than the plan's
        total = 0.0
        for c in self.constraints:
            v = c.violation(trial)
            if v is None:
                return None
            total += v
        return total

    def feasible(self, trial: TrialRecord) -> bool:
        return self.violation(trial) == 0.0

    def check_ladder(self, ladder: Sequence[int], where: str = "[sweep]") -> None:
        """Every ``_at_C`` must name a level of the ladder (else no trial can ever have it)."""
        for metric in self.metrics:
            if metric.concurrency is not None and metric.concurrency not in ladder:
                levels = ", ".join(map(str, ladder))
                raise ObjectiveError(
                    f"{where}: {metric.name} needs concurrency {metric.concurrency} in "
                    f"[bench] ladder (it has {levels}); add it to the ladder or use one "
                    "of its levels"
                )


PEAK_AGGREGATE = Objective(ObjectiveKind.METRIC, ((Metric(METRIC_KINDS["peak_aggregate"]), 1.0),))
DEFAULT_GOAL = Goal(PEAK_AGGREGATE)
"""Without an ``objective`` key a sweep is after the peak aggregate throughput."""


# --------------------------------------------------------------------------------------------
# Judging recorded trials
# --------------------------------------------------------------------------------------------


def feasible_trials(trials: Iterable[TrialRecord], goal: Goal = DEFAULT_GOAL) -> list[TrialRecord]:
    """The ``ok`` trials that meet every constraint and have the objective's figures."""
    return [t for t in trials if goal.feasible(t)]


def _dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(x >= y for x, y in zip(a, b, strict=True)) and a != b


def _pair(trial: TrialRecord, metrics: Sequence[Metric]) -> tuple[float, ...]:
    out: list[float] = []
    for m in metrics:
        v = m.value(trial)
        out.append(-float("inf") if v is None else v * m.sign())
    return tuple(out)


def pareto_front(
    trials: Iterable[TrialRecord],
    goal: Goal = DEFAULT_GOAL,
    metrics: Sequence[Metric] | None = None,
) -> list[TrialRecord]:
    """Feasible trials no other feasible trial beats on both metrics (the goal's Pareto
    pair, else ``metrics``, else single-request vs peak aggregate), in trial order."""
    if metrics is None:
        metrics = (
            goal.objective.metrics
            if goal.objective.kind is ObjectiveKind.PARETO
            else (Metric(METRIC_KINDS["single_request"]), Metric(METRIC_KINDS["peak_aggregate"]))
        )
    pool = [
        t for t in feasible_trials(trials, goal) if all(m.value(t) is not None for m in metrics)
    ]
    points = [_pair(t, metrics) for t in pool]
    return [
        t for t, p in zip(pool, points, strict=True) if not any(_dominates(q, p) for q in points)
    ]


def _balanced(front: Sequence[TrialRecord], metrics: Sequence[Metric]) -> TrialRecord:
    points = [_pair(t, metrics) for t in front]
    lows = [min(p[i] for p in points) for i in range(len(metrics))]
    highs = [max(p[i] for p in points) for i in range(len(metrics))]

    def norm(p: tuple[float, ...]) -> float:
        return sum(
            (p[i] - lows[i]) / (highs[i] - lows[i]) if highs[i] > lows[i] else 1.0
            for i in range(len(metrics))
        )

    best_i = max(range(len(front)), key=lambda i: (norm(points[i]), -front[i].index))
    return front[best_i]


def best(trials: Iterable[TrialRecord], goal: Goal = DEFAULT_GOAL) -> TrialRecord | None:
    """The best feasible trial (ties on the score go to the earlier trial), or None."""
    pool = feasible_trials(trials, goal)
    if not pool:
        return None
    if goal.objective.kind is ObjectiveKind.PARETO:
        return _balanced(pareto_front(pool, goal), goal.objective.metrics)
    return max(pool, key=lambda t: (goal.objective.score(t) or 0.0, -t.index))


def progress(
    trials: Sequence[TrialRecord], goal: Goal = DEFAULT_GOAL
) -> tuple[tuple[int, float, float], ...]:
    """(trial number, score, best feasible score so far) of every trial with a score, in
    order: the objective over trials (scores shown in the metric's own sign)."""
    out: list[tuple[int, float, float]] = []
    top: float | None = None
    single = goal.objective.kind is not ObjectiveKind.WEIGHTED
    sign = goal.objective.terms[0][0].sign() if single else 1.0
    for t in trials:
        score = goal.objective.score(t)
        if score is None:
            continue
        if goal.feasible(t) and (top is None or score > top):
            top = score
        out.append((t.index + 1, score * sign, (score if top is None else top) * sign))
    return tuple(out)
