"""Which axes the optimiser searches first: the ones the goal can see.

Why its own module: it is a rule about the engine's capacity keys and the benchmark, not
about the sampler. The keys an engine declares for the memory fraction, the captured batch
sizes and the concurrency (SGLang's ``mem_fraction_static``, ``cuda_graph_max_bs``,
``max_running_requests``; vLLM's ``gpu_memory_utilization``, ``max_num_seqs``) size the KV
pool, the captured batch sizes and the batch limit: they decide whether a configuration loads
and how it behaves with many requests in flight, but a single request (one sequence, batch
size 1, always inside a captured graph) runs the same at every value that loads. When every
figure the goal reads is a single-request one (``single_request``, ``accept_length``, or a
per-level metric at concurrency 1), searching those *capacity axes* only spends loads on
points the objective cannot tell apart, and on crashes. So, for such a goal, the optimiser
first holds them at the plan's base values (the configuration the user launches today, so
the one known to load; a base value off an axis's list snaps to the nearest listed value)
and searches the draft tree alone; it releases them once the tree search has gone half the
``patience`` without an improvement, so the remaining loads look for a capacity setting
that does better (a constraint at concurrency 1 can still depend on them through a crash).
Any other goal reads batched levels, which the capacity axes do change: nothing is held.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from specconsole.core.config.concepts import CAPACITY_CONCEPTS
from specconsole.core.config.model import option_fields
from specconsole.core.plans.objective import Goal, Metric


def capacity_axis(engine: str, name: str) -> bool:
    """Whether axis ``name`` of ``engine`` changes memory and batching, not how one request
    is decoded (its concept: ``core.config.concepts.CAPACITY_CONCEPTS``)."""
    field = option_fields(engine).get(name)
    return field is not None and field.concept in CAPACITY_CONCEPTS


SINGLE_REQUEST_METRICS: frozenset[str] = frozenset({"single_request", "accept_length"})
"""Figures measured on one request at a time (``single_request`` is the lowest level of
the ladder, concurrency 1 in every shipped plan)."""


def single_request_goal(goal: Goal, ladder: Sequence[int]) -> bool:
    """True when every figure the goal reads (objective and constraints) comes from one
    request at a time."""
    return all(_single(m, ladder) for m in goal.metrics)


def _single(metric: Metric, ladder: Sequence[int]) -> bool:
    if metric.concurrency is not None:
        return metric.concurrency == 1
    if metric.kind.name == "single_request":
        return bool(ladder) and min(ladder) == 1
    return metric.kind.name in SINGLE_REQUEST_METRICS


def held_axes(
    goal: Goal,
    ladder: Sequence[int],
    axes: Iterable[str],
    stale: int,
    patience: int,
    engine: str,
) -> frozenset[str]:
    """The capacity axes to hold at the base values now: none for a goal that reads
    batched levels, none once ``stale`` trials (loads since the last improvement) reach
    half the ``patience``."""
    if not single_request_goal(goal, ladder) or stale >= max(1, patience // 2):
        return frozenset()
    return frozenset(a for a in axes if capacity_axis(engine, a))


__all__ = ["capacity_axis", "held_axes", "single_request_goal"]
