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
  ``spec_verify_ct`` over requests whose server reported ``spec_verify_ct``.

Statistics follow numpy: mean, median, population standard deviation and linearly
interpolated percentiles; an empty list gives 0 (as ``np.mean(x or 0)`` does).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

LATENCY_METRICS: tuple[str, ...] = ("ttft", "tpot", "itl", "e2e_latency")
"""bench_serving's latency families, in its printing order's key spelling."""

STATISTICS: tuple[str, ...] = ("mean", "median", "std", "p90", "p95", "p99")
"""The statistics bench_serving records for every latency family."""

LATENCY_KEYS: tuple[str, ...] = (
    *(f"{stat}_{name}_ms" for name in LATENCY_METRICS for stat in STATISTICS),
    "max_itl_ms",
)
"""Every latency key a level record carries, e.g. ``median_ttft_ms`` and ``p99_itl_ms``."""


def default_requests_per_level(concurrency: int) -> int:
    """Measured requests per level when a spec names none: ``max(8, 4 × concurrency)``, so
    every level sees each slot refilled several times and low levels still get 8 samples."""
    return max(8, 4 * concurrency)


# --------------------------------------------------------------------------------------------
# Per-request timelines
# --------------------------------------------------------------------------------------------


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

    def itl(self) -> list[float]:
        """Inter-token latencies: a gap before a chunk of k tokens counts as k gaps of gap/k."""
        out: list[float] = []
        times = self.chunk_times
        for i in range(1, len(times)):
            k = self.chunk_tokens[i] if i < len(self.chunk_tokens) else 1
            if k <= 0:
                continue
            gap = times[i] - times[i - 1]
            out.extend([gap / k] * k)
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


# --------------------------------------------------------------------------------------------
# Statistics (numpy's definitions, without numpy)
# --------------------------------------------------------------------------------------------


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


def median(values: Sequence[float]) -> float:
    return percentile(values, 50.0)


def std(values: Sequence[float]) -> float:
    """Population standard deviation (numpy's default ``ddof=0``)."""
    if not values:
        return 0.0
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / len(values))


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile with linear interpolation (numpy's default method)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    frac = pos - lo
    return ordered[lo] + (ordered[hi] - ordered[lo]) * frac


def _summary_ms(name: str, values_s: Sequence[float]) -> dict[str, float]:
    return {
        f"mean_{name}_ms": mean(values_s) * 1000.0,
        f"median_{name}_ms": median(values_s) * 1000.0,
        f"std_{name}_ms": std(values_s) * 1000.0,
        f"p90_{name}_ms": percentile(values_s, 90.0) * 1000.0,
        f"p95_{name}_ms": percentile(values_s, 95.0) * 1000.0,
        f"p99_{name}_ms": percentile(values_s, 99.0) * 1000.0,
    }


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
    partial: bool = False
    """The level was cut short (cancelled); its numbers cover what finished."""
    warmup_requests: int = 0

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
            "mean_decode_tok_s": self.mean_decode_tok_s,
            "median_decode_tok_s": self.median_decode_tok_s,
            "mean_request_tok_s": self.mean_request_tok_s,
            "median_request_tok_s": self.median_request_tok_s,
            "partial": self.partial,
            "warmup_requests": self.warmup_requests,
        }
        for key in LATENCY_KEYS:
            record[key] = self.latency_ms.get(key, 0.0)
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
            latency_ms={key: float(record.get(key, 0.0)) for key in LATENCY_KEYS},
            accept_length=opt_float("accept_length"),
            request_accept_length=opt_float("request_accept_length"),
            partial=bool(record.get("partial", False)),
            warmup_requests=int(record.get("warmup_requests", 0)),
        )


def _buckets(successful: Sequence[RequestTimeline]) -> tuple[float, int]:
    """bench_serving's per-second buckets: (max output tokens/s, max concurrent requests)."""
    if not successful:
        return 0.0, 0
    min_start = min(r.start for r in successful)
    max_end = max(r.start + r.latency for r in successful)
    n = math.ceil(max_end - min_start) + 1
    tokens = [0] * n
    active = [0] * n
    for r in successful:
        t = r.start + r.ttft
        tokens[min(int(t - min_start), n - 1)] += 1
        for gap in r.itl():
            t += gap
            tokens[min(int(t - min_start), n - 1)] += 1
        first = int(r.start - min_start)
        last = min(int(r.start + r.latency - min_start), n - 1)
        for second in range(first, last + 1):
            active[second] += 1
    return float(max(tokens)), max(active)


