"""A traceback whose exception line names the cause is settled at once, not after the
one-second fallback, and its fatal event carries the time that line was written.

Why: vLLM's engine core logs its death as one record (every line under one header) and the
next line comes seconds later (tests/data/vllm/crash-long-context.log: 4 s), so the generic
"a traceback ends at the next ordinary line, or after 1 s of silence" would report every
vLLM death in load a second late and without the fatal line's own time.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from specconsole.controller.watcher import ServerWatch, WatchTiming
from specconsole.core.machine import events as ev
from tests.realengine.vllm_recipes import recorded


async def _watch(lines: list[str], written: float, timing: WatchTiming) -> list[tuple[float, Any]]:
    """Feed ``lines`` (each written at ``written``), then silence; what was posted, when."""
    posted: list[tuple[float, Any]] = []
    unused: Any = object()
    watch = ServerWatch(
        epoch=0,
        trial_index=None,
        after=None,
        engine="vllm",
        backend=unused,
        http=unused,
        url=unused,
        post=lambda event: posted.append((time.monotonic(), event)),
        sink=None,
        timing=timing,
    )
    queue: asyncio.Queue[Any] = asyncio.Queue()
    for line in lines:
        queue.put_nowait((line, None, written))
    consumer = asyncio.create_task(watch._consume_logs(queue, asyncio.Event()))
    await asyncio.sleep(1.5)
    consumer.cancel()
    await asyncio.gather(consumer, return_exceptions=True)
    return posted


async def _reported_at_once(recipe: str, last: str) -> None:
    """Feed the recorded ``recipe`` up to its first line holding ``last``, then silence: one
    fatal event, posted with the line's own time, well before the one-second fallback."""
    lines = recorded(recipe).read_text().splitlines()
    end = next(i for i, line in enumerate(lines) if last in line)
    started = time.monotonic()
    posted = await _watch(lines[: end + 1], 1_796_600_000.5, WatchTiming(settle_after_s=1.0))
    fatal = [(at, e) for at, e in posted if isinstance(e, ev.FatalSeen)]
    assert len(fatal) == 1, posted
    at, event = fatal[0]
    assert event.source_time == 1_796_600_000.5
    assert at - started < 0.8  # settle_proven_s (0.2 s), not the 1 s fallback


async def test_a_proven_traceback_is_reported_at_once_with_its_lines_time() -> None:
    await _reported_at_once("crash-long-context", "ValueError: To serve")


@pytest.mark.parametrize("recipe", ["crash-missing-draft", "crash-context-beyond-model"])
async def test_a_closed_argument_report_is_reported_at_once(recipe: str) -> None:
    """vLLM's argument checks die in a pydantic report that ends on its own closing line, not
    on the exception line: once every error of the report is closed with its cause named,
    nothing more belongs to it (the real bed measured these deaths 1,001-1,002 ms late)."""
    await _reported_at_once(recipe, "For further information visit")
