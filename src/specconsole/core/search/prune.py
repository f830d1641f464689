"""Incumbent pruning: a candidate that cannot win stops after the level that decides.

Why: on a real box every trial costs a load and a ladder of five levels. When the objective
is decided at one level — ``aggregate_at_64`` at c=64, ``single_request`` at the lowest
level, ``peak_aggregate`` where the best trial peaked — a candidate that is already beaten
there beyond the noise will not become the best by running the other levels. So, with
``[sweep] prune`` (on by default for ``optimize`` and ``staged``, off for the walks, whose
seed tables stay complete), the benchmark runs that *lead* level first (``BenchSpec.lead``)
and the machine stops the ladder after it when :func:`verdict` says the candidate lost; the
trial is recorded as ``pruned`` with the figure that decided it (``TrialRecord.prune``),
never as a crash or a failure, never as the best. For ``max_rate_under_slo`` the lead is a
rate probe ``prune_margin_pct`` under the best trial's rate (``core.search.ratesearch``): a
candidate that cannot hold the SLOs there cannot beat it.

The rule (in the objective's better direction, so a latency is negated first):

    pruned  when  candidate < incumbent − margin − t(0.975, n−1) · s · √(1 + 1/n)

``margin`` is ``prune_margin_pct`` % of the incumbent's figure (default 5: one benchmark run
of a configuration varies by a few percent, so a candidate within that of the best runs
its ladder); when the incumbent's deciding figure was repeated (``[bench] repeats = n``)
``s`` is its per-run standard deviation and the last term is the 95 % prediction interval
of one more run (``core.measure.stats.t_975``) — the candidate's single run must fall below
it too; without repeats that term is 0. When the session has *measured* its noise
(``core.plans.verdict.measured_noise``: repeated levels, configurations measured by several
trials) and that band is wider than both terms together, the band is the bar: a candidate is
never pruned on a difference inside the measured noise. Exact for a per-level objective and for
``single_request``; for ``peak_aggregate`` it is the searcher's heuristic (a candidate beaten
where the best peaked might peak higher elsewhere), which is why it is an option. Weighted
and Pareto objectives, ``accept_length`` and ``capacity`` have no deciding level and are
never pruned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from specconsole.core.measure.noise import NoiseBand
from specconsole.core.measure.stats import t_975
from specconsole.core.measure.trials import LevelSummary, PruneInfo, TrialRecord, TrialStatus
from specconsole.core.plans.objective import Metric, ObjectiveKind, best
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.plans.verdict import measured_noise

_LEVEL_KINDS = frozenset(
    {
        "aggregate_at",
        "per_request_at",
        "ttft_p50_ms_at",
        "ttft_p99_ms_at",
        "itl_p50_ms_at",
        "itl_p99_ms_at",
    }
)


def deciding_metric(plan: SweepPlan) -> Metric | None:
    """The objective's one metric when it is decided at one level or probe, else None."""
    objective = plan.goal.objective
    if objective.kind is not ObjectiveKind.METRIC:
        return None
    metric = objective.terms[0][0]
    name = metric.kind.name
    if name in _LEVEL_KINDS or name in ("single_request", "peak_aggregate", "max_rate_under_slo"):
        return metric
    return None


def incumbent(plan: SweepPlan, trials: Sequence[TrialRecord]) -> TrialRecord | None:
    """The trial to beat: the best by the plan's goal, when pruning applies at all."""
    if not plan.pruning or deciding_metric(plan) is None:
        return None
    return best(trials, plan.goal)


def lead_level(plan: SweepPlan, trials: Sequence[TrialRecord]) -> int | None:
    """The concurrency the next benchmark runs first, or None (no pruning, no incumbent,
    no deciding level, or a rate objective)."""
    top = incumbent(plan, trials)
    metric = deciding_metric(plan)
    if top is None or metric is None:
        return None
    name = metric.kind.name
    ladder = plan.bench.ladder
    if metric.concurrency is not None:
        return metric.concurrency
    if name == "single_request":
        return min(ladder)
    if name == "peak_aggregate" and top.peak_concurrency in ladder:
        return top.peak_concurrency
    return None


def _noise(metric: Metric, top: TrialRecord) -> float:
    """The prediction-interval term of one more run from the incumbent's repeats (0 when
    its figure was measured once)."""
    name = metric.kind.name
    level: LevelSummary | None
    if name == "peak_aggregate":
        level = top.peak_level
    elif name == "single_request":
        level = min(top.levels, key=lambda lv: lv.concurrency) if top.levels else None
    else:
        level = next((lv for lv in top.levels if lv.concurrency == metric.concurrency), None)
    if level is None or name not in (
        "single_request",
        "per_request_at",
        "peak_aggregate",
        "aggregate_at",
    ):
        return 0.0  # latencies are recorded without an interval
    per_request = name in ("single_request", "per_request_at")
    spread = level.per_request_tok_s_spread if per_request else level.output_tok_s_spread
    if spread is None or spread.n < 2:
        return 0.0
    return t_975(spread.n - 1) * spread.std * math.sqrt(1.0 + 1.0 / spread.n)


