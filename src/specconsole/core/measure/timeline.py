"""One request as the load generator saw it: send time, token-carrying chunks, server counts.

Why a module of its own: the timeline is the raw material of every benchmark number — the
metrics (:mod:`specconsole.core.measure.metrics`) aggregate it, ``--output-file`` writes it per
request, and the remote runner ships it. Its per-request definitions (TTFT, TTST, TPOT, ITL
split over multi-token chunks) are bench_serving's, AIPerf's for TTST. Pure, standard library
only, Python 3.10 (it runs on the GPU box inside the self-contained remote runner).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RequestTimeline:
    """What the load generator observed for one request.

    Times are seconds; ``start`` is on the level's monotonic clock, the other times are
    relative to ``start``. Token counts come from the server (``meta_info`` / ``usage``).
    """

    start: float
    """When the request was sent (seconds on the level's clock)."""
    latency: float
    """End-to-end seconds from send to end of stream (or to the failure)."""
    prompt_len: int
    """Prompt tokens as the server counted them (or the planned length if it did not say)."""
    output_len: int = 0
    """Completion tokens the server reported; 0 for failed requests."""
    chunk_times: tuple[float, ...] = ()
    """Arrival of every chunk that carried at least one new token, seconds after ``start``."""
    chunk_tokens: tuple[int, ...] = ()
    """New tokens in each of those chunks (same length as ``chunk_times``)."""
    error_kind: str = ""
    """Empty for a successful request, else a short kind such as ``http_500``."""
    error: str = ""
    """Human-readable failure detail."""
    spec_verify_ct: int | None = None
    """Verify passes for this request (``meta_info.spec_verify_ct``), when the server said."""

    @property
    def success(self) -> bool:
        return not self.error_kind

    @property
    def ttft(self) -> float:
        """Seconds to the first token-carrying chunk (0 when there was none)."""
        return self.chunk_times[0] if self.chunk_times else 0.0

    @property
    def ttst(self) -> float | None:
        """Time to second token (AIPerf): seconds from the first token-carrying chunk to the
        next one; None with fewer than two such chunks."""
        return self.chunk_times[1] - self.chunk_times[0] if len(self.chunk_times) > 1 else None

    @property
    def tpot(self) -> float:
        """(e2e − ttft) / (n − 1); 0 for a request with one output token (as goodput uses)."""
        return (self.latency - self.ttft) / (self.output_len - 1) if self.output_len > 1 else 0.0

    def itl(self) -> list[float]:
        """Inter-token latencies: a gap before a chunk of k tokens counts as k gaps of gap/k."""
        out: list[float] = []
        append, extend = out.append, out.extend
        times, counts = self.chunk_times, self.chunk_tokens
        if len(counts) < len(times):  # a chunk without a count carries one token
            counts = (*counts, *(1,) * (len(times) - len(counts)))
        # counts beyond the last chunk are ignored (strict=False)
        for prev, now, k in zip(times, times[1:], counts[1:], strict=False):
            if k == 1:
                append(now - prev)
            elif k > 1:
                extend([(now - prev) / k] * k)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (used by the remote runner to ship raw timelines if asked)."""
        return {
            "start": self.start,
            "latency": self.latency,
            "prompt_len": self.prompt_len,
            "output_len": self.output_len,
            "chunk_times": list(self.chunk_times),
            "chunk_tokens": list(self.chunk_tokens),
            "error_kind": self.error_kind,
            "error": self.error,
            "spec_verify_ct": self.spec_verify_ct,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RequestTimeline:
        return cls(
            start=float(data["start"]),
            latency=float(data["latency"]),
            prompt_len=int(data["prompt_len"]),
            output_len=int(data.get("output_len", 0)),
            chunk_times=tuple(float(t) for t in data.get("chunk_times", ())),
            chunk_tokens=tuple(int(k) for k in data.get("chunk_tokens", ())),
            error_kind=str(data.get("error_kind", "")),
            error=str(data.get("error", "")),
            spec_verify_ct=(
                None if data.get("spec_verify_ct") is None else int(data["spec_verify_ct"])
            ),
        )


def peak_buckets(
    successful: Sequence[RequestTimeline], itls: Sequence[Sequence[float]] | None = None
) -> tuple[float, int]:
    """bench_serving's per-second buckets: (max output tokens/s, max concurrent requests).

    ``itls``: each request's :meth:`RequestTimeline.itl`, when the caller has them already.
    """
    if not successful:
        return 0.0, 0
    min_start = min(r.start for r in successful)
    max_end = max(r.start + r.latency for r in successful)
    n = math.ceil(max_end - min_start) + 1
    last_bucket = n - 1
    tokens = [0] * n
    active = [0] * n
    for index, r in enumerate(successful):
        t = r.start + r.ttft
        tokens[min(int(t - min_start), last_bucket)] += 1
        for gap in r.itl() if itls is None else itls[index]:
            t += gap  # accumulated token by token, as bench_serving does
            bucket = int(t - min_start)
            tokens[bucket if bucket < last_bucket else last_bucket] += 1
        first = int(r.start - min_start)
        last = min(int(r.start + r.latency - min_start), n - 1)
        for second in range(first, last + 1):
            active[second] += 1
    return float(max(tokens)), max(active)


def detail_lists(reqs: Sequence[RequestTimeline]) -> dict[str, list[Any]]:
    """bench_serving's ``--output-details`` lists (every measured request, in send order)."""
    ordered = sorted(reqs, key=lambda r: r.start)
    return {
        "input_lens": [r.prompt_len for r in ordered],
        "output_lens": [r.output_len for r in ordered],
        "ttfts": [r.ttft if r.success else 0.0 for r in ordered],
        "itls": [r.itl() for r in ordered],
        "errors": [r.error_kind and f"{r.error_kind}: {r.error}" for r in ordered],
        "starts": [r.start for r in ordered],
        "e2e_latencies": [r.latency for r in ordered],
        "chunk_times": [list(r.chunk_times) for r in ordered],
        "chunk_tokens": [list(r.chunk_tokens) for r in ordered],
    }
