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
batch size or TP size moves the whole line, so those trials are not mixed in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from specconsole.core.config import ServerConfig
from specconsole.core.state import CapacityPrediction, TrialRecord

AUTO_DRAFT_TOKENS = 4
"""SGLang's auto-chosen (steps, topk, draft) is (3, 1, 4) for most models (sglang.md 1.2)."""


def draft_tokens(config: ServerConfig) -> int:
    """Verify tokens per request per step: the x of the capacity line.

    Uses SGLang's rules: no speculation → 0; an explicit draft-token count wins except with
    topk 1, where SGLang forces ``steps + 1``; all three unset → the auto choice (4).
    """
    if config.speculative_algorithm is None:
        return 0
    steps = config.speculative_num_steps
    topk = config.speculative_eagle_topk
    if steps is None:
        return config.speculative_num_draft_tokens or AUTO_DRAFT_TOKENS
    if topk in (None, 1):
        return steps + 1
    if config.speculative_num_draft_tokens is not None:
        return config.speculative_num_draft_tokens
    return steps * topk + 1


def memory_key(config: ServerConfig) -> ServerConfig:
    """The configuration with the tree sizes blanked: equal keys share one capacity line."""
    return replace(
        config,
        speculative_num_steps=None,
        speculative_eagle_topk=None,
        speculative_num_draft_tokens=None,
        description="",
    )


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
    d = draft_tokens(config)
    points = capacity_points(trials, config)
    basis = tuple(sorted(set(points)))
    same = [y for x, y in points if x == d]
    if same:
        predicted = round(sum(same) / len(same))
        return _verdict(predicted, minimum_tokens, basis, None, None, d, "seen before")
    line = fit_line(points)
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
