"""The watch's I/O: follow the server's log, poll its status and ``GET /health`` while it
loads or serves, and post what the pure watch (``core.machine.handlers.watch``) makes of it.

Why a module of its own: the three pollers, their batching and their timing are the
runtime's most intricate I/O, and none of it decides anything — the rules (what is fatal,
which load stage comes next, when an exit is an exit) are in ``core.machine.handlers.watch``:

* the log stream, parsed line by line (``core.logs``): a fatal line is reported the
  moment it is read; a traceback ends at the next ordinary line or when the stream ends,
  and as a fallback after ``settle_after_s`` of silence — long enough for a log delivered
  in bursts not to cut a traceback before the line that classifies it — or
  ``settle_proven_s`` once its exception line names the cause by itself (vLLM's engine core
  logs its death as one record and its next line comes seconds later). The fatal event
  carries the time its last line was written. Lines are posted in batches
  (``log_batch_s``), always before the event they explain;
* the service status, polled every ``status_interval_s`` and immediately when the log
  stream ends (a process that exits closes its log): an exit is posted once the log has
  drained (at most ``exit_grace_s`` later) so the fatal line that explains it is seen first;
* ``GET /health`` every ``health_interval_s`` until the server answers or logs its ready
  line, so readiness is seen even when the ready line is missed.

A watch is *retired*, not cancelled, when its trial is over (:meth:`ServerWatch.retire`): the
server writes a request's last lines (llama-server's timings and draft acceptance) as it
answers, and the follower reads them a poll later, so a watch cut off the moment the
benchmark ended lost them from the trial's log. A retired watch posts nothing more to the
controller; it writes what is still coming to the trial's log until the log has been quiet
for ``drain_quiet_s`` (or ends), and :func:`drain` bounds it by ``drain_max_s``. The runtime
lets it finish before it restarts or stops the server, so no later server's line reaches it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from specconsole.core.config.model import ServerConfig
from specconsole.core.config.secrets import scrub, secret_values
from specconsole.core.logs.events import LogEvent
from specconsole.core.logs.parser import LogParser
from specconsole.core.machine import events as ev
from specconsole.core.machine.handlers import watch as core_watch
from specconsole.core.ports import ServiceBackend

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

_Line = tuple[str, str | None, float | None]
"""A log line, its cursor and when the box's log says it was written (journal stamps)."""
_WAKE: _Line = ("", None, None)
"""Put on the line queue by :meth:`ServerWatch.retire` to wake a reader waiting on it."""


def _raise_if_cancelling() -> None:
    """Python 3.11's ``asyncio.timeout`` can turn a cancellation that lands as the timeout
    fires into a ``TimeoutError``; a loop that suppresses those would then never end (a
    teardown waiting on it hangs). Re-raise a pending cancellation."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class LogSink(Protocol):
    """Where captured log lines go (the session recorder)."""

    def log_lines(self, trial_index: int | None, lines: tuple[str, ...]) -> None: ...


@dataclass(frozen=True, slots=True)
class WatchTiming:
    """The watch's intervals, in seconds."""

    health_interval_s: float = 0.5
    status_interval_s: float = 0.5
    log_batch_s: float = 0.05
    settle_after_s: float = 1.0
    exit_grace_s: float = 1.0
    settle_proven_s: float = 0.2
    drain_quiet_s: float = 0.6
    """A retired watch stops after this long without a line (the follower polls every 0.2 s)."""
    drain_max_s: float = 3.0
    """And after this long in any case (a server still writing: loading, or left serving)."""