def compute_level_metrics(
    requests: Iterable[RequestTimeline],
    *,
    duration: float,
    max_concurrency: int,
    request_rate: float | None = None,
    accept_length: float | None = None,
    partial: bool = False,
    warmup_requests: int = 0,
) -> LevelMetrics:
    """Aggregate one level's measured requests exactly as bench_serving's calculate_metrics."""
    reqs = list(requests)
    ok = [r for r in reqs if r.success]
    errors: dict[str, int] = {}
    for r in reqs:
        if not r.success:
            errors[r.error_kind] = errors.get(r.error_kind, 0) + 1
    ttfts = [r.ttft for r in ok]
    e2es = [r.latency for r in ok]
    tpots = [(r.latency - r.ttft) / (r.output_len - 1) for r in ok if r.output_len > 1]
    itls: list[float] = []
    for r in ok:
        itls.extend(r.itl())
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
    latency.update(_summary_ms("ttft", ttfts))
    latency.update(_summary_ms("tpot", tpots))
    latency.update(_summary_ms("itl", itls))
    latency.update(_summary_ms("e2e_latency", e2es))
    latency["max_itl_ms"] = max(itls) * 1000.0 if itls else 0.0
    peak_tok_s, peak_active = _buckets(ok)
    verified = [r for r in ok if r.spec_verify_ct]
    verify_total = sum(r.spec_verify_ct or 0 for r in verified)
    request_accept = (
        sum(r.output_len for r in verified) / verify_total if verify_total > 0 else None
    )
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
        partial=partial,
        warmup_requests=warmup_requests,
    )


# --------------------------------------------------------------------------------------------
# One trial (a ladder)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BenchResult:
    """A trial's benchmark: one :class:`LevelMetrics` per level that ran, plus headlines.

    ``single_request_tok_s`` and ``peak_aggregate_tok_s`` are always present (0.0 when no
    level produced a completed request) so charts and reports never special-case them.
    """

    levels: tuple[LevelMetrics, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    """bench_serving's settings keys: ``backend``, ``dataset_name``, ``random_input_len``..."""
    cancelled: bool = False
    """The run was stopped on request before the ladder finished."""
    error: str | None = None
    """Why the run stopped early, if it did not finish (e.g. the server went away)."""
    planned_levels: tuple[int, ...] = ()
    """The ladder that was asked for (levels that did not run are missing from ``levels``)."""

    @property
    def partial(self) -> bool:
        """True when any level was cut short or some planned levels never ran."""
        if self.cancelled or self.error or any(level.partial for level in self.levels):
            return True
        return len(self.levels) < len(self.planned_levels)

    @property
    def single_request_level(self) -> LevelMetrics | None:
        """Level 1 (or the lowest level that ran when the ladder has no 1)."""
        ran = [level for level in self.levels if level.completed > 0]
        if not ran:
            return None
        return min(ran, key=lambda level: level.max_concurrency)

    @property
    def single_request_tok_s(self) -> float:
        """Headline 1: per-request decode tok/s at concurrency 1."""
        level = self.single_request_level
        return level.mean_decode_tok_s if level is not None else 0.0

    @property
    def peak_level(self) -> LevelMetrics | None:
        """The level with the highest aggregate output throughput."""
        ran = [level for level in self.levels if level.completed > 0]
        return max(ran, key=lambda level: level.output_throughput) if ran else None

    @property
    def peak_aggregate_tok_s(self) -> float:
        """Headline 2: the best level's ``output_throughput``."""
        level = self.peak_level
        return level.output_throughput if level is not None else 0.0

    def level(self, concurrency: int) -> LevelMetrics | None:
        """The level measured at ``concurrency``, if it ran."""
        for level in self.levels:
            if level.max_concurrency == concurrency:
                return level
        return None

    def records(self) -> list[dict[str, Any]]:
        """One bench_serving-keyed record per level, with the settings merged in."""
        return [{**self.settings, **level.to_record()} for level in self.levels]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for session records (headlines included for readers' convenience)."""
        single = self.single_request_level
        peak = self.peak_level
        return {
            "single_request_tok_s": self.single_request_tok_s,
            "single_request_concurrency": single.max_concurrency if single else None,
            "peak_aggregate_tok_s": self.peak_aggregate_tok_s,
            "peak_concurrency": peak.max_concurrency if peak else None,
            "partial": self.partial,
            "cancelled": self.cancelled,
            "error": self.error,
            "planned_levels": list(self.planned_levels),
            "settings": dict(self.settings),
            "levels": [level.to_record() for level in self.levels],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BenchResult:
        """Rebuild from :meth:`to_dict` output; the headlines are recomputed, not trusted."""
        return cls(
            levels=tuple(LevelMetrics.from_record(r) for r in data.get("levels", ())),
            settings=dict(data.get("settings") or {}),
            cancelled=bool(data.get("cancelled", False)),
            error=data.get("error"),
            planned_levels=tuple(int(c) for c in data.get("planned_levels", ())),
        )
