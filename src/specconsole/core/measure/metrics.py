"""Benchmark metrics: request timelines in, ``bench_serving``-compatible numbers out.

Why this module exists and is pure: a tuning console is only as good as its numbers, and
users compare them with the JSONL files ``python -m sglang.bench_serving`` already wrote for
them. So every definition here is bench_serving's (``calculate_metrics``), every record key is
bench_serving's key name, and the arithmetic is plain data in, plain data out: it is unit
tested on hand-made timelines, and the very same file runs on the GPU box inside the
self-contained remote runner (which is why it uses only the standard library and Python 3.10
syntax).

Definitions (all times in seconds internally, ``*_ms`` keys in milliseconds):

* ``duration``: wall time of the level's measured phase (first send to last completion).
* ``completed`` / ``failed``: successful and failed measured requests; ``errors`` counts the
  failures by kind (``http_503``, ``timeout``, ``connect``...).
* ``request_throughput`` = completed / duration; ``input_throughput`` = Σ prompt tokens of
  completed requests / duration; ``output_throughput`` = Σ completion tokens / duration;
  ``total_throughput`` = (input + output) / duration.
* ``max_output_tokens_per_s``: the busiest one-second bucket, counting the first token at
  ``start + ttft`` and one token after each ITL entry (bench_serving's bucketing);
  ``max_concurrent_requests``: the most requests active in any one-second bucket.
* ``concurrency`` = Σ e2e latency / duration (the average number of requests in flight).
* TTFT: time from send to the first chunk carrying tokens. E2E: send to the end of the
  stream. TPOT = (e2e − ttft) / (n − 1) per request with n > 1 output tokens.
  ITL: each gap between consecutive token-carrying chunks; a chunk carrying k tokens (several
  accepted drafts) contributes k entries of gap / k.
* Per-request speed: decode speed (n − 1) / (e2e − ttft) and end-to-end speed n / e2e, each
  averaged (mean and median) over the level's completed requests.
* ``accept_length``: ``avg_spec_accept_length`` from ``/server_info`` read after the level
  (the counters are reset by ``/flush_cache`` before it); ``request_accept_length``: Σ n / Σ
  ``spec_verify_ct`` over requests whose server reported ``spec_verify_ct``; ``counters``
  (``spec_counters`` in a record): the engine's own counters' deltas around the measured
  phase — drafts, draft tokens, accepted, per position, output tokens
  (:mod:`specconsole.core.measure.acceptance`); ``chunk_accept_length``: the client's own
  estimate, tokens per token-carrying chunk after each stream's first (one chunk per verify
  step when the server streams each step: the cross-check of the engine's figure).
* TTST (AIPerf's time to second token): first token-carrying chunk to the next one.
* Goodput (with an SLO, :mod:`specconsole.core.measure.slo`): completed requests meeting every
  objective / duration.

Statistics follow numpy: mean, median, population standard deviation and linearly
interpolated percentiles; an empty list gives 0 (as ``np.mean(x or 0)`` does).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specconsole.core.measure.acceptance import CounterAcceptance
from specconsole.core.measure.slo import Slo
from specconsole.core.measure.stats import (  # re-exported: the metrics' statistics are numpy's
    mean,
    median,
    percentile,
    percentile_label,
    percentile_of_sorted,
    std,
)
from specconsole.core.measure.timeline import RequestTimeline, detail_lists, peak_buckets

__all__ = ["RequestTimeline", "mean", "median", "percentile", "std"]

LATENCY_METRICS: tuple[str, ...] = ("ttft", "tpot", "itl", "e2e_latency", "ttst")
"""bench_serving's latency families (plus AIPerf's time to second token, ``ttst``)."""

DEFAULT_PERCENTILES: tuple[float, ...] = (90.0, 95.0, 99.0)
"""The percentiles bench_serving records; ``--percentiles 50,90,95,99,99.9`` changes them."""

STATISTICS: tuple[str, ...] = ("mean", "median", "std", "p90", "p95", "p99")
"""The statistics bench_serving records for every latency family."""

LATENCY_KEYS: tuple[str, ...] = (
    *(f"{stat}_{name}_ms" for name in LATENCY_METRICS for stat in STATISTICS),
    "max_itl_ms",
)
"""Every latency key a level record carries, e.g. ``median_ttft_ms`` and ``p99_itl_ms``
(more ``p<q>_*_ms`` keys when other percentiles were asked for)."""

_LATENCY_KEY_RE = re.compile(
    r"^(?:mean|median|std|p\d+(?:\.\d+)?)_(?:ttft|tpot|itl|e2e_latency|ttst)_ms$"
)


def default_requests_per_level(concurrency: int) -> int:
    """Measured requests per level when a spec names none: ``max(8, 4 × concurrency)``, so
    every level sees each slot refilled several times and low levels still get 8 samples."""
    return max(8, 4 * concurrency)


def _summary_ms(
    name: str, values_s: Sequence[float], percentiles: Sequence[float]
) -> dict[str, float]:
    ordered = sorted(values_s)  # once for the median and every percentile
    out = {
        f"mean_{name}_ms": mean(values_s) * 1000.0,
        f"median_{name}_ms": percentile_of_sorted(ordered, 50.0) * 1000.0,
        f"std_{name}_ms": std(values_s) * 1000.0,
    }
    for q in percentiles:
        out[f"{percentile_label(q)}_{name}_ms"] = percentile_of_sorted(ordered, q) * 1000.0
    return out


# --------------------------------------------------------------------------------------------
# One level
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LevelMetrics:
    """Everything measured at one concurrency level, in bench_serving's vocabulary."""

    max_concurrency: int
    """The level: requests kept in flight (bench_serving's ``--max-concurrency``)."""
    request_rate: float | None
    """Poisson arrival rate in req/s, or None for closed loop (bench_serving's ``inf``)."""
    duration: float
    completed: int
    failed: int
    errors: dict[str, int]
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float
    input_throughput: float
    output_throughput: float
    total_throughput: float
    max_output_tokens_per_s: float
    max_concurrent_requests: int
    concurrency: float
    mean_decode_tok_s: float
    """Mean per-request decode speed (n − 1) / (e2e − ttft)."""
    median_decode_tok_s: float
    mean_request_tok_s: float
    """Mean per-request end-to-end speed n / e2e."""
    median_request_tok_s: float
    latency_ms: dict[str, float]
    """``{mean,median,std,p90,p95,p99}_{ttft,tpot,itl,e2e_latency}_ms`` and ``max_itl_ms``."""
    accept_length: float | None = None
    """``avg_spec_accept_length`` from ``/server_info`` after the level (None if absent)."""
    request_accept_length: float | None = None
    """Σ completion tokens / Σ ``spec_verify_ct`` over requests that reported it."""
    chunk_accept_length: float | None = None
    """The client's estimate: tokens per token-carrying chunk after each stream's first."""
    partial: bool = False
    """The level was cut short (cancelled); its numbers cover what finished."""
    warmup_requests: int = 0
    slo: dict[str, float] | None = None
    """The objectives goodput was measured against (``{"ttft_ms": 500, ...}``), if any."""
    good_requests: int | None = None
    """Completed requests that met every objective (None without an SLO)."""
    request_goodput: float | None = None
    """good_requests / duration in req/s (bench_serving / vLLM's goodput)."""
    details: dict[str, list[Any]] | None = None
    """Per-request lists as bench_serving's ``--output-details`` writes them (``input_lens``,
    ``output_lens``, ``ttfts``, ``itls``, ``errors``, plus ``starts``, ``e2e_latencies``,
    ``chunk_times``, ``chunk_tokens``), when asked for."""
    measurement: str = "completed"
    """How the level was measured: ``completed`` (bench_serving's completed-request metrics)
    or ``steady`` (a steady-state window of streamed tokens, :mod:`specconsole.bench.steady`;
    ``completed`` then counts the streams measured in the window)."""
    window: dict[str, Any] | None = None
    """The steady window's own figures (``ramp_s``, ``window_s``, ``window_tokens``,
    ``streams``, ``window_output_throughput``...); None for completed-request levels."""
    counters: CounterAcceptance | None = None
    """What the engine's own speculative-decoding counters counted during the measured phase
    (``/metrics`` deltas, :mod:`specconsole.core.measure.acceptance`); None when the engine
    declares none or they could not be read."""

    def __getitem__(self, key: str) -> Any:
        """Record-style access: ``level["median_ttft_ms"]``, ``level["output_throughput"]``."""
        return self.to_record()[key]

    def to_record(self) -> dict[str, Any]:
        """A flat dict with bench_serving's key names (JSON-able)."""
        record: dict[str, Any] = {
            "max_concurrency": self.max_concurrency,
            "request_rate": self.request_rate,
            "duration": self.duration,
            "completed": self.completed,
            "failed": self.failed,
            "errors": dict(self.errors),
            "total_input_tokens": self.total_input_tokens,
            "total_output_tokens": self.total_output_tokens,
            "request_throughput": self.request_throughput,
            "input_throughput": self.input_throughput,
            "output_throughput": self.output_throughput,
            "total_throughput": self.total_throughput,
            "max_output_tokens_per_s": self.max_output_tokens_per_s,
            "max_concurrent_requests": self.max_concurrent_requests,
            "concurrency": self.concurrency,
            "accept_length": self.accept_length,
            "request_accept_length": self.request_accept_length,
            "chunk_accept_length": self.chunk_accept_length,
            "mean_decode_tok_s": self.mean_decode_tok_s,
            "median_decode_tok_s": self.median_decode_tok_s,
            "mean_request_tok_s": self.mean_request_tok_s,
            "median_request_tok_s": self.median_request_tok_s,
            "partial": self.partial,
            "warmup_requests": self.warmup_requests,
            "measurement": self.measurement,
        }
        if self.window is not None:
            record["window"] = dict(self.window)
        if self.counters is not None:
            record["spec_counters"] = self.counters.to_dict()
        if self.slo is not None:
            record["slo"] = dict(self.slo)
            record["good_requests"] = self.good_requests
            record["request_goodput"] = self.request_goodput
        for key in LATENCY_KEYS:
            record[key] = self.latency_ms.get(key, 0.0)
        for key, value in self.latency_ms.items():
            record.setdefault(key, value)
        return record

    def to_detailed_record(self) -> dict[str, Any]:
        """:meth:`to_record` plus the per-request lists (bench_serving's --output-details)."""
        record = self.to_record()
        if self.details is not None:
            record.update(self.details)
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> LevelMetrics:
        """Rebuild from :meth:`to_record` output (unknown keys are ignored)."""

        def opt_float(key: str) -> float | None:
            value = record.get(key)
            return None if value is None else float(value)

        return cls(
            max_concurrency=int(record["max_concurrency"]),
            request_rate=opt_float("request_rate"),
            duration=float(record["duration"]),
            completed=int(record["completed"]),
            failed=int(record.get("failed", 0)),
            errors={str(k): int(v) for k, v in dict(record.get("errors") or {}).items()},
            total_input_tokens=int(record["total_input_tokens"]),
            total_output_tokens=int(record["total_output_tokens"]),
            request_throughput=float(record["request_throughput"]),
            input_throughput=float(record["input_throughput"]),
            output_throughput=float(record["output_throughput"]),
            total_throughput=float(record["total_throughput"]),
            max_output_tokens_per_s=float(record.get("max_output_tokens_per_s", 0.0)),
            max_concurrent_requests=int(record.get("max_concurrent_requests", 0)),
            concurrency=float(record.get("concurrency", 0.0)),
            mean_decode_tok_s=float(record.get("mean_decode_tok_s", 0.0)),
            median_decode_tok_s=float(record.get("median_decode_tok_s", 0.0)),
            mean_request_tok_s=float(record.get("mean_request_tok_s", 0.0)),
            median_request_tok_s=float(record.get("median_request_tok_s", 0.0)),
            latency_ms={
                **{key: float(record.get(key, 0.0)) for key in LATENCY_KEYS},
                **{k: float(v) for k, v in record.items() if _LATENCY_KEY_RE.match(k)},
            },
            accept_length=opt_float("accept_length"),
            request_accept_length=opt_float("request_accept_length"),
            chunk_accept_length=opt_float("chunk_accept_length"),
            partial=bool(record.get("partial", False)),
            warmup_requests=int(record.get("warmup_requests", 0)),
            slo=(
                {str(k): float(v) for k, v in record["slo"].items()}
                if isinstance(record.get("slo"), dict)
                else None
            ),
            good_requests=(
                None if record.get("good_requests") is None else int(record["good_requests"])
            ),
            request_goodput=opt_float("request_goodput"),
            measurement=str(record.get("measurement") or "completed"),
            window=dict(record["window"]) if isinstance(record.get("window"), Mapping) else None,
            counters=(
                CounterAcceptance.from_dict(record["spec_counters"])
                if isinstance(record.get("spec_counters"), Mapping)
                else None
            ),
        )


