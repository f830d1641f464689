"""The fold of one server start's log events into a :class:`LoadSummary`.

Why its own module: ``specconsole parse-log`` and the corpus tests need "what did this load
reach: phases, capacity, first fatal error, warnings", which is a rule about events (only the
first rank counts, the first fatal error wins, phases in start-up order), not part of the
events' vocabulary in :mod:`specconsole.core.logs.events`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from specconsole.core.logs.events import (
    STAGE_ORDER,
    Capacity,
    CudaGraphEnd,
    DecodeStats,
    FatalError,
    KVCacheAllocated,
    LoadStage,
    LogEvent,
    Ready,
    Role,
    TuningWarning,
    WeightsEnd,
)


@dataclass(frozen=True, slots=True)
class LoadSummary:
    """What a sequence of events says about one server start (the fold of :func:`summarize`)."""

    phases: tuple[LoadStage, ...] = ()
    """Load phases reached, in start-up order, each once."""
    capacity: Capacity | None = None
    kv_tokens: int | None = None
    """Target KV pool size from ``KV Cache is allocated`` (or vLLM's KV cache size)."""
    ready: bool = False
    fatal: FatalError | None = None
    """The first fatal error (later ones are usually consequences)."""
    warnings: tuple[TuningWarning, ...] = ()
    weights_loaded: int = 0
    """``Load weight end`` lines seen on the first rank (1 = target, 2 = target + draft)."""
    cuda_graphs_captured: int = 0
    last_decode: DecodeStats | None = None
    events: int = 0

    @property
    def phase(self) -> LoadStage | None:
        """The furthest phase reached."""
        return self.phases[-1] if self.phases else None

    def one_line(self) -> str:
        """A single human-readable line (the last line ``parse-log`` prints)."""
        parts = [f"phases: {','.join(p.value for p in self.phases) or 'none'}"]
        if self.capacity is not None and self.capacity.max_total_num_tokens is not None:
            parts.append(
                f"capacity: max_total_num_tokens={self.capacity.max_total_num_tokens}"
                f" max_running_requests={self.capacity.max_running_requests}"
                f" context_len={self.capacity.context_len}"
            )
        elif self.kv_tokens is not None:
            parts.append(f"capacity: kv_tokens={self.kv_tokens}")
        if self.fatal is not None:
            parts.append(f"fatal: {self.fatal.cause} ({self.fatal.summary})")
        else:
            parts.append("ready" if self.ready else "not ready")
        if self.warnings:
            parts.append("warnings: " + ",".join(sorted({w.warning.value for w in self.warnings})))
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the ``summary`` record ``parse-log`` prints)."""
        return {
            "event": "summary",
            "phases": [p.value for p in self.phases],
            "capacity": self.capacity.to_dict() if self.capacity else None,
            "kv_tokens": self.kv_tokens,
            "ready": self.ready,
            "fatal": (
                {
                    "cause": str(self.fatal.cause),
                    "summary": self.fatal.summary,
                    "timestamp": self.fatal.timestamp,
                    "fixes": [f.text for f in self.fatal.fixes],
                }
                if self.fatal
                else None
            ),
            "warnings": sorted({w.warning.value for w in self.warnings}),
            "weights_loaded": self.weights_loaded,
            "cuda_graphs_captured": self.cuda_graphs_captured,
            "events": self.events,
            "text": self.one_line(),
        }


def _first_rank(rank: str | None) -> bool:
    """True for lines of the first rank (``TP0``, ``DP0 TP0``) or without a rank prefix.

    Only the first rank's lines count for progress: TP1.. repeat the same sequence.
    """
    if rank is None:
        return True
    return all(part.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "0" for part in rank.split())


def summarize(events: Iterable[LogEvent], start: LoadSummary | None = None) -> LoadSummary:
    """Fold events into a :class:`LoadSummary`; pass ``start`` to continue a previous fold."""
    s = start or LoadSummary()
    phases = list(s.phases)
    capacity, kv_tokens, ready, fatal = s.capacity, s.kv_tokens, s.ready, s.fatal
    warnings = list(s.warnings)
    weights, graphs, last_decode, count = (
        s.weights_loaded,
        s.cuda_graphs_captured,
        s.last_decode,
        s.events,
    )
    for ev in events:
        count += 1
        phase = ev.phase
        if phase is not None and phase not in phases:
            phases.append(phase)
            phases.sort(key=STAGE_ORDER.index)
        if isinstance(ev, Capacity):
            if capacity is None or ev.max_total_num_tokens is not None:
                capacity = ev
        elif isinstance(ev, KVCacheAllocated):
            if ev.role is Role.TARGET and kv_tokens is None and _first_rank(ev.rank):
                kv_tokens = ev.num_tokens
        elif isinstance(ev, Ready):
            ready = True
        elif isinstance(ev, FatalError):
            if fatal is None:
                fatal = ev
        elif isinstance(ev, TuningWarning):
            warnings.append(ev)
        elif isinstance(ev, WeightsEnd):
            if _first_rank(ev.rank):
                weights += 1
        elif isinstance(ev, CudaGraphEnd):
            if _first_rank(ev.rank):
                graphs += 1
        elif isinstance(ev, DecodeStats):
            last_decode = ev
    return LoadSummary(
        phases=tuple(phases),
        capacity=capacity,
        kv_tokens=kv_tokens,
        ready=ready,
        fatal=fatal,
        warnings=tuple(warnings),
        weights_loaded=weights,
        cuda_graphs_captured=graphs,
        last_decode=last_decode,
        events=count,
    )
