"""Quitting after a finished sweep leaves the box serving what ``[sweep] finally`` says.

Why: a sweep's last trial is rarely its best, and a user who quits the console expects the
box to be left serving the winner, as the headless sweep leaves it. ``Leaving`` runs
``BoxOps.finish`` (``controller.finish.apply_finally`` behind it) while ``LeavingScreen``
shows each step, then exits with the outcome as the app's ``final_message`` (printed after
the console closes). A second quit key leaves at once and says the box may be mid-change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.app import App
from textual.worker import Worker

from specconsole.ui.screens.quit import LeavingScreen

if TYPE_CHECKING:
    from specconsole.ui.bridge import BoxOps

LINGER_S = 1.0
"""How long the outcome stays on screen before the console closes."""


class Leaving:
    """One ``[sweep] finally`` on the way out."""

    def __init__(self, app: App[None], box: BoxOps, done: Callable[[str, bool], None]) -> None:
        self._app = app
        self._box = box
        self._done = done
        self.screen = LeavingScreen(box.finally_action)
        self._worker: Worker[None] | None = None

    def start(self) -> None:
        self._app.push_screen(self.screen)
        self._worker = self._app.run_worker(
            self._run(), name="finally", group="finally", exclusive=True, exit_on_error=False
        )

    async def _run(self) -> None:
        action = self._box.finally_action
        verb = {
            "best": "deploying the best trial's configuration, then waiting until it serves",
            "original": "restoring the box's own unit, then waiting until it serves",
            "stop": "stopping the service",
            "last": "leaving the box on the last trial",
        }.get(action, action)
        try:
            self.screen.progress(f"finally = {action}: {verb}…")
            message, failed = await self._box.finish(self.screen.progress)
        except Exception as exc:  # the box is left as it is; say so instead of hanging
            message = (
                f"finally = {action} failed: {exc}; to put back a configuration that served: "
                f"{self._box.rollback_command}"
            )
            failed = True
        self.screen.progress(message)
        await asyncio.sleep(LINGER_S)
        self._done(message, failed)

    def force(self) -> None:
        """Quit now, ``finally`` unfinished."""
        if self._worker is not None and not self._worker.is_finished:
            self._worker.cancel()
            self._done(
                f"quit before finally = {self._box.finally_action} finished: the box may not "
                f"serve yet. To put back a configuration that served: "
                f"{self._box.rollback_command}",
                True,
            )
