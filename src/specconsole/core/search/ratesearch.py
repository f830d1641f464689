"""The highest request rate under the SLOs: which Poisson rate to probe next, and when to stop.

Why: a throughput at fixed concurrency does not tell an operator how much traffic a
configuration takes before its latency objectives break; "the highest arrival rate at which
every SLO still holds" does, and it is what vLLM's ``vllm bench sweep serve_sla`` and
SGLang's searcher report. For one configuration (one trial) the machine runs a probe — the
plan's benchmark at one Poisson rate, capped at ``concurrency`` requests in flight — asks
:func:`next_rate` for the next rate, and repeats until it answers None; every probe is
recorded (``TrialRecord.rate_probes``) and the answer is the highest rate that held
(``TrialRecord.slo_rate``, the metric ``max_rate_under_slo``), usable as the objective of any
strategy.

The search (bounded by ``rounds`` probes, tolerance relative):

1. the first probe is ``start`` when given (pruning: just under the best trial's rate,
   ``core.search.prune.rate_start``), else ``max_rate``;
2. nothing held yet: probe ``min_rate`` (once); when even that fails, there is no rate;
3. everything held so far: probe ``max_rate`` (once); when it holds, the answer is "at least
   ``max_rate``";
4. otherwise bisect geometrically between the highest rate that held (lo) and the lowest
   that failed above it (hi) — rates span orders of magnitude — until ``hi / lo <= 1 +
   tolerance``, so the answer ``lo`` is within the tolerance of the boundary.

A probe holds when every ``[sweep] constraints`` of the plan is met by its figures
(:func:`holds`), and none of its requests failed (a failed request is a broken SLO).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from specconsole.core.measure.trials import LevelSummary, RateProbe, TrialRecord, TrialStatus
from specconsole.core.plans.objective import Goal
from specconsole.core.plans.ratespec import RateSearchSpec
from specconsole.core.ports import BenchSpec


def holds(goal: Goal, level: LevelSummary) -> tuple[bool, str]:
    """(every SLO met, the ones missed with their figures) for one probe's figures."""
    probe = TrialRecord(index=-1, config=None, status=TrialStatus.OK, levels=(level,))  # type: ignore[arg-type]
    missed: list[str] = []
    if level.failed:
        missed.append(f"{level.failed} of {level.completed + level.failed} requests failed")
    for c in goal.constraints:
        value = c.metric.value(probe)
        if value is None:
            missed.append(f"{c.metric.name} not measured")
        elif not c.met(probe):
            missed.append(f"{c.metric.name} {value:,.1f} (needs {c.op.value} {c.bound:g})")
    return not missed, "; ".join(missed)


def probe(goal: Goal, rate: float, level: LevelSummary) -> RateProbe:
    met, missed = holds(goal, level)
    return RateProbe(rate=rate, level=level, met=met, missed=missed)


def bracket(probes: Sequence[RateProbe]) -> tuple[float | None, float | None]:
    """(highest rate that held, lowest rate above it that failed)."""
    lo = max((p.rate for p in probes if p.met), default=None)
    hi = min((p.rate for p in probes if not p.met and (lo is None or p.rate > lo)), default=None)
    return lo, hi


def _tried(probes: Sequence[RateProbe], rate: float) -> bool:
    return any(math.isclose(p.rate, rate, rel_tol=1e-9) for p in probes)


def next_rate(
    spec: RateSearchSpec, probes: Sequence[RateProbe], start: float | None = None
) -> float | None:
    """The next rate to probe, or None when the search is done (see the module docstring)."""
    if len(probes) >= spec.rounds:
        return None
    if not probes:
        first = spec.max_rate if start is None else start
        return min(max(first, spec.min_rate), spec.max_rate)
    lo, hi = bracket(probes)
    if lo is None:
        if hi is not None and hi <= spec.min_rate * (1.0 + 1e-9):
            return None  # even the lowest rate worth trying breaks an SLO
        return None if _tried(probes, spec.min_rate) else spec.min_rate
    if hi is None:
        return None if _tried(probes, spec.max_rate) else spec.max_rate
    if hi / lo <= 1.0 + spec.tolerance:
        return None
    return math.sqrt(lo * hi)


def probe_spec(spec: BenchSpec, search: RateSearchSpec, rate: float) -> BenchSpec:
    """The plan's benchmark as one probe: Poisson arrivals at ``rate``, at most the cap in
    flight, over finished requests (a steady window keeps c streams, not a rate), one level."""
    return replace(
        spec,
        ladder=(search.cap(spec.ladder),),
        request_rate=rate,
        window="completed",
        window_s=None,
        window_tokens=None,
        lead=None,
    )


def summary(spec: RateSearchSpec, probes: Sequence[RateProbe]) -> str:
    """One line for the trial's note: the answer and how it was bracketed."""
    lo, hi = bracket(probes)
    n = f"{len(probes)} probe{'s' if len(probes) != 1 else ''}"
    if lo is None:
        return f"rate search: no rate holds the SLOs (from {spec.min_rate:g} req/s; {n})"
    if hi is None:
        return f"rate search: the SLOs hold up to the search's max, {lo:,.2f} req/s ({n})"
    return f"rate search: {lo:,.2f} req/s holds the SLOs, {hi:,.2f} does not ({n})"


__all__ = ["bracket", "holds", "next_rate", "probe", "probe_spec", "summary"]