class ServerWatch:
    """One watch over one server start (or a reattach); ``await run()`` until cancelled."""

    def __init__(
        self,
        *,
        epoch: int,
        trial_index: int | None,
        after: str | None,
        engine: str | None = None,
        config: ServerConfig | None = None,
        backend: ServiceBackend,
        http: httpx.AsyncClient,
        url: Callable[[], Awaitable[str]],
        post: Callable[[ev.Event], None],
        sink: LogSink | None,
        timing: WatchTiming,
    ) -> None:
        self.trial_index = trial_index
        self.after = after
        self.cursor: str | None = after
        """The journal cursor of the last line read (a later watch continues from it)."""
        self._engine = engine or (config.engine if config is not None else None)
        self._secrets = () if config is None else secret_values(config)
        """The configuration's secret values: no log line carries one past the reader (the
        server may echo its own arguments), so no view, record or log file ever holds it."""
        self._backend = backend
        self._http = http
        self._url = url
        self._post = post
        self._sink = sink
        self._timing = timing
        self._watch = core_watch.Watch(epoch=epoch)
        self._ready = asyncio.Event()
        self._retired = False
        self._lines: asyncio.Queue[_Line | None] | None = None

    def retire(self) -> None:
        """The trial is over: post nothing more; keep writing the lines still coming to the
        trial's log until the log is quiet (``drain_quiet_s``) or ends, then return."""
        self._retired = True
        if self._lines is not None:
            with contextlib.suppress(asyncio.QueueFull):  # a full queue wakes the reader anyway
                self._lines.put_nowait(_WAKE)

    def _feed(self, outcomes: tuple[ev.Outcome, ...]) -> None:
        if self._retired:
            return
        for outcome in outcomes:
            if isinstance(outcome, ev.ServerReady):
                self._ready.set()
            self._post(outcome)

    async def run(self) -> None:
        """Log stream + status polling + health polling, until cancelled."""
        lines: asyncio.Queue[_Line | None] = asyncio.Queue(maxsize=10_000)
        self._lines = lines
        exited = asyncio.Event()
        log_done = asyncio.Event()
        tasks = [
            asyncio.ensure_future(self._read_logs(lines)),
            asyncio.ensure_future(self._poll_status(exited, log_done)),
            asyncio.ensure_future(self._poll_health()),
        ]
        try:
            await self._consume_logs(lines, exited)
            if self._retired:
                return
            log_done.set()
            # The log of a run ends when its process exits: wait for the status poller to
            # confirm and report it (it polls at once, see ``exited``).
            tasks[2].cancel()
            await tasks[1]
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _read_logs(self, out: asyncio.Queue[_Line | None]) -> None:
        try:
            async with aclosing(self._backend.logs(after=self.after)) as records:
                async for record in records:
                    text = scrub(record.text, self._secrets)
                    await out.put((text, record.cursor, record.source_time))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("controller: log stream ended with %s", exc)
        finally:
            with contextlib.suppress(asyncio.QueueFull):
                out.put_nowait(None)

    async def _poll_status(self, exited: asyncio.Event, log_done: asyncio.Event) -> None:
        """Post what each status poll means; an exit once the log has drained.

        A dying server writes its fatal lines and then exits (SGLang kills its own process
        tree), and the manager may report the exit before the log has been read. So the
        exit is posted once the log stream has ended (its last lines parsed, the fatal
        event posted first) or after ``exit_grace_s``, whichever comes first.
        """
        while True:
            try:
                status = await self._backend.status()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.debug("controller: status poll failed: %s", exc)
                status = None
            if status is not None:
                self._watch, outcomes = core_watch.on_status(self._watch, status)
                if any(isinstance(o, ev.ServerExited) for o in outcomes):
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self._timing.exit_grace_s):
                            await log_done.wait()
                    self._feed(outcomes)
                    return
                self._feed(outcomes)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._timing.status_interval_s):
                    await exited.wait()
                    exited.clear()
            _raise_if_cancelling()

    async def _poll_health(self) -> None:
        """GET /health until it answers 200 once (or the ready line is seen)."""
        while not self._ready.is_set():
            try:
                url = await self._url()
                response = await self._http.get(f"{url}/health", timeout=2.0)
                self._watch, outcomes = core_watch.on_health(self._watch, response.status_code)
                self._feed(outcomes)
                if self._watch.ready:
                    return
            except asyncio.CancelledError:
                raise
            except Exception:
                pass
            await asyncio.sleep(self._timing.health_interval_s)

    async def _consume_logs(
        self, lines: asyncio.Queue[_Line | None], exited: asyncio.Event
    ) -> None:
        parser = LogParser(engine=self._engine)
        timing = self._timing
        batch: list[str] = []
        batch_started = 0.0
        loop = asyncio.get_running_loop()

        def flush() -> None:
            nonlocal batch
            if batch:
                chunk = tuple(batch)
                batch = []
                if self._sink is not None:
                    try:
                        self._sink.log_lines(self.trial_index, chunk)
                    except Exception:
                        log.exception("controller: writing the captured log failed")
                if not self._retired:
                    self._post(
                        ev.LogLines(
                            lines=chunk, trial_index=self.trial_index, epoch=self._watch.epoch
                        )
                    )

        def handle(events: list[LogEvent], written: float | None = None) -> None:
            self._watch, outcomes = core_watch.on_log_events(self._watch, events)
            if written is not None:  # a fatal line's own time: how fast it was seen
                outcomes = tuple(
                    replace(o, source_time=written)
                    if isinstance(o, ev.FatalSeen) and o.source_time is None
                    else o
                    for o in outcomes
                )
            if outcomes:
                flush()  # lines before the events they explain
                self._feed(outcomes)

        last_line = loop.time()
        last_written: float | None = None

        def settle_s() -> float:
            return timing.settle_proven_s if parser.traceback_proven else timing.settle_after_s

        try:
            while True:
                timeout = None
                if parser.in_traceback:
                    timeout = max(0.0, settle_s() - (loop.time() - last_line))
                if self._retired:  # the trial is over: until the log is quiet
                    quiet = timing.drain_quiet_s - (loop.time() - last_line)
                    if quiet <= 0:
                        flush()
                        return
                    timeout = quiet if timeout is None else min(timeout, quiet)
                if batch:
                    remaining = timing.log_batch_s - (loop.time() - batch_started)
                    timeout = remaining if timeout is None else min(timeout, remaining)
                try:
                    if timeout is None:
                        item = await lines.get()
                    else:
                        async with asyncio.timeout(max(0.0, timeout)):
                            item = await lines.get()
                except TimeoutError:
                    _raise_if_cancelling()
                    flush()
                    if parser.in_traceback and loop.time() - last_line >= settle_s():
                        # a traceback followed by silence: it is over
                        handle(parser.settle(), last_written)
                        flush()
                    continue
                if item is _WAKE:  # retired: a whole quiet window from now
                    last_line = loop.time()
                    continue
                if item is None:  # the stream ended: the process is gone (or the link dropped)
                    handle(parser.flush(), last_written)
                    flush()
                    exited.set()
                    return
                self._take(item, parser, batch, handle)
                if len(batch) == 1:
                    batch_started = loop.time()
                last_line = loop.time()
                last_written = item[2]
        except asyncio.CancelledError:
            # cut off (a later watch continues from the cursor, or the bound of a drain):
            # the lines read so far reach the trial's log all the same
            self._retired = True
            flush()
            raise

    def _take(
        self,
        item: _Line,
        parser: LogParser,
        batch: list[str],
        handle: Callable[[list[LogEvent], float | None], None],
    ) -> None:
        text, cursor, written = item
        if cursor is not None:
            self.cursor = cursor
        batch.append(text)
        handle(parser.feed(text), written)


async def drain(task: asyncio.Task[None], max_s: float) -> None:
    """Wait for a retired watch's task to finish writing what it still reads, at most
    ``max_s`` seconds; then it is cancelled (what it has read is written all the same)."""
    try:
        await asyncio.wait({task}, timeout=max_s)
        if not task.done():
            task.cancel()
            await asyncio.wait({task})
    finally:
        if not task.done():  # this wait was cancelled itself
            task.cancel()
