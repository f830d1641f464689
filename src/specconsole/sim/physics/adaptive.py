"""An adaptive draft length as the simulated box runs it: which draft length a decode batch
gets, how the choice moves, and what it costs.

Why in the physics: a server that switches its draft length by batch size is the point of a
schedule, so the box must switch the way the engine does, not the way a tuner hopes. The
controller is SGLang's (read from the 0.5.13, 0.5.14 and 0.5.23 wheels:
``adaptive_spec_params.py``, ``adaptive_runtime_state.py`` and their callers in
``eagle_worker_v2.py``; reimplemented, never copied); reading its config file is the SGLang
face's (:mod:`specconsole.sim.faces.sglang.adaptive`), which hands the physics an
:class:`AdaptiveSpec`:

* **Buckets**: each holds the candidate steps of the batches from its key (its smallest batch
  size) up to the next key, and its knobs (a bucket's own winning over the file's).
* **Routing**: before each decode step the batch size is rounded up to the smallest captured
  CUDA-graph batch size holding it (itself beyond the largest), then the bucket is the one
  with the largest key not above that (the first bucket below every key).
* **Choosing**: each bucket keeps an EMA of the accepted drafts per request (``ema_alpha``,
  default 0.2), starting at its initial step less one; it is fed only while the bucket
  drafts. After ``warmup_batches`` (10) verify steps, every ``update_interval`` (5): from a 0
  step it probes the next candidate up; otherwise it steps down while the EMA is at most the
  next lower candidate less 0.5 (0.5 for a 0 candidate) plus ``down_hysteresis`` (−0.25),
  and — when it did not step down — up while the EMA exceeds its own step less 0.5 plus
  ``up_hysteresis`` (0); ``ceiling_coeff`` > 0 caps a step that did not rise at
  ``ceil(EMA × coeff)``. A bucket with one candidate never moves: it runs what was measured.
* **Costs**: a switch swaps pre-built runtime states (attention backends, CUDA graphs) and
  rebuilds the chain buffers: no model reload, no capture — the box charges nothing for it.
  The price is paid at load: one state per candidate, each capturing CUDA graphs for the
  captured batch sizes that route to a bucket holding it (a candidate no bucket reaches at a
  graph size gets none), and the KV pool's per-request draft slots sized for the largest
  candidate (``max_speculative_num_draft_tokens``).

Pure, apart from :class:`AdaptiveRuntime`'s state (the scheduler owns one).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_KNOBS",
    "AdaptiveRuntime",
    "AdaptiveSpec",
    "Bucket",
    "graph_states",
    "steady_steps",
]

DEFAULT_KNOBS: dict[str, float] = {
    "ema_alpha": 0.2,
    "update_interval": 5,
    "warmup_batches": 10,
    "down_hysteresis": -0.25,
    "up_hysteresis": 0.0,
    "ceiling_coeff": 0,
}
"""The controller's knobs and their defaults (a bucket or its file may set any of them)."""


@dataclass(frozen=True, slots=True)
class Bucket:
    """One bucket: its smallest batch size, its candidates, its knobs."""

    key: int
    candidates: tuple[int, ...]
    knobs: tuple[tuple[str, float], ...] = ()

    def knob(self, name: str) -> float:
        return float(dict(self.knobs).get(name, DEFAULT_KNOBS[name]))


@dataclass(frozen=True, slots=True)
class AdaptiveSpec:
    """The adaptive config the server loaded."""

    buckets: tuple[Bucket, ...]
    by_batch: bool = True
    """False before 0.5.13: one candidate list for every batch."""

    @property
    def candidates(self) -> tuple[int, ...]:
        return tuple(sorted({s for b in self.buckets for s in b.candidates}))

    def bucket_for(self, batch: int, capture_bs: tuple[int, ...]) -> int:
        """The index of the bucket a decode batch of ``batch`` requests routes to."""
        if not self.by_batch or len(self.buckets) == 1:
            return 0
        padded = batch
        if capture_bs:
            i = bisect.bisect_left(capture_bs, batch)
            padded = capture_bs[i] if i < len(capture_bs) else batch
        keys = [b.key for b in self.buckets]
        return max(0, bisect.bisect_right(keys, padded) - 1)


