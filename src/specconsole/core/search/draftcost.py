"""What the draft costs in KV cache: a trial's capacity beside what the same launch holds
without speculation.

Why: the draft's weights, its KV per token and the speculative workspace all come out of the
budget the KV pool gets, and that pool is the server's concurrency. "Steps 5 is faster for one
request" is half an answer without "and it gives up 107,000 KV tokens, 31 %". The capacity
without speculation comes from a baseline trial of the session when there is one (the same
launch with speculation off: ``[sweep] baseline``, or any such trial), else from the capacity
model (``core.search.capacity``): the line through the session's capacities against draft
tokens, read at none — which counts the workspace the draft tokens take, not the draft
model's weights or its KV (so it reads the cost low, and says which it is).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from specconsole.core.config.concepts import Concept, speculates, with_concepts
from specconsole.core.config.model import ServerConfig
from specconsole.core.measure.trials import TrialRecord
from specconsole.core.search.capacity import capacity_points, fit_line, memory_key

__all__ = ["DraftCost", "draft_cost"]


@dataclass(frozen=True, slots=True)
class DraftCost:
    """A speculative trial's KV tokens against the same launch without speculation."""

    with_draft: int
    without: int
    source: str
    """``baseline`` (a trial without speculation measured it) or ``model`` (the capacity
    line at no draft tokens)."""
    baseline_index: int | None = None
    """The baseline trial (0-based), when it came from one."""

    @property
    def tokens(self) -> int:
        """KV tokens the draft takes (never negative)."""
        return max(0, self.without - self.with_draft)

    @property
    def share(self) -> float:
        """Of the KV tokens without speculation."""
        return self.tokens / self.without if self.without > 0 else 0.0


def _launch_key(config: ServerConfig) -> ServerConfig:
    """The launch without anything about speculation: a baseline's key."""
    return with_concepts(memory_key(config), {Concept.METHOD: None, Concept.DRAFT_MODEL: None})


def draft_cost(record: TrialRecord, trials: Iterable[TrialRecord]) -> DraftCost | None:
    """What ``record``'s draft costs, from the session's ``trials`` (None: it does not
    speculate, did not load, or nothing says what the launch holds without the draft)."""
    config = record.effective
    if record.capacity is None or not speculates(config):
        return None
    trials = tuple(trials)
    key = _launch_key(config)
    for t in trials:
        plain = t.effective
        if t.capacity is not None and not speculates(plain) and _launch_key(plain) == key:
            return DraftCost(record.capacity, t.capacity, "baseline", t.index)
    line = fit_line(capacity_points(trials, config))
    if line is None:
        return None
    _slope, intercept = line
    return DraftCost(record.capacity, round(intercept), "model")
