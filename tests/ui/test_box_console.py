"""The console guarding a real box: it probes the box as it opens (an alias that does not
resolve is on screen at once, a reachable box's facts are in the box panel), the first
deploy's diff is confirmed (or cancelled, which changes nothing), every deploy's diff is in
the diff pane, and quitting after the finished sweep carries out ``[sweep] finally = "best"``
and waits until the box serves; quitting after a crash says the server is down and how to
roll back.

The real app (``make_app`` with the CLI's ``ConsoleBox``) drives the real controller, the
plain-process backend and the simulator as a real HTTP process, over the local transport.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from textual.pilot import Pilot

from specconsole.commands.tui import read_console_file
from specconsole.controller.wiring import ConsoleBox, Wired, wire_controller
from specconsole.core.machine.state import ControllerState, Phase, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.core.plans.plan import SweepPlan
from specconsole.paths import examples_dir
from specconsole.present.deploys.diffs import NEXT_KEY, NO_CHANGE, PENDING_KEY
from specconsole.remote.process import ProcessBackend
from specconsole.remote.transport.local import LocalTransport
from specconsole.session.store import Session
from specconsole.ui.app import SpecConsoleApp, make_app
from specconsole.ui.screens.confirm import ConfirmDeployScreen
from specconsole.ui.screens.diff import DiffScreen
from specconsole.ui.screens.quit import LeavingScreen
from specconsole.ui.widgets.box import BoxPanel
from specconsole.ui.widgets.diffview import DiffView
from specconsole.ui.widgets.header import StatusHeader
from specconsole.ui.widgets.trials import TrialsPane
from tests.fixtures.plans import sim_plan_text
from tests.fixtures.sshd import free_port
from tests.session.sim_sessions import BENCH

SWEEP = """[sweep]
strategy = "grid"
on_crash = "{on_crash}"
load_timeout = 30
max_wall_minutes = 5
finally = "best"

[sweep.axes]
speculative_num_steps = {axes}
"""
SWEEP_WAIT_S = 120.0
"""Bound on a two-trial sweep of the simulator (a few seconds on an idle machine)."""


def _serves(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


async def _until(pilot: Pilot[None], done: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return
        await pilot.pause(0.1)
    raise AssertionError(f"{what} did not happen within {timeout:.0f} s")


def console(plan: SweepPlan, tmp_path: Path) -> tuple[Session, Wired, SpecConsoleApp]:
    """The console ``specconsole tui`` opens for ``plan`` (``commands.tui._run``): its load
    generated in a process of its own (``isolate_load``), as the console ships — the load
    generator on a thread of the console's process measures what the UI's GIL lets through
    (cae2b26), which a loaded machine turns into figures off by more than the tests' bands."""
    session = Session.create(tmp_path / "sessions", plan)
    state = ControllerState(plan=plan, policy=plan.on_crash)
    wired = wire_controller(plan, session, state, isolate_load=True)
    controller = wired.controller
    app = make_app(
        controller,
        run_controller=controller.run,
        box=ConsoleBox(wired, plan, str(session.path)),
        tick_interval=None,
    )
    return session, wired, app


def _header(app: SpecConsoleApp) -> str:
    return str(app.screen.query_one(StatusHeader).render())


class Box:
    """A simulated box on loopback, its session and the console wired to it."""

    def __init__(self, tmp_path: Path, *, axes: str = "[1, 2]", on_crash: str = "auto") -> None:
        self.port = free_port()
        self.run_dir = tmp_path / "run"
        text = sim_plan_text(
            self.run_dir,
            port=self.port,
            extra_args=["--sim-load-seconds", "0.2"],
            sweep=SWEEP.format(axes=axes, on_crash=on_crash),
            bench=BENCH,
            name="console box",
        )
        plan = resolve_placeholders(loads_plan(text), {"python": sys.executable})
        self.plan = replace(plan, source=text)
        self.session, self.wired, self.app = console(self.plan, tmp_path)

    @property
    def state(self) -> ControllerState:
        return self.wired.controller.state

    async def start_sweep(self, pilot: Pilot[None]) -> None:
        """Press s; the first deploy's confirmation must come up."""
        await pilot.press("s")
        await _until(
            pilot, lambda: isinstance(self.app.screen, ConfirmDeployScreen), 30, "the confirm"
        )
        # the screen shows its diff once mounted: read it after that, not the frame before
        await _until(pilot, self._confirm_shows_its_diff, 5, "the confirm's diff")

    def _confirm_shows_its_diff(self) -> bool:
        """The confirm's diff is on screen (not before the pushed screen has composed)."""
        views = self.app.screen.query(DiffView)
        return bool(views) and views.first().plain != NO_CHANGE

    async def close(self) -> None:
        self.wired.recorder.close()
        await ProcessBackend(LocalTransport(), self.plan.profile.service).stop()
        await self.wired.ports.transport.close()


