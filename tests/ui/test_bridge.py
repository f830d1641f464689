"""The bridge batches log lines, coalesces state, and stays bounded when the UI lags."""

from __future__ import annotations

import asyncio

from textual.message import Message

from specconsole.core.machine.events import LogLines
from specconsole.ui.bridge import ControllerBridge
from specconsole.ui.messages import LogBatch, StateChanged
from tests.ui.doubles import NOW, RecordingController, idle_state


async def test_lines_are_flushed_as_one_batch_per_interval() -> None:
    controller = RecordingController(idle_state())
    posted: list[Message] = []
    bridge = ControllerBridge(controller, posted.append, flush_interval=0.05)
    bridge.start()
    for i in range(100):
        controller.publish(controller.state, LogLines(lines=(f"line {i}",), at=NOW))
    await asyncio.sleep(0.12)
    await bridge.stop()
    batches = [m for m in posted if isinstance(m, LogBatch)]
    assert len(batches) == 1
    assert batches[0].lines == tuple(f"line {i}" for i in range(100))
    assert batches[0].dropped == 0
    assert sum(isinstance(m, StateChanged) for m in posted) == 101  # initial + one per publish
    state_messages = [m for m in posted if isinstance(m, StateChanged)]
    assert state_messages[-1].can_replace(state_messages[0])


async def test_a_lagging_ui_drops_the_oldest_lines_and_says_how_many() -> None:
    controller = RecordingController(idle_state())
    posted: list[Message] = []
    bridge = ControllerBridge(controller, posted.append, flush_interval=10.0, max_buffered=50)
    bridge.start()
    controller.publish(controller.state, LogLines(lines=tuple(str(i) for i in range(120)), at=NOW))
    bridge.flush()
    await bridge.stop()
    [batch] = [m for m in posted if isinstance(m, LogBatch)]
    assert batch.lines == tuple(str(i) for i in range(70, 120))
    assert batch.dropped == 70
