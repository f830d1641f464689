"""When a level's failures end it at once, and how far a stream may run.

Why apart from the ladder engine (:mod:`.engine`): these are decisions about what failures
mean, not scheduling (issue 27): a server that refuses, never answers or errors on every
warm-up request cannot be benchmarked, so measuring it would only repeat each failure's wait N
times before "every request failed"; and a stream far past the tokens asked for is a server
that would hold the level forever. The message names the URL and the cause (the first
failure's detail). Standard library only: the remote runner ships it.
"""

from __future__ import annotations

from collections.abc import Sequence

from specconsole.bench.api import RequestFailed
from specconsole.bench.rerun import LOST_CONNECTION_KINDS
from specconsole.core.measure.metrics import RequestTimeline

__all__ = ["SILENT_KINDS", "overrun_limit", "silent_wave", "warmup_failure"]

SILENT_KINDS = frozenset({"stall", "timeout"})
"""Failures that mean the server said nothing (no token within the stall or request
timeout), as opposed to an answer (an HTTP error) or a lost connection."""


def overrun_limit(asked: int) -> int:
    """Most tokens a stream may carry for ``asked`` (``max_tokens`` with ``ignore_eos``)."""
    return 2 * asked + 64


def silent_wave(records: Sequence[RequestTimeline], concurrency: int, tokens: int) -> bool:
    """Whether a measured phase's outcome is decided: its first ``concurrency`` requests
    (one request per slot) all ended in silence and the server streamed no token at all. A
    level of a server that accepts and never answers then stops after one stall timeout
    instead of waiting it once per request (issue 44): every later request would wait the
    same, and the level is "every request failed" either way."""
    if tokens or len(records) < max(1, concurrency):
        return False
    return all(r.error_kind in SILENT_KINDS for r in records)


def warmup_failure(records: Sequence[RequestTimeline], *, reached: bool) -> RequestFailed | None:
    """The failure that ends the level when every warm-up request failed, else None.

    ``reached``: earlier levels ran (the server answered before), so a lost connection is
    left to the re-run rule (``bench.rerun``) instead of ending the ladder."""
    if not records or any(not r.error_kind for r in records):
        return None
    kinds = sorted({r.error_kind for r in records if r.error_kind})
    if reached and set(kinds) <= set(LOST_CONNECTION_KINDS):
        return None
    first = next((r.error for r in records if r.error), "")
    return RequestFailed(
        kinds[0] if len(kinds) == 1 else "warmup",
        f"every warm-up request failed ({', '.join(kinds)})" + (f": {first}" if first else ""),
    )