@pytest.fixture
def notices(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every message the app shows on its message line, in order."""
    seen: list[str] = []
    original = SpecConsoleApp._say

    def say(self: SpecConsoleApp, text: str, severity: str = "information") -> None:
        seen.append(text)
        original(self, text, severity)

    monkeypatch.setattr(SpecConsoleApp, "_say", say)
    yield seen


@pytest.mark.slow
async def test_cancelling_the_first_deploy_changes_nothing(
    tmp_path: Path, notices: list[str]
) -> None:
    box = Box(tmp_path)
    try:
        async with box.app.run_test(size=(120, 40)) as pilot:
            panel = box.app.screen.query_one(BoxPanel)
            await _until(pilot, lambda: "reachable" in panel.plain, 30, "the box probe")
            facts = panel.plain
            assert facts.startswith("box local: reachable"), facts
            assert "service: process" in facts and "not serving" in facts, facts
            assert "connected" in _header(box.app)
            await pilot.press("v")  # before anything deployed: the preview of the next deploy
            await _until(pilot, lambda: isinstance(box.app.screen, DiffScreen), 30, "diff pane")
            preview = box.app.screen
            assert isinstance(preview, DiffScreen) and preview.entry is not None
            assert preview.entry.key == NEXT_KEY and "s starts the sweep" in preview.entry.title
            assert "--speculative-num-steps 1" in preview.query_one(DiffView).plain
            await pilot.press("escape")
            await box.start_sweep(pilot)
            shown = box.app.screen.query_one(DiffView).plain
            # the process backend's artifact is the command line: steps=1 is added
            assert "+" in shown and "--speculative-num-steps 1" in shown, shown
            await pilot.press("escape")
            await _until(pilot, lambda: notices, 5, "the cancel message")
            await pilot.pause(0.5)
            assert any("nothing was changed on the box" in n for n in notices), notices
            assert any("the sweep was not started" in n for n in notices), notices
            assert box.app.sent_intents == []
            assert box.state.sweep_started_at is None and box.state.trial is None
            assert not _serves(box.port)
            assert not box.session.load_trials()
            await pilot.press("q")
    finally:
        await box.close()


@pytest.mark.slow
async def test_confirmed_sweep_shows_every_diff_then_quit_leaves_the_best_serving(
    tmp_path: Path,
) -> None:
    box = Box(tmp_path)
    try:
        async with box.app.run_test(size=(120, 40)) as pilot:
            await box.start_sweep(pilot)
            first_diff = box.app.screen.query_one(DiffView).plain
            await pilot.press("enter")
            # the diff pane shows the deploy in progress as soon as its diff is known
            await _until(pilot, lambda: box.state.trial is not None, 10, "trial 1")
            await _until(
                pilot,
                lambda: box.state.phase is Phase.DONE and len(box.state.trials) == 2,
                SWEEP_WAIT_S,
                "the two-trial sweep (later deploys are not asked)",
            )
            trials = box.state.trials
            assert [t.status for t in trials] == [TrialStatus.OK, TrialStatus.OK]
            assert first_diff == trials[0].deploy_diff.rstrip("\n"), "confirmed = deployed"

            # v: the newest trial first; ← → step; from the trials table, its selected row
            await pilot.press("v")
            await _until(pilot, lambda: isinstance(box.app.screen, DiffScreen), 5, "diff pane")
            screen = box.app.screen
            assert isinstance(screen, DiffScreen) and screen.entry is not None
            assert screen.entry.key == "1" and screen.entry.diff == trials[1].deploy_diff
            shown = screen.query_one(DiffView).plain
            assert "-" in shown and "+" in shown and "--speculative-num-steps 2" in shown
            await pilot.press("right")
            assert screen.entry.key == "0" and screen.entry.diff == trials[0].deploy_diff
            await pilot.press("escape")
            await pilot.press("3")  # focus the trials table, select trial 1's row
            table = box.app.screen.query_one(TrialsPane).table
            table.move_cursor(row=0)
            await pilot.pause(0.2)
            key = box.app.screen.query_one(TrialsPane).selected_key
            await pilot.press("v")
            await _until(pilot, lambda: isinstance(box.app.screen, DiffScreen), 5, "diff pane")
            assert box.app.screen.entry is not None  # type: ignore[attr-defined]
            assert box.app.screen.entry.key == key != PENDING_KEY  # type: ignore[attr-defined]
            await pilot.press("escape")

            # q after the finished sweep: finally = best, shown step by step, then leave
            await pilot.press("q")
            await _until(pilot, lambda: isinstance(box.app.screen, LeavingScreen), 5, "leaving")
            leaving = box.app.screen
            assert isinstance(leaving, LeavingScreen)
            await _until(pilot, lambda: box.app.final_message, SWEEP_WAIT_S, "finally = best")
            assert leaving.lines[-1] == box.app.final_message, leaving.lines
            assert leaving.lines[0].startswith("finally = best: deploying the best trial")
        message = box.app.final_message
        assert message.startswith("finally = best: deployed trial") and "serves" in message
        assert not box.app.final_failed
        assert _serves(box.port), "finally = best must leave the box serving"
    finally:
        await box.close()


@pytest.mark.slow
async def test_quit_after_a_crash_says_the_server_is_down_and_how_to_roll_back(
    tmp_path: Path,
) -> None:
    box = Box(tmp_path, axes="[1, 10]", on_crash="pause")  # steps=10: "Not enough memory"
    box.app._gate.open = True  # the confirmation has its own tests
    try:
        async with box.app.run_test(size=(120, 40)) as pilot:
            await pilot.press("s")
            await _until(
                pilot,
                lambda: box.state.phase is Phase.AWAITING_DECISION,
                SWEEP_WAIT_S,
                "the crash of steps=10",
            )
            await pilot.press("q")
            await _until(pilot, lambda: box.app.final_message, 10, "the quit message")
        message = box.app.final_message
        assert "The server is down (trial 2 crashed)" in message, message
        assert "o (roll back)" in message and f"specconsole rollback {box.session.path}" in message
    finally:
        await box.close()


async def test_an_alias_that_does_not_resolve_shows_at_once_without_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, notices: list[str]
) -> None:
    """``specconsole tui examples/seed-box.toml`` with an alias no resolver knows."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))  # no ~/.ssh/config entry names the alias
    text = (examples_dir() / "seed-box.toml").read_text()
    assert 'alias = "gpu-box"' in text
    path = tmp_path / "seed-box.toml"
    path.write_text(text.replace('alias = "gpu-box"', 'alias = "no-such-host.invalid"'))
    plan, _theme = read_console_file(path)
    session, wired, app = console(plan, tmp_path)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            opened = time.monotonic()
            panel = app.screen.query_one(BoxPanel)
            assert "connecting" in panel.plain or "UNREACHABLE" in panel.plain
            await _until(pilot, lambda: "UNREACHABLE" in panel.plain, 30, "the probe's error")
            took = time.monotonic() - opened
            assert "no-such-host.invalid" in panel.plain, panel.plain
            assert panel.display, "the error must be on screen"
            await pilot.pause(0.2)
            assert "unreachable" in _header(app), _header(app)
            assert any("box unreachable" in n and "no-such-host.invalid" in n for n in notices)
            assert app.sent_intents == [], "nothing was pressed"
            assert took < 20, f"the unreachable box took {took:.1f} s to show"
            await pilot.press("q")
        assert not session.load_trials()
    finally:
        wired.recorder.close()
        await wired.ports.transport.close()
