"""Snapshot an engine's speculative-decoding counters around one measured level, and during it.

Why its own module: the ladder engine (:mod:`specconsole.bench.ladder_run`) only says *when* —
right before the measured phase starts and right after it ends — and this module does the
rest: GET the engine's Prometheus text, keep the first snapshot, and after the level read
again until the server's output-token counter has caught up with what the load generator
counted (bounded: a counter that never catches up is recorded as it stands, and the cross-check
shows the difference). In between it snapshots every :data:`SERIES_S` on a connection of its
own (the client's ``control_client()``: the level's streams hold every slot of the load's):
each interval's acceptance, or the engine's own acceptance gauge when it keeps one, so drift
within a level shows; the series is bounded (:data:`SERIES_MAX` figures: two neighbours
merge and the interval doubles). The names come from the engine (``Endpoints.spec_counters``,
carried in the plan as plain data); the arithmetic is
:mod:`specconsole.core.measure.acceptance`'s.

A snapshot that fails (no ``/metrics``, a server started without ``--metrics``) leaves the
level without counter figures; it never fails the level. An answer that is not trusted (not
Prometheus text, a counter that went backwards — also between two reads during the level,
where a reset and regrowth would hide from the end points) leaves the level's counters
``unknown`` with the reason. The load generator's own output-token count is recorded beside
the server's (``client_output_tokens``): the cross-check of a counter that lies. Standard
library only (Python 3.10+) but for ``prometheus_client``'s parser: bundled, with it, into
the remote runner.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

from specconsole.bench.api import RequestFailed
from specconsole.bench.ladder import StreamClient
from specconsole.bench.phase import Phase
from specconsole.bench.steady import SteadyPhase
from specconsole.core.measure.acceptance import (
    CategoryCounts,
    CounterAcceptance,
    Samples,
    SpecCounters,
    counter_deltas,
    gauge_value,
    is_reset,
    steps_value,
)
from specconsole.core.measure.prometheus import read_prometheus

__all__ = ["CATCH_UP_S", "SERIES_MAX", "SERIES_S", "CounterProbe"]

CATCH_UP_S = 2.0
"""How long the after-level snapshot waits for the output-token counter to reach the load
generator's count (servers update their counters as a request is released)."""
POLL_S = 0.05
SERIES_S = 0.5
"""How often the counters are read during the level (the acceptance over time)."""
SERIES_MAX = 40
"""Figures kept for one level: past it, neighbours merge and the interval doubles."""


