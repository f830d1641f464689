"""Benchmark runners that keep the measurement off the UI's event loop.

Why a thread with its own loop: request timestamps are taken when the load generator's loop
gets to them. On the UI's loop a slow repaint would delay those wake-ups and inflate TTFT and
ITL; on a dedicated loop in a dedicated thread the only shared resource is the GIL, held by
the UI for short slices. Progress flows back through a thread-safe hand-off onto the caller's
loop, coalesced so a burst of completions cannot flood the UI (the latest event always
arrives; every event carries running counts, so skipping intermediate ones loses nothing).

Three placements share this code (see docs/benchmark.md):

* direct URL: :class:`ThreadedBenchmarkRunner` with the server's URL;
* through an SSH forward: :class:`ForwardedBenchmarkRunner`, the threaded runner pointed at
  ``transport.forward_local_port(...)``;
* on the GPU box: :class:`specconsole.bench.remote_runner.RemoteBenchmarkRunner`.

The console runs its load in a process of its own instead (``make_runner(..., isolated=)``:
the remote runner's script as a child process of this machine, direct or through the
forward): a busy UI holds the GIL, and a load generator waiting for it sends late and stamps
late (measured: 1,688-1,951 tok/s against a model of 1,947 at c = 64 with the UI thread busy
in C code for 90 ms at a time; 1,913-1,959 in its own process). Headless runs keep the thread,
whose process has nothing else to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from tempfile import gettempdir
from typing import Any
from urllib.parse import urlsplit

from specconsole.bench.ladder_run import LadderRun
from specconsole.bench.loadgen import make_run
from specconsole.bench.wire.eventloop import new_event_loop
from specconsole.core.measure.result import BenchResult
from specconsole.core.ports import (
    BenchmarkRunner,
    BenchProgress,
    BenchSpec,
    Placement,
    Transport,
)

STOP_GRACE_S = 30.0
"""How long a cancelled run may take to hand back its partial result."""


class ProgressRelay:
    """Delivers engine progress dicts as :class:`BenchProgress` on the caller's loop.

    ``push`` may be called from any thread. Delivery keeps the order of events and coalesces
    consecutive plain ticks to the newest one; a tick that reports a finished level
    (``level_result``) is always delivered.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        callback: Callable[[BenchProgress], None] | None,
    ) -> None:
        self._loop = loop
        self._callback = callback
        self._lock = threading.Lock()
        self._pending: list[BenchProgress] = []

    def push(self, event: dict[str, Any]) -> None:
        if self._callback is None:
            return
        progress = BenchProgress(**event)
        with self._lock:
            scheduled = bool(self._pending)
            if scheduled and self._pending[-1].level_result is None:
                self._pending[-1] = progress  # a newer tick replaces an undelivered one
            else:
                self._pending.append(progress)
        if not scheduled:
            with contextlib.suppress(RuntimeError):  # caller's loop already closed
                self._loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
        for progress in batch:
            if self._callback is not None:
                self._callback(progress)


class ThreadedBenchmarkRunner:
    """:class:`~specconsole.core.ports.BenchmarkRunner` on a dedicated thread and loop.

    ``run`` returns the :class:`BenchResult`. :meth:`stop` (any thread) ends the run early and
    makes ``run`` return the partial result marked cancelled. Cancelling the task awaiting
    ``run`` also stops the load promptly; the partial result is then kept in
    :attr:`last_result` and the cancellation propagates.
    """

    def __init__(self, *, url: str | None = None) -> None:
        self.last_result: BenchResult | None = None
        self.url = url
        """When set, the URL benchmarked whatever ``run`` is given (direct placement with an
        address of its own, e.g. the box's public name instead of its loopback)."""
        self._lock = threading.Lock()
        self._active: tuple[LadderRun, asyncio.AbstractEventLoop | None] | None = None

    def stop(self) -> None:
        """Stop the current run (if any) promptly, keeping what finished."""
        with self._lock:
            active = self._active
        if active is None:
            return
        run, loop = active
        if loop is None:
            run.cancel()  # not started yet: run() sees the flag
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(run.cancel)

    async def run(
        self,
        spec: BenchSpec,
        base_url: str,
        *,
        on_progress: Callable[[BenchProgress], None] | None = None,
    ) -> BenchResult:
        caller = asyncio.get_running_loop()
        relay = ProgressRelay(caller, on_progress)
        ladder = make_run(spec, self.url or base_url, on_progress=relay.push)
        done: asyncio.Future[BenchResult] = caller.create_future()

        def settle(result: BenchResult | None, error: BaseException | None) -> None:
            if done.done():
                return
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(result)  # type: ignore[arg-type]

        outcome: list[BenchResult] = []

        def main() -> None:
            loop = new_event_loop()
            with self._lock:
                self._active = (ladder, loop)
            try:
                result = loop.run_until_complete(ladder.run())
                outcome.append(result)
                caller.call_soon_threadsafe(settle, result, None)
            except BaseException as exc:  # delivered to the awaiting task
                with contextlib.suppress(RuntimeError):
                    caller.call_soon_threadsafe(settle, None, exc)
            finally:
                with self._lock:
                    self._active = None
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        with self._lock:
            self._active = (ladder, None)
        thread = threading.Thread(target=main, name="specconsole-bench", daemon=True)
        thread.start()
        try:
            result = await done
        except asyncio.CancelledError:
            self.stop()
            await asyncio.to_thread(thread.join, STOP_GRACE_S)
            self.last_result = outcome[0] if outcome else None
            raise
        self.last_result = result
        return result


