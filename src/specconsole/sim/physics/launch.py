"""What the box runs: a launch as a face resolved it, in the physics' own words.

Why a neutral description: every engine the simulator imitates spells a launch its own way —
SGLang's ``--speculative-num-steps`` and ``--mem-fraction-static``, vLLM's
``num_speculative_tokens`` and ``--gpu-memory-utilization`` — and decides its own defaults, but
the box's physics (memory, acceptance, step time, the scheduler) needs only the concepts: the
draft tree and its length per batch size, the memory fraction and the order the KV cache is
sized in, the running cap, the parallelism, the prefill chunking. A face (``sim.faces``)
reads its engine's command line, applies its engine's rules and hands the physics a
:class:`ResolvedArgs`; the physics never asks which engine that was. Pure data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from specconsole.sim.physics.adaptive import AdaptiveSpec

__all__ = ["FixedAccept", "KvSizing", "ResolvedArgs"]


class KvSizing(StrEnum):
    """Where the KV cache gets its memory, in the order the engine sizes it."""

    STATIC_BUDGET = "static_budget"
    """The memory fraction is a static budget for the weights, the speculative workspace and
    the KV pool; CUDA graphs are captured afterwards from the memory outside it (SGLang,
    vLLM 0.11)."""
    AFTER_GRAPHS = "after_graphs"
    """The KV cache is sized last, from what the CUDA graphs, the activations and the weights
    leave within the fraction: graphs count inside it (vLLM 0.34's extensible KV cache)."""


@dataclass(frozen=True, slots=True)
class FixedAccept:
    """An acceptance fixed by the engine's own benchmark knob."""

    length: float
    """Mean tokens per verify step, the bonus token included (at full draft length)."""
    method: str = "match-expected"
    """``match-expected`` (floor or ceiling, the mean kept), ``multinomial`` (a normal around
    it, rounded and clamped) or ``synthetic`` (per-position rates)."""
    rates: tuple[float, ...] = ()
    """``synthetic``: the unconditional acceptance of each draft position (resolved at the
    configured draft length; a smaller per-batch length drafts the first ones)."""


@dataclass(frozen=True, slots=True)
class ResolvedArgs:
    """The effective launch after the engine's resolution: what the box loads and runs."""

    model_path: str
    served_model_name: str
    draft_model_path: str | None
    algorithm: str | None
    """Upper-cased speculative algorithm, ``None`` without speculative decoding."""
    num_steps: int
    """Draft depth (0 without speculative decoding)."""
    topk: int
    num_draft_tokens: int
    """Verify width: tokens per request in one verify forward (1 without speculation)."""
    memory_fraction: float
    """The share of each GPU the engine may take (SGLang's ``--mem-fraction-static``,
    vLLM's ``--gpu-memory-utilization``)."""
    capture_bs: tuple[int, ...]
    """Batch sizes captured as CUDA graphs (empty without CUDA graphs)."""
    max_running: int
    """How many requests decode at once at most (SGLang's ``--max-running-requests``, vLLM's
    ``--max-num-seqs``)."""
    max_total_tokens: int | None
    """A cap on the KV pool in tokens (``None``: what the memory gives)."""
    tp_size: int
    context_length: int
    chunked_prefill_size: int
    max_prefill_tokens: int
    host: str
    port: int
    seed: int | None = None
    """The seed of the generated words and the accepted-token draws (``None``: the
    profile's)."""
    accept_threshold_single: float = 1.0
    """Relaxed verification's single-token threshold (1.0 = strict)."""
    accept_threshold_acc: float = 1.0
    """Relaxed verification's accumulated threshold (1.0 = strict)."""
    kv_sizing: KvSizing = KvSizing.STATIC_BUDGET
    kv_holds_context: bool = False
    """The engine refuses to start when the KV cache cannot hold one request of
    ``context_length`` (vLLM)."""
    steps_by_batch: tuple[tuple[int, int, int], ...] = ()
    """A per-batch-size draft length: inclusive batch-size ranges and the draft length each
    drafts; ``()``: ``num_steps`` at every size."""
    capture_by_steps: tuple[tuple[int, tuple[int, ...]], ...] = ()
    """With a per-batch-size draft length, the batch sizes each draft length captures CUDA
    graphs for (an engine that captures a tier of graphs per length, as vLLM 0.34 does);
    ``()``: ``capture_bs`` for every length."""
    edge_cliff: float = 1.0
    """A planted fault (``--sim-edge-cliff``): a decode step of a batch size next to a
    boundary of :attr:`steps_by_batch` (the last size of a range or the first of the next)
    takes this many times as long — the collapse vllm#49548 reports where the running set
    crosses a schedule's threshold. 1.0: none."""
    edge_cliff_at: int = 0
    """Only the boundary whose first batch size this is (``--sim-edge-cliff-at``; 0: every
    boundary)."""
    adaptive: AdaptiveSpec | None = None
    """An adaptive draft length (:mod:`specconsole.sim.physics.adaptive`): the buckets and
    their candidate steps; ``num_steps`` is the initial one."""
    fixed_accept: FixedAccept | None = None
    """The engine's benchmark knob fixing the acceptance; ``None``: the profile's draft
    decides."""
    warnings: tuple[str, ...] = ()
    """What the engine logged while resolving, in its order and words."""
    server_args: Mapping[str, Any] = field(default_factory=dict)
    """Every effective argument in the engine's own names, as it reports them."""
    unknown_args: Mapping[str, Any] = field(default_factory=dict)
    """Flags the face kept without physics for them."""

    @property
    def speculative(self) -> bool:
        return self.algorithm is not None and self.algorithm != "NGRAM"

    @property
    def max_draft_tokens(self) -> int:
        """Verify width the memory is sized for: the largest adaptive candidate's + 1, else
        ``num_draft_tokens``."""
        if self.adaptive is not None:
            return max(self.adaptive.candidates) + 1
        return self.num_draft_tokens

    def with_steps(self, k: int) -> ResolvedArgs:
        """These arguments drafting a chain of ``k`` (0: no draft) for one decode step (with
        the CUDA graphs captured for that length, where the engine captures them per
        length)."""
        tier = dict(self.capture_by_steps).get(max(k, 0))
        graphs = {} if tier is None else {"capture_bs": tier}
        if k == self.num_steps:
            return replace(self, **graphs) if graphs else self
        if k <= 0:
            return replace(self, algorithm=None, num_steps=0, topk=0, num_draft_tokens=1, **graphs)
        return replace(self, num_steps=k, num_draft_tokens=k + 1, **graphs)

    def steps_at(self, batch: int) -> int:
        """The draft length a decode step of ``batch`` requests drafts: ``num_steps``, or
        what the per-batch-size ranges give — the range holding ``batch``, a gap taking the
        range before it, past the last range the last length, never more than
        ``num_steps``."""
        return min(self._ranged(batch), self.num_steps)

    def _ranged(self, batch: int) -> int:
        """The per-batch-size ranges' length at ``batch`` (``num_steps`` without them)."""
        chosen = self.num_steps
        for start, _end, k in self.steps_by_batch:
            if start > batch:
                break
            chosen = k
        return chosen

    def at_edge(self, batch: int) -> bool:
        """Whether ``batch`` sits next to a boundary of the per-batch-size draft length (one
        request more or fewer drafts another length) — the boundary :attr:`edge_cliff_at`
        names, when it names one."""
        if not self.steps_by_batch or batch < 1:
            return False
        # uncapped: a step already narrowed to its length keeps its neighbours'
        firsts = [b for b in (batch, batch + 1) if b > 1 and self._ranged(b) != self._ranged(b - 1)]
        if self.edge_cliff_at:
            return self.edge_cliff_at in firsts
        return bool(firsts)

    def at_batch(self, batch: int) -> ResolvedArgs:
        """These arguments as a decode step of ``batch`` requests runs them (a per-batch-size
        length changes the chain drafted and verified; ``self`` when there is none)."""
        if not self.steps_by_batch:
            return self
        return self.with_steps(self.steps_at(batch))

    @property
    def max_capture_bs(self) -> int:
        return self.capture_bs[-1] if self.capture_bs else 0
