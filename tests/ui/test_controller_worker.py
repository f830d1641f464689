"""The console waits for its controller's teardown whenever it closes, and only so long
(``ui.controller_worker``).

Why: Textual cancels an app's workers as it closes but does not wait for them, and the event
loop closes right after; the controller's teardown (stopping the commands that stream the
journal and the GPUs, saving the session) was cut short midway, leaving a streaming command
unreaped. A teardown that never ends must not keep the console from closing either.
"""

from __future__ import annotations

import asyncio

import pytest

from specconsole.ui import controller_worker
from specconsole.ui.app import make_app
from specconsole.ui.messages import LogBatch, StateChanged
from specconsole.ui.widgets.journal import JournalPane
from tests.ui.doubles import NOW, RecordingController, idle_state


class TearingDown(RecordingController):
    """A controller whose run ends with a teardown that awaits (as stopping a command does)."""

    def __init__(self, teardown_s: float) -> None:
        super().__init__(idle_state())
        self.teardown_s = teardown_s
        self.started = asyncio.Event()
        self.torn_down = False

    async def run(self) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(self.teardown_s)
            self.torn_down = True


async def test_closing_the_console_waits_for_the_controllers_teardown() -> None:
    controller = TearingDown(teardown_s=0.3)
    app = make_app(controller, run_controller=controller.run, clock=lambda: NOW, tick_interval=None)
    async with app.run_test(size=(100, 30)):
        await asyncio.wait_for(controller.started.wait(), 10)
    assert controller.torn_down


async def test_a_teardown_that_never_ends_does_not_keep_the_console_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(controller_worker, "TEARDOWN_TIMEOUT_S", 0.2)
    controller = TearingDown(teardown_s=3600)
    app = make_app(controller, run_controller=controller.run, clock=lambda: NOW, tick_interval=None)
    async with app.run_test(size=(100, 30)):
        await asyncio.wait_for(controller.started.wait(), 10)
    assert not controller.torn_down  # closed after the bound, the teardown still waiting


async def test_what_arrives_while_the_console_closes_never_reaches_for_its_panes() -> None:
    """Once the console is leaving, Textual removes its panes while the bridge's last batch
    and snapshots can still be dispatched (seen once: a ``LogBatch`` handled after the
    journal pane was gone, under load). They are dropped, not an error."""
    controller = TearingDown(teardown_s=0.0)
    app = make_app(controller, run_controller=controller.run, clock=lambda: NOW, tick_interval=None)
    async with app.run_test(size=(100, 30)):
        await asyncio.wait_for(controller.started.wait(), 10)
        main = app.screen
        app.exit()
        await main.query_one(JournalPane).remove()  # as Textual's close does, pane by pane
        app._log_batch(LogBatch(("a line after the journal went",)))
        app._state_changed(StateChanged(controller.state))


async def test_a_teardown_without_exit_drops_what_arrives_as_the_panes_go() -> None:
    """Textual's shutdown marks the app not running, then removes its screens' panes one by
    one; a batch dispatched in between (seen under load at the end of a ``run_test``) is
    dropped, not a ``NoMatches`` for the journal pane."""
    controller = TearingDown(teardown_s=0.0)
    app = make_app(controller, run_controller=controller.run, clock=lambda: NOW, tick_interval=None)
    async with app.run_test(size=(100, 30)):
        await asyncio.wait_for(controller.started.wait(), 10)
        main = app.screen
        app._running = False  # what Textual's _shutdown does first, before pruning the screens
        try:
            await main.query_one(JournalPane).remove()
            app._log_batch(LogBatch(("a line after the journal went",)))
            app._state_changed(StateChanged(controller.state))
        finally:
            app._running = True
