"""The controller's run as the console's worker: started after the first frame, and waited
for whenever the console leaves.

Why a module of its own: Textual cancels its workers as an app closes but does not wait for
them, and the event loop closes right after. The controller's teardown (stopping the
commands that stream the journal and the GPUs, closing its HTTP client, saving the session's
state) was then cut short midway, leaving a streaming command unreaped and a last save
skipped. Every way the console leaves goes through here: quitting with "stop server" waits
for the controller to stop it; any other close waits, bounded, for its teardown.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from textual.app import App
from textual.worker import Worker, WorkerCancelled, WorkerFailed

STOP_SERVER_TIMEOUT_S = 60.0
"""How long quitting with "stop server" waits for the controller to stop it."""

TEARDOWN_TIMEOUT_S = 10.0
"""How long the closing console waits for the controller's teardown (it stops the commands
streaming the journal and the GPUs, TERM then KILL after 3 s each, and saves the session)."""


class ControllerWorker:
    """The one ``controller`` worker of ``app``, running ``run`` (none: a controller that
    runs elsewhere, or a test double)."""

    def __init__(self, app: App[None], run: Callable[[], Awaitable[object]] | None) -> None:
        self._app = app
        self._run = run
        self._worker: Worker[object] | None = None

    @property
    def running(self) -> bool:
        return self._worker is not None and not self._worker.is_finished

    def start(self) -> None:
        """Start the run once (later calls change nothing)."""
        if self._run is not None and self._worker is None:
            self._worker = self._app.run_worker(
                self._run(),
                name="controller",
                group="controller",
                exclusive=True,
                exit_on_error=False,
            )

    async def server_stopped(self) -> str:
        """Wait for the running controller to finish after ``Quit(stop_server=True)``; what
        to tell the user once the console has closed."""
        assert self._worker is not None, "only a running controller is waited for"
        try:
            await asyncio.wait_for(self._worker.wait(), STOP_SERVER_TIMEOUT_S)
        except TimeoutError:
            return (
                f"The server did not confirm it stopped within {STOP_SERVER_TIMEOUT_S:g} s: "
                "check the box."
            )
        except (WorkerFailed, WorkerCancelled) as exc:
            return f"Stopping the server failed ({exc}): check the box."
        return "The server on the box was stopped, as you chose."

    async def torn_down(self) -> None:
        """Wait, bounded by :data:`TEARDOWN_TIMEOUT_S`, until the run has finished its
        teardown (the console is closing: Textual has cancelled it)."""
        if not self.running:
            return
        assert self._worker is not None
        with contextlib.suppress(WorkerCancelled, WorkerFailed, TimeoutError):
            await asyncio.wait_for(self._worker.wait(), TEARDOWN_TIMEOUT_S)
