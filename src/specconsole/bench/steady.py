"""The steady-state window of one level (``[bench] window = "steady"``) and its numbers.

Why its own module: bench_serving's completed-request metrics wait for every request to
finish, which at 512-token outputs and 64 streams takes tens of seconds per level. A steady
window measures the same server in a few seconds: keep c streams in flight, wait until every
stream has produced its first token (the ramp-up), measure the streamed tokens over a window
of ``window_s`` seconds (or ``window_tokens`` tokens), then stop and cancel what is in flight.
The definitions live here, next to the recording, so docs/benchmark.md ("Steady-state
window") has one place to point at. Standard library only (bundled into the remote runner).

Definitions (``ws``/``we``: window start/end on the level's clock, ``t0``: first send):

* ``ramp_s`` = ``ws − t0``: the window starts at the arrival of the last stream's first token;
  if some streams are still queued when no new stream has started for ``window_s`` seconds,
  it starts at the last first token seen and ``ramp_complete`` is false.
* ``we``: ``ws + window_s``, or the arrival that brings the window's streamed tokens to
  ``window_tokens`` if that comes first — but never before every stream running at ``ws``
  has had three token arrivals in the window (slow decode steps stretch it), unless
  ``stall_timeout_s`` more pass (streams that stopped are then left out).
* A stream's rate ``r_i`` = tokens it received after its first arrival in the window, over
  the time from that arrival to its last arrival in the window (whole decode steps, so no
  partial-step error); ``window_output_throughput`` ``R`` = Σ ``r_i`` over the ``n`` streams
  with two or more arrivals in the window (``completed`` counts those streams). Arrivals that
  open the window closer together than :data:`BURST_SHARE` of the stream's median gap are
  one burst — a server catching up after a pause it had before the window (a descheduled
  process runs its missed steps back to back), or reads of one moment the client split — so
  the stream's span starts at the burst's last arrival: counting the tokens of the steps
  missed before the window, in no time, would inflate the rate (by up to a pause over the
  window: +17 % for 250 ms in 1.5 s). A stream silent at the window's start for more than
  :data:`PAUSE_GAPS` median gaps (the server paused just after the window opened) is timed
  from ``ws`` itself, every token it received in the window counted: the steps it then
  catches up belong to the window.
* ``mean_decode_tok_s`` / ``median_decode_tok_s``: mean / median of the ``r_i``.
* Per-request figures for a whole request of ``L`` output tokens (the mean requested
  length): ``e2e*`` = ``ramp_s + (L − 1) / mean(r_i)``; ``output_throughput`` = ``n·L / e2e*``,
  ``request_throughput`` = ``n / e2e*``, ``input_throughput`` likewise — what
  bench_serving reports for a closed loop of fixed-length requests whose decode runs at the
  window's rate, since each wave of c requests is prefilled together and then decodes in step.
* Latencies: TTFT of each slot's first request; ITL from the gaps inside the window; TPOT
  ``1 / r_i``; E2E ``e2e*_i`` = ``ramp_s + (L − 1) / r_i`` (projected, no request completes).
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import math
from collections.abc import Callable
from typing import Any

from specconsole.bench.phase import Phase
from specconsole.core.measure.metrics import DEFAULT_PERCENTILES, LevelMetrics, _summary_ms, median

WINDOW_COMPLETED = "completed"
"""bench_serving's completed-request metrics (the default)."""
WINDOW_STEADY = "steady"
"""A steady-state window of streamed tokens (this module)."""
WINDOWS: tuple[str, ...] = (WINDOW_COMPLETED, WINDOW_STEADY)
DEFAULT_WINDOW_S = 2.0
"""The window's length when a plan gives neither ``window_s`` nor ``window_tokens``."""
MIN_ARRIVALS = 3
"""Token arrivals every running stream must have inside the window (two whole decode
steps to time); a window whose time bound comes first is stretched until they have."""
POLL_S = 0.02
"""How often the window's bounds are checked (the bounds use arrival times, not polls)."""
BURST_SHARE = 0.25
"""Arrivals closer than this share of a stream's median gap are one burst."""
PAUSE_GAPS = 1.5
"""A stream silent this many median gaps after the window opened: the server paused."""


