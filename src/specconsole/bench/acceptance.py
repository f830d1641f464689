"""Snapshot an engine's speculative-decoding counters around one measured level.

Why its own module: the ladder engine (:mod:`specconsole.bench.engine`) only says *when* —
right before the measured phase starts and right after it ends — and this module does the
rest: GET the engine's Prometheus text, keep the first snapshot, and after the level read
again until the server's output-token counter has caught up with what the load generator
counted (bounded: a counter that never catches up is recorded as it stands, and the cross-check
shows the difference). The names come from the engine (``Endpoints.spec_counters``, carried in
the plan as plain data); the arithmetic is :mod:`specconsole.core.measure.acceptance`'s.

A snapshot that fails (no ``/metrics``, a server started without ``--metrics``) leaves the
level without counter figures; it never fails the level. Standard library only (Python 3.10+):
bundled into the remote runner.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from specconsole.bench.api import RequestFailed
from specconsole.bench.ladder import StreamClient
from specconsole.bench.phase import Phase
from specconsole.bench.steady import SteadyPhase
from specconsole.core.measure.acceptance import (
    CounterAcceptance,
    Samples,
    SpecCounters,
    counter_deltas,
    parse_prometheus,
)

__all__ = ["CATCH_UP_S", "CounterProbe"]

CATCH_UP_S = 2.0
"""How long the after-level snapshot waits for the output-token counter to reach the load
generator's count (servers update their counters as a request is released)."""
POLL_S = 0.05


class CounterProbe:
    """One level's counters: ``await CounterProbe.started(...)`` right before the measured
    phase, ``await probe.finish(phase)`` right after it."""

    def __init__(self, client: StreamClient, counters: Mapping[str, Any] | None) -> None:
        self._client = client
        self._counters = None if not counters else SpecCounters.from_dict(counters)
        self._before: Samples | None = None

    @classmethod
    async def started(
        cls, client: StreamClient, counters: Mapping[str, Any] | None
    ) -> CounterProbe:
        """A probe that has taken its first snapshot (none without counters)."""
        probe = cls(client, counters)
        await probe.start()
        return probe

    async def _snapshot(self) -> Samples | None:
        assert self._counters is not None
        try:
            return parse_prometheus(await self._client.get_text(self._counters.path))
        except RequestFailed:
            return None

    async def start(self) -> None:
        if self._counters is not None:
            self._before = await self._snapshot()

    async def finish(self, phase: Phase) -> CounterAcceptance | None:
        """The level's deltas; None without counters or when a snapshot failed. After a
        phase whose requests all ran to their end (not a steady window, which cancels its
        streams) the read is repeated until the server's output counter reaches what the load
        generator counted, for at most :data:`CATCH_UP_S`."""
        counters, before = self._counters, self._before
        if counters is None or before is None:
            return None
        counted_output = None if isinstance(phase, SteadyPhase) else phase.output_tokens
        deadline = time.monotonic() + CATCH_UP_S
        while True:
            after = await self._snapshot()
            if after is None:
                return None
            figures = counter_deltas(before, after, counters)
            behind = (
                counted_output is not None
                and figures.output_tokens is not None
                and figures.output_tokens < counted_output
            )
            if not behind or time.monotonic() >= deadline:
                return figures
            await asyncio.sleep(POLL_S)
