"""The session's first deploy waits for the user: its diff is shown and confirmed first.

Why: on a production box the first deploy edits the user's unit and restarts their server.
Before sending an intent that would deploy (``s`` starting the sweep, ``d``, an applied
edit, a retry), the gate asks the pure machine which configuration it would deploy
(``present.deploys.diffs.deploying_config``), has the box render the diff (``BoxOps.preview``, the
same path a deploy takes) and pushes ``ConfirmDeployScreen``. Deploy sends the intent and
opens the gate for the rest of the session; cancel sends nothing, so the box is untouched
and the sweep not started, and says so. Intents that deploy nothing pass straight through,
and so does everything once the gate is open. Headless runs have no gate.

``open_diff_pane`` uses the same preview for the diff pane (``v``) before anything is
deployed: its first entry is what the next deploy would change on the box.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.app import App

from specconsole.core.machine.intents import Intent, StartSweep
from specconsole.present.deploys.diffs import (
    NEXT_KEY,
    DiffEntry,
    deploying_config,
    diff_entries,
    next_deploy,
)
from specconsole.present.labels import config_label
from specconsole.ui.screens.confirm import ConfirmDeployScreen
from specconsole.ui.screens.diff import DiffScreen

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig
    from specconsole.core.machine.state import ControllerState
    from specconsole.ui.bridge import BoxOps

PREVIEW_TIMEOUT_S = 60.0
"""How long rendering the first deploy's diff on the box may take (it reads the unit)."""


def _box_errors() -> tuple[type[Exception], ...]:
    """What asking the box for a diff may raise (``BoxOps.preview``). The transports'
    contract (``core.ports``) is loaded when an answer fails, not with the console's first
    frame."""
    from specconsole.core.ports import TransportError

    return (TransportError, OSError, TimeoutError)


class DeployGate:
    """Holds back the first deploying intent until its diff is confirmed."""

    def __init__(
        self,
        app: App[None],
        box: BoxOps | None,
        send: Callable[[Intent], None],
        *,
        confirm: bool,
    ) -> None:
        self._app = app
        self._box = box
        self._send = send
        self.open = box is None or not confirm
        """True once the first deploy was confirmed (or when nothing is asked)."""

    def submit(self, state: ControllerState, intent: Intent) -> None:
        """Send ``intent`` now, or (the session's first deploy) after the user confirms."""
        config = None if self.open else deploying_config(state, intent)
        if config is None:
            self._send(intent)
            return
        self._app.run_worker(
            self._confirm(state, intent, config),
            name="confirm-deploy",
            group="confirm-deploy",
            exclusive=True,
            exit_on_error=False,
        )

    async def _confirm(self, state: ControllerState, intent: Intent, config: ServerConfig) -> None:
        assert self._box is not None
        starting = isinstance(intent, StartSweep)
        nothing = "nothing was changed on the box" + (
            "; the sweep was not started" if starting else ""
        )
        try:
            async with asyncio.timeout(PREVIEW_TIMEOUT_S):
                diff = await self._box.preview(config)
        except _box_errors() as exc:
            reason = str(exc) or f"no answer within {PREVIEW_TIMEOUT_S:g} s"
            self._app.notify(
                f"Cannot show the first deploy's diff: {reason}; {nothing}.",
                severity="error",
                timeout=30,
            )
            return
        if diff is None:  # the controller will refuse it and say why; nothing deploys
            self._send(intent)
            return
        base = state.plan.base if state.plan is not None else None
        verb = "Start the sweep with" if starting else "Deploy"
        what = f"{verb} {config_label(config, base)} on the box."
        if await self._app.push_screen_wait(ConfirmDeployScreen(what, diff)):
            self.open = True
            self._send(intent)
        else:
            self._app.notify(f"Deploy cancelled: {nothing}.", severity="warning", timeout=15)


async def open_diff_pane(
    app: App[None], box: BoxOps | None, state: ControllerState, selected: str | None, at: float
) -> None:
    """Push the diff pane: every recorded diff and, while nothing was deployed yet, the next
    deploy's diff first (rendered on the box, as the deploy will write it; left out when
    the box cannot render it now, which the message line says)."""
    entries = diff_entries(state)
    upcoming = next_deploy(state, at) if box is not None and not entries else None
    if box is not None and upcoming is not None:
        title, config = upcoming
        try:
            async with asyncio.timeout(PREVIEW_TIMEOUT_S):
                diff = await box.preview(config)
        except _box_errors() as exc:
            app.notify(f"Cannot preview the next deploy: {exc}", severity="warning")
            diff = None
        if diff is not None:
            entries = [DiffEntry(NEXT_KEY, title, diff), *entries]
    app.push_screen(DiffScreen(entries, selected))
