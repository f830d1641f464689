"""SGLang's adaptive speculative decoding as the simulated box runs it: which draft length a
decode batch gets, how the choice moves, and what it costs.

Why its own module: a server that switches its draft length by batch size is the point of a
schedule, so the box must switch the way SGLang does, not the way a tuner hopes (read from
the 0.5.13, 0.5.14 and 0.5.23 wheels: ``adaptive_spec_params.py``, ``adaptive_runtime_state.py``
and their callers in ``eagle_worker_v2.py``; reimplemented, never copied):

* **The file**: integer keys are buckets (a bucket's smallest batch size) holding
  ``candidate_steps`` (a non-empty list of non-negative ints: 0.5.14 and later; positive
  before); other keys are knobs every bucket inherits, a bucket's own winning. No file:
  the release's default. Before 0.5.13 the file is one flat candidate list for every batch.
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
import json
import math
from dataclasses import dataclass, field

from specconsole.core.config.bounds import SERVER_LIMITS
from specconsole.core.config.releases import has_feature
from specconsole.sim.args import SimArgError, imitated_engine

__all__ = [
    "AdaptiveRuntime",
    "AdaptiveSpec",
    "Bucket",
    "default_spec",
    "graph_states",
    "load_spec",
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

_DEFAULTS: tuple[tuple[str, tuple[tuple[int, tuple[int, ...], float, float], ...]], ...] = (
    ("0.5.23", ((1, (1, 3, 5, 7), 0.0, -0.25), (8, (0, 1, 3), 0.0, 0.0), (32, (0, 1), 0.0, 0.0),
                (64, (0,), 0.0, 0.0))),
    ("0.5.14", ((1, (1, 3, 7), 0.0, -0.25), (8, (0, 1, 3), 0.0, 0.0), (32, (0, 1), 0.0, 0.0),
                (64, (0,), 0.0, 0.0))),
    ("0.5.13", ((1, (1, 3, 7), 0.0, -0.25), (8, (1, 3), 0.0, 0.0), (32, (1,), 0.0, 0.0))),
)  # fmt: skip
"""Each release's ``DEFAULT_ADAPTIVE_CONFIG``: (bucket, candidates, up, down hysteresis)."""


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


def _error(message: str) -> SimArgError:
    return SimArgError(message, "ValueError")


def load_spec(text: str | None, release: str | None) -> AdaptiveSpec:
    """The adaptive config ``text`` (None: the release's default), loaded by release
    ``release``'s rules (unknown: the newest's); raises SimArgError with SGLang's texts."""
    table = imitated_engine().releases
    by_batch = has_feature(table, "adaptive_by_batch", release) is not False
    zero_ok = has_feature(table, "adaptive_zero_step", release) is not False
    if text is None:
        return default_spec(release) if by_batch else AdaptiveSpec((Bucket(1, (1, 3, 7)),), False)
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _error(f"json.decoder.JSONDecodeError: {exc}") from None
    if not isinstance(document, dict):
        raise _error(
            f"speculative_adaptive_config must be a JSON object, got {type(document).__name__}"
        )
    knobs = tuple((k, v) for k, v in document.items() if not k.isdigit() and k in DEFAULT_KNOBS)
    if not by_batch:  # 0.5.11/0.5.12: one list, at least two distinct values
        flat = document.get("candidate_steps", [1, 3, 7])
        if not isinstance(flat, list) or not all(
            isinstance(v, int) and 0 < v <= SERVER_LIMITS["speculative_num_steps"] for v in flat
        ):
            raise _error(f"candidate_steps must be a list of positive ints, got {flat!r}")
        steps = sorted(set(flat))
        if len(steps) < 2:
            raise SimArgError(
                "candidate_steps must have at least 2 distinct values", "AssertionError"
            )
        return AdaptiveSpec((Bucket(1, tuple(steps), knobs),), by_batch=False)
    buckets: list[Bucket] = []
    for key, entry in document.items():
        if not key.isdigit():
            continue
        steps = entry.get("candidate_steps") if isinstance(entry, dict) else None
        floor = 0 if zero_ok else 1
        if (
            not isinstance(steps, list)
            or not steps
            or not all(isinstance(s, int) and not isinstance(s, bool) and s >= floor for s in steps)
        ):
            kind = "non-negative" if zero_ok else "positive"
            raise _error(f"BS {key}: candidate_steps must be a list of {kind} ints, got {steps!r}")
        if max(steps) > SERVER_LIMITS["speculative_num_steps"] or len(buckets) >= 4096:
            raise _error(
                f"BS {key}: candidate step {max(steps)} (or bucket {len(buckets) + 1}) is above "
                "the simulator's limit; a real box runs far below it"
            )
        own = tuple((k, v) for k, v in entry.items() if k in DEFAULT_KNOBS)
        buckets.append(Bucket(int(key), tuple(sorted(set(steps))), (*knobs, *own)))
    if not buckets:
        raise _error(
            "speculative_adaptive_config must contain at least one integer-string BS key, "
            f'e.g. {{"1": {{"candidate_steps": [1,3,7]}}}}. Got keys: {list(document)}'
        )
    return AdaptiveSpec(tuple(sorted(buckets, key=lambda b: b.key)))


def default_spec(release: str | None) -> AdaptiveSpec:
    """The release's ``DEFAULT_ADAPTIVE_CONFIG`` (unknown: the newest checked)."""
    from specconsole.core.config.releases import parse_version

    chosen = _DEFAULTS[0][1]
    if release is not None:
        try:
            version = parse_version(release)
        except ValueError:
            version = None
        for since, rows in _DEFAULTS:
            if version is not None and version >= parse_version(since):
                chosen = rows
                break
    return AdaptiveSpec(
        tuple(
            Bucket(k, c, (("up_hysteresis", up), ("down_hysteresis", down), ("ceiling_coeff", 0)))
            for k, c, up, down in chosen
        )
    )


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