def graph_states(spec: AdaptiveSpec, capture_bs: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """(candidate step, largest captured batch size it gets graphs for) per runtime state —
    0 when no captured size routes to a bucket holding it (``cuda_graph_bs_for_step``)."""
    out = []
    for step in spec.candidates:
        reach = [
            bs
            for bs in capture_bs
            if step in spec.buckets[spec.bucket_for(bs, capture_bs)].candidates
        ]
        out.append((step, max(reach, default=0)))
    return tuple(out)


@dataclass(slots=True)
class _Slot:
    """One bucket's EMA and its current step (SGLang's ``AdaptiveStepSlot``)."""

    bucket: Bucket
    current: int
    ema: float
    batches: int = 0

    @classmethod
    def start(cls, bucket: Bucket, initial: int) -> _Slot:
        cands = bucket.candidates
        current = initial if initial in cands else cands[len(cands) // 2]
        return cls(bucket, current, float(current - 1))

    def update(self, accepted: list[float]) -> int | None:
        """Feed one verify step's accepted drafts per request; the new step when it moves."""
        if not accepted:
            return None
        b = self.bucket
        if self.current > 0:
            alpha = b.knob("ema_alpha")
            self.ema = (1 - alpha) * self.ema + alpha * sum(accepted) / len(accepted)
        self.batches += 1
        warmup = int(b.knob("warmup_batches"))
        if self.batches <= warmup or (self.batches - warmup) % int(b.knob("update_interval")):
            return None
        target = self._target()
        if target == self.current:
            return None
        self.current = target
        return target

    def _target(self) -> int:
        b, cands = self.bucket, self.bucket.candidates
        old = cands.index(self.current)
        if self.current == 0:
            up = cands[min(old + 1, len(cands) - 1)]
            if up > 0 and self.ema < 0:
                self.ema = float(up - 1)
            return up
        idx = old
        while idx > 0:
            below = cands[idx - 1]
            drop = (0.5 if below == 0 else below - 0.5) + b.knob("down_hysteresis")
            if self.ema > drop:
                break
            idx -= 1
        if idx == old:
            while idx < len(cands) - 1 and self.ema > cands[idx] - 0.5 + b.knob("up_hysteresis"):
                idx += 1
        target = cands[idx]
        coeff = b.knob("ceiling_coeff")
        if coeff > 0:
            ceiling = max(1, math.ceil(self.ema * coeff))
            if ceiling < target <= self.current:
                while idx > 0 and cands[idx] > ceiling:
                    idx -= 1
                target = cands[idx]
        return target


@dataclass(slots=True)
class AdaptiveRuntime:
    """The server's adaptive controller: per bucket its slot, and the state that runs now."""

    spec: AdaptiveSpec
    capture_bs: tuple[int, ...]
    initial: int
    slots: list[_Slot] = field(default_factory=list)
    active: int = 0
    switches: int = 0

    def __post_init__(self) -> None:
        self.slots = [_Slot.start(b, self.initial) for b in self.spec.buckets]
        self.active = self.initial

    def steps_for(self, batch: int) -> int:
        """Activate (and return) the step the batch's bucket runs now."""
        step = self.slots[self.spec.bucket_for(batch, self.capture_bs)].current
        if step != self.active:
            self.active = step
            self.switches += 1
        return step

    def observe(self, accepted: list[float], batch: int) -> int | None:
        """A verify step's accepted drafts per request; the bucket's new step if it moved."""
        return self.slots[self.spec.bucket_for(batch, self.capture_bs)].update(accepted)


def steady_steps(
    spec: AdaptiveSpec, bucket: int, initial: int, accepted: dict[int, float]
) -> tuple[tuple[int, float], ...]:
    """Where a bucket's EMA settles when every verify step accepts the candidate's mean
    ``accepted[step]`` drafts per request: the steps it runs and their shares (a cycle when it
    oscillates), for the performance model."""
    slot = _Slot.start(spec.buckets[bucket], initial)
    seen: list[int] = []
    for _ in range(4000):  # bounded: a few hundred updates settle any EMA of alpha >= 0.01
        slot.update([accepted.get(slot.current, 0.0)])
        seen.append(slot.current)
    tail = seen[-1000:]
    return tuple((s, tail.count(s) / len(tail)) for s in sorted(set(tail)))