class SteadyPhase(Phase):
    """A measured phase that also records every slot's token arrivals for the window."""

    def __init__(
        self,
        level_index: int,
        concurrency: int,
        clock: Callable[[], float],
        *,
        window_s: float | None,
        window_tokens: int | None,
    ) -> None:
        super().__init__(level_index, concurrency, 0, False, clock, window_s)
        self.bound_s = window_s if window_s is not None else DEFAULT_WINDOW_S
        self.token_bound = window_tokens
        self.times: list[list[float]] = [[] for _ in range(concurrency)]
        self.counts: list[list[int]] = [[] for _ in range(concurrency)]
        self.sent: list[float | None] = [None] * concurrency
        self.first: list[float | None] = [None] * concurrency
        self.started = 0
        self.last_first = 0.0
        self.all_times: list[float] = []
        self.cumulative: list[int] = []
        self.output_lens: list[int] = []
        self.prompt_lens: list[int] = []
        self._last_needed = 0.0
        self.ws: float | None = None
        self.we: float | None = None
        self.window_len: float | None = None
        """``we − ws``, kept as decided: a window that ran its full ``window_s`` reports
        exactly that (``(ws + 0.3) − ws`` on a clock in the thousands reads 0.29999…)."""

    def begin(self, slot: int, output_len: int, prompt_len: int) -> Callable[[float, int], None]:
        """``slot`` sends a request of these lengths; returns the request's token sink
        (``sink(now, tokens)`` for each token-carrying chunk, in place of ``add_tokens``)."""
        if self.sent[slot] is None:
            self.sent[slot] = self.clock()
        self.output_lens.append(output_len)
        self.prompt_lens.append(prompt_len)

        def sink(now: float, tokens: int) -> None:
            self.add_slot_tokens(slot, now, tokens)

        return sink

    def add_slot_tokens(self, slot: int, now: float, tokens: int) -> None:
        """``tokens`` new output tokens arrived at ``now`` on ``slot``'s stream."""
        self.add_tokens(now, tokens)
        self.times[slot].append(now)
        self.counts[slot].append(tokens)
        self.all_times.append(now)
        self.cumulative.append((self.cumulative[-1] if self.cumulative else 0) + tokens)
        if self.first[slot] is None:
            self.first[slot] = now
            self.started += 1
            self.last_first = now

    def _every_stream_measured(self, start: float, now: float) -> bool:
        """Whether every stream that was running at ``start`` has had MIN_ARRIVALS token
        arrivals since (slow decode steps stretch the window; the last of those arrivals
        is kept in ``_last_needed``)."""
        latest = start
        for first, times in zip(self.first, self.times, strict=True):
            if first is None or first > start:
                continue  # queued at the window's start, or a later request
            index = bisect.bisect_left(times, start) + MIN_ARRIVALS - 1
            if index >= len(times) or times[index] > now:
                return False
            latest = max(latest, times[index])
        self._last_needed = latest
        return True

    def _streamed_since(self, start: float) -> int:
        index = bisect.bisect_right(self.all_times, start)
        before = self.cumulative[index - 1] if index else 0
        return (self.cumulative[-1] if self.cumulative else 0) - before

    async def settle(self, cancel: asyncio.Event, limit_s: float, first_token_s: float) -> bool:
        """Return once the window is complete (True), or False when no window could be
        measured within ``limit_s`` seconds of the first send, no stream produced a token
        within ``first_token_s`` (the server does not stream), or the run was cancelled."""
        clock = self.clock
        deadline = self.t0 + limit_s
        polls = math.ceil(limit_s / POLL_S) + 1
        for _ in range(polls):
            if cancel.is_set():
                return False
            now = clock()
            if self.ws is None and (
                self.started >= self.concurrency
                or (self.started and now - self.last_first >= self.bound_s)
            ):
                self.ws = self.last_first
            if self.ws is not None:
                ws, tokens = self.ws, self.token_bound
                by_tokens = tokens is not None and self._streamed_since(ws) >= tokens
                if (by_tokens or now >= ws + self.bound_s) and self._every_stream_measured(ws, now):
                    if by_tokens:
                        self.we, self.window_len = now, now - ws
                    else:
                        self.we = max(ws + self.bound_s, self._last_needed)
                        self.window_len = max(self.bound_s, self._last_needed - ws)
                    return True
                if now >= ws + self.bound_s + first_token_s:
                    # streams stopped mid-window: measure those that streamed
                    self.we, self.window_len = now, now - ws
                    return True
            silent = not self.started and (
                now - self.t0 >= first_token_s or self.failed >= 4 * self.concurrency + 4
            )
            if now >= deadline or silent:
                return False  # nothing streams: the level's failures say why
            await asyncio.sleep(POLL_S)
        return False

    def metrics(self, base: LevelMetrics, percentiles: tuple[float, ...]) -> LevelMetrics:
        """``base`` (the phase's finished and failed requests, computed as bench_serving
        does) with the window's figures in place of the completed-request ones."""
        ws, we, length = self.ws, self.we, self.window_len
        if ws is None or we is None or length is None:
            return dataclasses.replace(base, measurement=WINDOW_STEADY)
        rates: list[float] = []
        gaps: list[float] = []
        tokens_in = arrivals = 0
        for times, counts in zip(self.times, self.counts, strict=True):
            hi = bisect.bisect_right(times, we)
            lo = bisect.bisect_left(times, ws)
            if hi - lo < 2:
                continue
            start, lo = _span_start(times, lo, hi, ws)
            got = sum(counts[lo + 1 : hi]) + (counts[lo] if start < times[lo] else 0)
            span = times[hi - 1] - start
            if span <= 0 or got <= 0:
                continue
            rates.append(got / span)
            tokens_in += got
            arrivals += hi - lo - 1
            for i in range(lo + 1, hi):
                k = counts[i]
                if k > 0:
                    gaps.extend([(times[i] - times[i - 1]) / k] * k)
        n = len(rates)
        if n == 0:
            return dataclasses.replace(base, measurement=WINDOW_STEADY)
        ramp = ws - self.t0
        out_len = sum(self.output_lens) / len(self.output_lens)
        in_len = sum(self.prompt_lens) / len(self.prompt_lens)
        mean_rate = sum(rates) / n
        e2e = ramp + (out_len - 1.0) / mean_rate
        pairs = zip(self.first, self.sent, strict=True)
        ttfts = [f - s for f, s in pairs if f is not None and s is not None]
        pcts = tuple(dict.fromkeys((*DEFAULT_PERCENTILES, *percentiles)))
        latency = dict(base.latency_ms)
        latency.update(_summary_ms("ttft", ttfts, pcts))
        latency.update(_summary_ms("itl", gaps, pcts))
        latency.update(_summary_ms("tpot", [1.0 / r for r in rates], pcts))
        e2es = [ramp + (out_len - 1.0) / r for r in rates]
        latency.update(_summary_ms("e2e_latency", e2es, pcts))
        latency["max_itl_ms"] = max(gaps) * 1000.0 if gaps else 0.0
        window: dict[str, Any] = {
            "ramp_s": ramp,
            "ramp_complete": self.started >= self.concurrency,
            "window_s": length,
            "window_tokens": tokens_in,
            "streams": n,
            "window_output_throughput": sum(rates),
            "output_len": out_len,
            "requests_finished": self.completed,
        }
        return dataclasses.replace(
            base,
            measurement=WINDOW_STEADY,
            window=window,
            duration=we - self.t0,
            completed=n,
            total_input_tokens=round(in_len * n),
            total_output_tokens=tokens_in,
            request_throughput=n / e2e,
            input_throughput=n * in_len / e2e,
            output_throughput=n * out_len / e2e,
            total_throughput=n * (in_len + out_len) / e2e,
            max_output_tokens_per_s=max(base.max_output_tokens_per_s, self._peak_second()),
            max_concurrent_requests=max(base.max_concurrent_requests, n),
            concurrency=float(n),
            chunk_accept_length=tokens_in / arrivals if arrivals else None,
            mean_decode_tok_s=mean_rate,
            median_decode_tok_s=median(rates),
            mean_request_tok_s=out_len / e2e,
            median_request_tok_s=median([out_len / e for e in e2es]),
            latency_ms=latency,
        )

    def _peak_second(self) -> float:
        """Output tokens in the busiest one-second bucket since the first send."""
        buckets: dict[int, int] = {}
        previous = 0
        for t, total in zip(self.all_times, self.cumulative, strict=True):
            key = int(t - self.t0)
            buckets[key] = buckets.get(key, 0) + total - previous
            previous = total
        return float(max(buckets.values())) if buckets else 0.0


def _span_start(times: list[float], lo: int, hi: int, ws: float) -> tuple[float, int]:
    """Where a stream's span starts, and the index of its first arrival counted from:
    ``(times[lo], lo)`` normally; after a burst opening the window, its last arrival (see
    :data:`BURST_SHARE`); after a pause at the window's start, ``ws`` itself and ``lo`` (its
    tokens counted too: see :data:`PAUSE_GAPS`)."""
    if hi - lo < 4:
        return times[lo], lo
    gaps = sorted(times[k + 1] - times[k] for k in range(lo, hi - 1))
    typical = gaps[len(gaps) // 2]
    if times[lo] - ws > PAUSE_GAPS * typical:
        return ws, lo
    while lo + 2 < hi and times[lo + 1] - times[lo] < typical * BURST_SHARE:
        lo += 1
    return times[lo], lo