class CounterProbe:
    """One level's counters: ``await CounterProbe.started(...)`` right before the measured
    phase, ``await probe.finish(phase)`` right after it."""

    def __init__(self, client: StreamClient, counters: Mapping[str, Any] | None) -> None:
        self._client = client
        self._counters = None if not counters else SpecCounters.from_dict(counters)
        self._before: Samples | None = None
        self._make_sampler: Callable[[], StreamClient] | None = getattr(
            client, "control_client", None
        )
        """A client of its own for the snapshots during the level (none: no series)."""
        self._sampler: StreamClient | None = None
        self._task: asyncio.Future[None] | None = None
        self._series: list[float] = []
        self._steps: list[float] = []
        """The engine's draft-length gauge at each read during the level (what it ran)."""
        self._every = SERIES_S
        self._turn_start: Samples | None = None
        """Shifting traffic: the snapshot at the end of the last category's turn."""
        self._turn_counts: dict[str, list[int]] = {}
        """Per category: drafts, accepted, requests over its turns so far."""
        self._turn_output = 0
        self._turn_completed = 0
        self._untrusted = ""
        self._problem = ""
        """Why the level's counters cannot be trusted, seen by a snapshot during the level
        (a counter that went backwards between two reads: a reset the end points may hide)
        or by the first snapshot (an answer that is not Prometheus text)."""

    @classmethod
    async def started(
        cls, client: StreamClient, counters: Mapping[str, Any] | None
    ) -> CounterProbe:
        """A probe that has taken its first snapshot (none without counters) and reads
        them during the level."""
        probe = cls(client, counters)
        await probe.start()
        return probe

    async def _snapshot(self, client: StreamClient | None = None) -> Samples | None:
        """The counters now (None: no answer, or one that is not trusted — its reason kept
        in :attr:`_problem`). The reads around the level parse every line of the answer;
        those during it (``client`` given) only the counters' own lines, at a sixth of the
        CPU (``benchmarks/prometheus_parse.py``): they run beside the load every interval."""
        counters = self._counters
        assert counters is not None
        try:
            text = await (client or self._client).get_text(counters.path)
        except RequestFailed:
            return None
        scrape = read_prometheus(text, None if client is None else counters.names)
        if not scrape.trusted:
            self._problem = f"{counters.path}: {scrape.problem}"
            return None
        return scrape.samples

    async def start(self) -> None:
        if self._counters is not None:
            self._before = await self._snapshot()
            if self._before is not None and self._make_sampler is not None:
                self._sampler = self._make_sampler()
                self._task = asyncio.ensure_future(self._sample(self._sampler, self._before))

    async def _sample(self, client: StreamClient, last: Samples) -> None:
        """Each interval's acceptance (the engine's gauge when it names one: it is kept up
        to date as it decodes, where its counters may count only finished requests)."""
        counters = self._counters
        assert counters is not None
        while True:
            await asyncio.sleep(self._every)
            now = await self._snapshot(client)
            if now is None:
                continue
            interval = counter_deltas(last, now, counters)
            if is_reset(interval) and not self._untrusted:
                self._untrusted = interval.unknown
            if counters.gauge is not None:
                value = gauge_value(now, counters)
            else:
                value = interval.acceptance_length
            last = now
            steps = steps_value(now, counters)
            if steps is not None and len(self._steps) < SERIES_MAX * 8:
                self._steps.append(steps)
            if value is not None:
                self._series.append(value)
            if len(self._series) >= SERIES_MAX:  # bounded: halve the resolution
                pairs = zip(self._series[::2], self._series[1::2], strict=False)
                self._series = [(a + b) / 2 for a, b in pairs]
                self._every *= 2

    async def split(self, category: str, phase: Phase) -> None:
        """A category's turn of shifting traffic ended (its requests drained): read the
        counters (waiting, bounded, until the server counted the turn's output) and add the
        turn's deltas to the category."""
        counters, start = self._counters, self._turn_start or self._before
        if counters is None or start is None:
            return
        wanted = phase.output_tokens - self._turn_output
        deadline = time.monotonic() + CATCH_UP_S
        while True:
            now = await self._snapshot()
            if now is None:
                return
            turn = counter_deltas(start, now, counters)
            if not turn.trusted:
                self._untrusted = self._untrusted or turn.unknown
                return
            counted = turn.output_tokens
            if counted is None or counted >= wanted or time.monotonic() >= deadline:
                break
            await asyncio.sleep(POLL_S)
        totals = self._turn_counts.setdefault(category, [0, 0, 0])
        totals[0] += turn.drafts
        totals[1] += turn.accepted
        totals[2] += phase.completed - self._turn_completed
        self._turn_start, self._turn_output = now, phase.output_tokens
        self._turn_completed = phase.completed

    async def aclose(self) -> None:
        """Stop reading during the level (the level ended, however it ended)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        sampler, self._sampler = self._sampler, None
        if sampler is not None:
            with contextlib.suppress(Exception):
                await sampler.aclose()

    async def finish(self, phase: Phase) -> CounterAcceptance | None:
        """The level's deltas; None without counters or when a snapshot failed. After a
        phase whose requests all ran to their end (not a steady window, which cancels its
        streams) the read is repeated until the server's output counter reaches what the load
        generator counted, for at most :data:`CATCH_UP_S`."""
        await self.aclose()
        counters, before = self._counters, self._before
        if counters is None:
            return None
        counted_output = None if isinstance(phase, SteadyPhase) else phase.output_tokens
        if before is None:  # no answer: no figures; an answer not trusted: unknown, and why
            return CounterAcceptance.untrusted(self._problem) if self._problem else None
        deadline = time.monotonic() + CATCH_UP_S
        while True:
            after = await self._snapshot()
            if after is None:
                return CounterAcceptance.untrusted(self._problem) if self._problem else None
            figures = counter_deltas(before, after, counters)
            if self._untrusted and figures.trusted:
                figures = CounterAcceptance.untrusted(self._untrusted)
            behind = (
                counted_output is not None
                and figures.output_tokens is not None
                and figures.output_tokens < counted_output
            )
            if not behind or time.monotonic() >= deadline:
                ran = sum(self._steps) / len(self._steps) if self._steps else None
                return dataclasses.replace(
                    figures,
                    series=tuple(self._series) if figures.trusted else (),
                    series_interval_s=self._every if self._series and figures.trusted else None,
                    client_output_tokens=counted_output,
                    drafted_length=ran if ran is not None else figures.drafted_length,
                    categories=tuple(
                        CategoryCounts(name, *counts) for name, counts in self._turn_counts.items()
                    )
                    if figures.trusted
                    else (),
                )
            await asyncio.sleep(POLL_S)
