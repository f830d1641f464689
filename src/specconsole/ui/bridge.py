"""The one bridge from the controller to the UI, and the seam the UI drives it through.

The controller publishes every ``(state, event)`` to its subscribers, possibly hundreds of
times a second while a server floods its log. The bridge turns that into at most ~10 UI
messages a second: the newest state snapshot (older queued ones are replaced), and the log
lines buffered since the last flush as one ``LogBatch``. The buffer is bounded, so a UI that
falls behind drops the oldest lines (and says how many) instead of growing without limit.
On a pool the lines are the focused box's: when the console switches to another box, lines
of the old one still buffered are discarded (the pool's handle then publishes the new box's
recent journal), so the pane never mixes two boxes.

``ControllerHandle`` is the UI's whole view of the controller: current state, subscribe, and
send an intent. The real runtime (``specconsole.controller``) and the tests' recording
controller both satisfy it. ``BoxOps`` is what the console asks of the box outside the
trials: the diff a deploy would make (shown before the session's first deploy) and
``[sweep] finally`` when the user quits after a finished sweep
(``specconsole.controller.console.ConsoleController`` for the console of one box, over
``specconsole.controller.wiring.ConsoleBox``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from textual.message import Message

from specconsole.core.machine.intents import Event
from specconsole.core.machine.state import ControllerState
from specconsole.present.pool import focused_box
from specconsole.ui.messages import LogBatch, StateChanged

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig

FLUSH_INTERVAL_S = 0.1
"""How often buffered log lines are handed to the journal pane."""

MAX_BUFFERED_LINES = 20_000
"""Lines held between flushes before the oldest are dropped."""

Subscriber = Callable[[ControllerState, Event | None], None]


@runtime_checkable
class ControllerHandle(Protocol):
    """What the UI needs from a controller."""

    @property
    def state(self) -> ControllerState:
        """The latest published snapshot."""
        ...

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(state, event)`` after every transition; returns an unsubscriber."""
        ...

    def send(self, event: Event) -> None:
        """Queue a user intent for the state machine (never blocks)."""
        ...


class BoxOps(Protocol):
    """What the console does on the box besides running trials."""

    @property
    def finally_action(self) -> str:
        """The plan's ``[sweep] finally`` (best, original, last or stop)."""
        ...

    @property
    def rollback_command(self) -> str:
        """The shell command that puts back a configuration that served
        (``specconsole rollback SESSION``)."""
        ...

    async def preview(self, config: ServerConfig) -> str | None:
        """The unified diff deploying ``config`` would make on the box now (values of
        environment variables redacted), or None when the controller would not deploy it
        (it fails validation). Raises ``TransportError`` when the box cannot be reached."""
        ...

    async def finish(self, progress: Callable[[str], None]) -> tuple[str, bool]:
        """Carry out ``[sweep] finally`` and wait until the box serves; ``progress`` gets a
        line per step. Returns the sentence saying what the box serves now, and whether it
        failed (the box was changed but does not serve, or could not be reached)."""
        ...


class ControllerBridge:
    """Subscribes to a controller and posts coalesced messages to the app."""

    def __init__(
        self,
        controller: ControllerHandle,
        post: Callable[[Message], object],
        *,
        flush_interval: float = FLUSH_INTERVAL_S,
        max_buffered: int = MAX_BUFFERED_LINES,
    ) -> None:
        self._controller = controller
        self._post = post
        self._interval = flush_interval
        self._lines: deque[str] = deque(maxlen=max_buffered)
        self._received = 0
        self._flushed = 0
        self._lock = threading.Lock()
        self._unsubscribe: Callable[[], None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._box = focused_box(controller.state)

    def start(self) -> None:
        """Subscribe and start the periodic flush (call from the app's event loop)."""
        self._unsubscribe = self._controller.subscribe(self.publish)
        self._post(StateChanged(self._controller.state))
        self._task = asyncio.get_running_loop().create_task(self._flush_loop())

    async def stop(self) -> None:
        """Unsubscribe, stop flushing and deliver what is left."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.flush()

    def publish(self, state: ControllerState, event: Event | None = None) -> None:
        """The subscriber callback; safe to call from any thread."""
        box = focused_box(state)
        if box != self._box:
            with self._lock:
                self._box = box
                self._flushed += len(self._lines)  # the old box's: discarded, not dropped
                self._lines.clear()
        if event is not None:
            # the controller that publishes has loaded every outcome type; the console's
            # first frame, drawn before it starts, loads none of them
            from specconsole.core.machine.events import LogLines

            if isinstance(event, LogLines) and event.lines:
                self.feed(event.lines)
        self._post(StateChanged(state))

    def feed(self, lines: tuple[str, ...] | list[str]) -> None:
        """Buffer log lines for the next flush."""
        with self._lock:
            self._lines.extend(lines)
            self._received += len(lines)

    def flush(self) -> None:
        """Post everything buffered as one ``LogBatch`` (nothing when empty)."""
        with self._lock:
            if not self._lines:
                return
            lines = tuple(self._lines)
            self._lines.clear()
            dropped = self._received - self._flushed - len(lines)
            self._flushed = self._received
        self._post(LogBatch(lines, dropped=dropped))

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            self.flush()