def threshold(
    plan: SweepPlan, top: TrialRecord, metric: Metric, noise: NoiseBand | None = None
) -> float | None:
    """The figure (in the metric's own sign) a candidate must reach at the lead to stay:
    the incumbent's less ``prune_margin_pct`` and the prediction interval of its own
    repeats, or less the measured noise band (``core.measure.noise``: one run against the
    incumbent's) when that is wider."""
    value = metric.value(top)
    if value is None:
        return None
    signed = value * metric.sign()
    margin = abs(value) * plan.prune_margin_pct / 100.0 + _noise(metric, top)
    if noise is not None:
        margin = max(margin, abs(value) * noise.half_width(1, metric.runs(top)))
    return (signed - margin) * metric.sign()


def verdict(
    plan: SweepPlan, trials: Sequence[TrialRecord], level: LevelSummary
) -> PruneInfo | None:
    """The pruning decision after the lead level measured ``level``: a :class:`PruneInfo`
    when the candidate fell short of the incumbent beyond the noise, else None."""
    top = incumbent(plan, trials)
    metric = deciding_metric(plan)
    if top is None or metric is None or metric.kind.name == "max_rate_under_slo":
        return None
    if level.concurrency != lead_level(plan, trials):
        return None
    bar = threshold(plan, top, metric, measured_noise(trials, plan.goal))
    probe = TrialRecord(index=-1, config=top.config, status=TrialStatus.OK, levels=(level,))
    value = metric.value(probe)
    best_value = metric.value(top)
    if bar is None or value is None or best_value is None:
        return None
    if value * metric.sign() >= bar * metric.sign():
        return None
    return PruneInfo(
        metric=_named(metric, level.concurrency),
        value=value,
        incumbent=top.index,
        incumbent_value=best_value,
        threshold=bar,
        concurrency=level.concurrency,
    )


def _named(metric: Metric, concurrency: int) -> str:
    """The figure's name at the level it was read (``peak_aggregate`` → ``aggregate_at_32``)."""
    if metric.concurrency is not None:
        return metric.name
    if metric.kind.name == "peak_aggregate":
        return f"aggregate_at_{concurrency}"
    return f"per_request_at_{concurrency}"


def rate_start(plan: SweepPlan, trials: Sequence[TrialRecord]) -> float | None:
    """The first rate probe of a rate search under pruning: ``prune_margin_pct`` under the
    incumbent's highest rate, so a candidate that misses there has lost. None: no pruning
    or no incumbent (the search starts from its own bounds)."""
    top = incumbent(plan, trials)
    metric = deciding_metric(plan)
    if top is None or metric is None or metric.kind.name != "max_rate_under_slo":
        return None
    rate = top.slo_rate
    return None if rate is None else rate * (1.0 - plan.prune_margin_pct / 100.0)


def rate_verdict(
    plan: SweepPlan, trials: Sequence[TrialRecord], rate: float, met: bool
) -> PruneInfo | None:
    """The first probe at :func:`rate_start` missed the SLOs: the candidate's highest rate
    is below the incumbent's beyond the noise."""
    start = rate_start(plan, trials)
    top = incumbent(plan, trials)
    if met or start is None or top is None or not math.isclose(rate, start):
        return None
    return PruneInfo(
        metric="max_rate_under_slo",
        value=rate,
        incumbent=top.index,
        incumbent_value=top.slo_rate or 0.0,
        threshold=start,
    )


def describe(info: PruneInfo) -> str:
    """One line for the record's note and every view (``present`` shows it as is)."""
    if info.concurrency is None:
        return (
            f"pruned: the SLOs fail at {info.value:,.2f} req/s, under best trial "
            f"{info.incumbent + 1}'s {info.incumbent_value:,.2f} req/s beyond the noise"
        )
    worse = "<" if info.value < info.threshold else ">"
    return (
        f"pruned at c={info.concurrency}: {info.metric} {info.value:,.1f} {worse} "
        f"{info.threshold:,.1f} (best trial {info.incumbent + 1}: {info.incumbent_value:,.1f}, "
        "less the noise); the rest of the ladder skipped"
    )


__all__ = [
    "deciding_metric",
    "describe",
    "incumbent",
    "lead_level",
    "rate_start",
    "rate_verdict",
    "threshold",
    "verdict",
]
