"""A cancelled log follow closes the backend's stream at once, not when garbage collected.

The runtime's log reader waits on its queue between records; if it is cancelled there, the
backend's log generator (and the ``tail``/``journalctl`` process behind it) must be closed
right away — otherwise the process outlives the trial and its event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from specconsole.controller.watcher import ServerWatch, WatchTiming
from specconsole.core.ports import LogRecord


class _FollowingBackend:
    """Just enough of a backend: an endless log whose generator records when it is closed."""

    def __init__(self) -> None:
        self.closed = asyncio.Event()
        self.reader: asyncio.Task[None] | None = None
        self.closed_by_reader = False

    async def logs(self, *, after: str | None = None) -> AsyncIterator[LogRecord]:
        try:
            n = 0
            while True:
                n += 1
                yield LogRecord(text=f"line {n}", cursor=str(n))
                await asyncio.sleep(0)
        finally:
            # Closed by the reader itself (aclosing), not later by the loop's finalizer.
            self.closed_by_reader = asyncio.current_task() is self.reader
            self.closed.set()


async def test_cancelled_reader_closes_the_log_stream_immediately() -> None:
    backend = _FollowingBackend()
    unused: Any = object()
    watch = ServerWatch(
        epoch=0,
        trial_index=None,
        after=None,
        engine=None,
        backend=backend,  # type: ignore[arg-type]
        http=unused,
        url=unused,
        post=lambda event: None,
        sink=None,
        timing=WatchTiming(),
    )
    queue: asyncio.Queue[tuple[str, str | None] | None] = asyncio.Queue(maxsize=1)
    reader = asyncio.create_task(watch._read_logs(queue))
    backend.reader = reader
    async with asyncio.timeout(5):
        while not queue.full():  # the reader now waits on the full queue, outside the stream
            await asyncio.sleep(0.01)
    reader.cancel()
    await asyncio.gather(reader, return_exceptions=True)
    async with asyncio.timeout(5):
        await backend.closed.wait()
    assert backend.closed_by_reader, "the reader left the backend's log stream open"
