"""Predicting a configuration's KV-cache capacity before spending a load on it.

Why: on the seed box every load costs about 100 seconds, and the largest speculative
settings do not load at all ("Not enough memory" while sizing the KV pool). SGLang carves the
speculative workspace (captured batch sizes x verify tokens) out of the static memory budget
before it sizes the KV pool, so ``max_total_num_tokens`` falls roughly *linearly* with the
number of draft tokens while everything else stays fixed. A least-squares line through the
capacities already seen predicts the next configuration's capacity; a prediction below the
minimum useful capacity (by default one full benchmark request) is flagged as infeasible,
e.g. steps = 10 after steps 1-4 on the seed box.

Only trials whose configuration differs from the candidate in the speculative tree sizes
(steps, topk, draft tokens) are comparable: a different ``mem_fraction_static``, CUDA-graph
batch size or TP size moves the whole line, so those trials are not mixed in. When that
narrow line has too few points (a search over several axes rarely repeats the memory
settings), a wider plane is fitted through every trial that differs only in the tree sizes,
``mem_fraction_static`` and ``cuda_graph_max_bs``: the KV pool is what the static budget
(linear in the memory fraction) leaves after the workspace (linear in captured batch size x
draft tokens), so ``capacity ~ a + b * mem_fraction + c * cuda_graph_max_bs * draft`` —
three trials that load, not on one line, are enough to predict the rest of the space.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from specconsole.core.config.concepts import Concept, concept_value, with_concepts
from specconsole.core.engine.registry import engine_for
from specconsole.core.measure.trials import CapacityPrediction, TrialRecord

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig


def draft_tokens(config: ServerConfig) -> int:
    """Verify tokens per request per step: the x of the capacity line, as the configuration's
    engine counts them (``Engine.verify_tokens``)."""
    return engine_for(config).verify_tokens(config)


def memory_key(config: ServerConfig) -> ServerConfig:
    """The configuration with the draft's sizes blanked (its length and shape: SGLang's tree,
    vLLM's K): equal keys share one capacity line. The release is blanked too: it changes
    how flags are spelt, not the memory a trial takes (a trial deployed before the box's
    release was known is on the same line)."""
    blank = {Concept.DRAFT_LENGTH: None, Concept.DRAFT_SHAPE: None}
    return with_concepts(replace(config, engine_version=None, description=""), blank)


def wide_key(config: ServerConfig) -> ServerConfig:
    """:func:`memory_key` with the memory fraction and CUDA-graph batch size blanked too."""
    blank = {Concept.MEMORY_FRACTION: None, Concept.GRAPH_BATCH: None}
    return with_concepts(memory_key(config), blank)


def workspace_slots(config: ServerConfig) -> int | None:
    """Captured batch size x draft tokens (None when the batch size is not set)."""
    graph = concept_value(config, Concept.GRAPH_BATCH)
    if graph is None:
        return None
    return graph * draft_tokens(config)


def plane_points(
    trials: Iterable[TrialRecord], config: ServerConfig
) -> list[tuple[float, int, int]]:
    """(mem fraction, workspace slots, capacity) of earlier trials on ``config``'s plane."""
    key = wide_key(config)
    points: list[tuple[float, int, int]] = []
    for t in trials:
        effective = t.normalized or t.config
        slots = workspace_slots(effective)
        mem = concept_value(effective, Concept.MEMORY_FRACTION)
        if t.capacity is None or slots is None or mem is None or wide_key(effective) != key:
            continue
        points.append((float(mem), slots, t.capacity))
    return points


def fit_plane(points: list[tuple[float, int, int]]) -> tuple[float, float, float] | None:
    """Least-squares (a, b, c) of ``capacity = a + b * mem + c * slots``; None when the
    points do not span a plane."""
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    mz = sum(p[2] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    syy = sum((p[1] - my) ** 2 for p in points)
    sxy = sum((p[0] - mx) * (p[1] - my) for p in points)
    sxz = sum((p[0] - mx) * (p[2] - mz) for p in points)
    syz = sum((p[1] - my) * (p[2] - mz) for p in points)
    det = sxx * syy - sxy * sxy
    if sxx <= 0 or syy <= 0 or abs(det) <= 1e-9 * sxx * syy:
        return None
    b = (sxz * syy - syz * sxy) / det
    c = (syz * sxx - sxz * sxy) / det
    return mz - b * mx - c * my, b, c


def capacity_points(trials: Iterable[TrialRecord], config: ServerConfig) -> list[tuple[int, int]]:
    """(draft tokens, capacity) of earlier trials comparable with ``config``."""
    key = memory_key(config)
    points: list[tuple[int, int]] = []
    for t in trials:
        if t.capacity is None:
            continue
        effective = t.normalized or t.config
        if memory_key(effective) != key:
            continue
        points.append((draft_tokens(effective), t.capacity))
    return points


def fit_line(points: list[tuple[int, int]]) -> tuple[float, float] | None:
    """Least-squares (slope, intercept) of capacity against draft tokens; None if degenerate."""
    xs = {x for x, _y in points}
    if len(xs) < 2:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    slope = sxy / sxx
    return slope, my - slope * mx


def predict_capacity(
    trials: Iterable[TrialRecord], config: ServerConfig, *, minimum_tokens: int = 1
) -> CapacityPrediction:
    """Predict ``max_total_num_tokens`` for ``config`` from the trials so far.

    ``feasible`` is False only when a prediction exists and falls below ``minimum_tokens``;
    with too little data the prediction is None and the configuration counts as feasible.
    """
    trials = tuple(trials)
    d = draft_tokens(config)
    points = capacity_points(trials, config)
    basis = tuple(sorted(set(points)))
    same = [y for x, y in points if x == d]
    if same:
        predicted = round(sum(same) / len(same))
        return _verdict(predicted, minimum_tokens, basis, None, None, d, "seen before")
    line = fit_line(points)
    plane = fit_plane(plane_points(trials, config)) if line is None else None
    slots = workspace_slots(config)
    mem = concept_value(config, Concept.MEMORY_FRACTION)
    if plane is not None and slots is not None and mem is not None:
        a, b, c = plane
        predicted = round(a + b * mem + c * slots)
        return _verdict(
            predicted, minimum_tokens, basis, None, None, d, "plane fit over memory settings"
        )
    if line is None:
        return CapacityPrediction(
            predicted_tokens=None,
            feasible=True,
            minimum_tokens=minimum_tokens,
            basis=basis,
            draft_tokens=d,
            reason=(
                "not enough data: need capacities at two draft-token counts"
                f" (have {len({x for x, _ in points})})"
            ),
        )
    slope, intercept = line
    predicted = round(slope * d + intercept)
    return _verdict(predicted, minimum_tokens, basis, slope, intercept, d, "linear fit")


def _verdict(
    predicted: int,
    minimum: int,
    basis: tuple[tuple[int, int], ...],
    slope: float | None,
    intercept: float | None,
    d: int,
    how: str,
) -> CapacityPrediction:
    feasible = predicted >= minimum
    if feasible:
        reason = f"predicted {predicted:,} KV tokens at {d} draft tokens ({how})"
    else:
        reason = (
            f"predicted {predicted:,} KV tokens at {d} draft tokens ({how}) is below the "
            f"minimum {minimum:,}: this configuration is not expected to load"
        )
    return CapacityPrediction(
        predicted_tokens=predicted,
        feasible=feasible,
        minimum_tokens=minimum,
        basis=basis,
        slope=slope,
        intercept=intercept,
        draft_tokens=d,
        reason=reason,
    )