class ForwardedBenchmarkRunner:
    """Runs the threaded load generator through an SSH local port forward.

    ``base_url`` is the server's URL as seen *on the box* (e.g. ``http://127.0.0.1:30000``);
    the runner asks the transport for a forward to that host and port and benchmarks the
    local end. The forward belongs to the transport and is closed with it.
    """

    def __init__(self, transport: Transport, inner: BenchmarkRunner | None = None) -> None:
        self._transport = transport
        self._inner = inner or ThreadedBenchmarkRunner()

    @property
    def last_result(self) -> BenchResult | None:
        return getattr(self._inner, "last_result", None)

    def stop(self) -> None:
        self._inner.stop()

    async def run(
        self,
        spec: BenchSpec,
        base_url: str,
        *,
        on_progress: Callable[[BenchProgress], None] | None = None,
    ) -> BenchResult:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or parts.port is None or not parts.hostname:
            raise ValueError(
                f"base_url {base_url!r}: give the box-side server URL as http://HOST:PORT"
            )
        forward = await self._transport.forward_local_port(parts.port, parts.hostname)
        return await self._inner.run(spec, forward.url, on_progress=on_progress)


def make_runner(
    placement: Placement | str,
    transport: Transport | None = None,
    *,
    python: str = "python3",
    url: str | None = None,
    isolated: tuple[Transport, str] | None = None,
) -> BenchmarkRunner:
    """The :class:`~specconsole.core.ports.BenchmarkRunner` for a placement.

    ``forward`` and ``remote`` need the transport to the box; ``python`` is the interpreter
    the remote runner uses there. ``url`` (direct only) is the server as the console host
    reaches it, used instead of the box-side URL the caller passes to ``run``. ``isolated``
    (this machine's transport and interpreter): a ``direct`` or ``forward`` load runs as a
    child process of this machine, never on the caller's GIL (the console's).
    """
    try:
        where = Placement(placement)
    except ValueError:
        choices = ", ".join(p.value for p in Placement)
        raise ValueError(f"placement: must be one of {choices}, got {placement!r}") from None
    if url is not None and where is not Placement.DIRECT:
        raise ValueError(f"url is only used with placement 'direct', not {where.value!r}")
    from specconsole.bench.remote_runner import RemoteBenchmarkRunner

    local: BenchmarkRunner | None = None
    if isolated is not None and where is not Placement.REMOTE:
        local = RemoteBenchmarkRunner(isolated[0], python=isolated[1], workdir=gettempdir())
    if where is Placement.DIRECT:
        if local is not None and url is not None:
            return _AtUrl(local, url)
        return local or ThreadedBenchmarkRunner(url=url)
    if transport is None:
        raise ValueError(f"placement {where.value!r} needs the transport to the box")
    if where is Placement.FORWARD:
        return ForwardedBenchmarkRunner(transport, local)
    return RemoteBenchmarkRunner(transport, python=python)


class _AtUrl:
    """A runner benchmarking ``url`` whatever URL it is given (direct with its own
    address)."""

    def __init__(self, inner: BenchmarkRunner, url: str) -> None:
        self._inner, self._url = inner, url

    @property
    def last_result(self) -> BenchResult | None:
        return getattr(self._inner, "last_result", None)

    def stop(self) -> None:
        self._inner.stop()

    async def run(
        self,
        spec: BenchSpec,
        base_url: str,
        *,
        on_progress: Callable[[BenchProgress], None] | None = None,
    ) -> BenchResult:
        return await self._inner.run(spec, self._url, on_progress=on_progress)