def compute_level_metrics(
    requests: Iterable[RequestTimeline],
    *,
    duration: float,
    max_concurrency: int,
    request_rate: float | None = None,
    accept_length: float | None = None,
    counters: CounterAcceptance | None = None,
    partial: bool = False,
    warmup_requests: int = 0,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    slo: Slo | None = None,
    details: bool = False,
) -> LevelMetrics:
    """Aggregate one level's measured requests exactly as bench_serving's calculate_metrics.

    ``percentiles`` adds ``p<q>_*_ms`` keys (p90/p95/p99 are always recorded); ``slo`` adds
    goodput; ``details`` keeps the per-request lists (``--output-file``).
    """
    reqs = list(requests)
    pcts = tuple(dict.fromkeys((*DEFAULT_PERCENTILES, *(float(q) for q in percentiles))))
    ok = [r for r in reqs if r.success]
    errors: dict[str, int] = {}
    for r in reqs:
        if not r.success:
            errors[r.error_kind] = errors.get(r.error_kind, 0) + 1
    ttfts = [r.ttft for r in ok]
    e2es = [r.latency for r in ok]
    tpots = [r.tpot for r in ok if r.output_len > 1]
    ttsts = [t for t in (r.ttst for r in ok) if t is not None]
    per_request_itls = [r.itl() for r in ok]
    itls = [gap for each in per_request_itls for gap in each]
    decode = [
        (r.output_len - 1) / (r.latency - r.ttft)
        for r in ok
        if r.output_len > 1 and r.latency > r.ttft
    ]
    e2e_speed = [r.output_len / r.latency for r in ok if r.latency > 0]
    total_in = sum(r.prompt_len for r in ok)
    total_out = sum(r.output_len for r in ok)
    dur = duration if duration > 0 else 0.0

    def per_s(x: float) -> float:
        return x / dur if dur > 0 else 0.0

    latency: dict[str, float] = {}
    latency.update(_summary_ms("ttft", ttfts, pcts))
    latency.update(_summary_ms("tpot", tpots, pcts))
    latency.update(_summary_ms("itl", itls, pcts))
    latency.update(_summary_ms("e2e_latency", e2es, pcts))
    latency.update(_summary_ms("ttst", ttsts, pcts))
    latency["max_itl_ms"] = max(itls) * 1000.0 if itls else 0.0
    peak_tok_s, peak_active = peak_buckets(ok, per_request_itls)
    verified = [r for r in ok if r.spec_verify_ct]
    verify_total = sum(r.spec_verify_ct or 0 for r in verified)
    request_accept = (
        sum(r.output_len for r in verified) / verify_total if verify_total > 0 else None
    )
    streamed = [r.chunk_tokens for r in ok if len(r.chunk_tokens) > 1]
    chunks = sum(len(c) - 1 for c in streamed)
    chunk_accept = sum(sum(c[1:]) for c in streamed) / chunks if chunks else None
    good: int | None = None
    if slo is not None and not slo.empty:
        good = sum(1 for r in ok if slo.is_good(r.ttft, r.tpot, r.latency))
    return LevelMetrics(
        max_concurrency=max_concurrency,
        request_rate=request_rate,
        duration=dur,
        completed=len(ok),
        failed=len(reqs) - len(ok),
        errors=errors,
        total_input_tokens=total_in,
        total_output_tokens=total_out,
        request_throughput=per_s(len(ok)),
        input_throughput=per_s(total_in),
        output_throughput=per_s(total_out),
        total_throughput=per_s(total_in + total_out),
        max_output_tokens_per_s=peak_tok_s,
        max_concurrent_requests=peak_active,
        concurrency=per_s(math.fsum(e2es)),
        mean_decode_tok_s=mean(decode),
        median_decode_tok_s=median(decode),
        mean_request_tok_s=mean(e2e_speed),
        median_request_tok_s=median(e2e_speed),
        latency_ms=latency,
        accept_length=accept_length,
        request_accept_length=request_accept,
        chunk_accept_length=chunk_accept,
        partial=partial,
        warmup_requests=warmup_requests,
        slo=slo.to_dict() if good is not None and slo is not None else None,
        good_requests=good,
        request_goodput=per_s(good) if good is not None else None,
        details=detail_lists(reqs) if details else None,
        counters=counters,
    )
