"""The console's handle on its controller (``controller.console``): wired by the console's
controller worker right after the first frame, and nothing lost on the way.

Why: ``specconsole tui``/``demo`` open the console before the controller exists, so what the
console does before that — subscribing, sending the ``--start`` sweep, asking the first
deploy's diff — must reach the controller once it is wired, and a wiring that fails must be
said, not hang. The real app drives the real controller, the process backend and the
simulator as a real HTTP process over the local transport (as ``commands.tui._run`` does).
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from textual.pilot import Pilot

from specconsole.controller.console import ConsoleController
from specconsole.controller.localplan import resolve_local_placeholders
from specconsole.core.machine.intents import StartSweep
from specconsole.core.machine.state import ControllerState, Phase, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.core.plans.plan import SweepPlan
from specconsole.session.store import Session
from specconsole.ui.app import SpecConsoleApp, make_app
from specconsole.ui.widgets.header import StatusHeader
from tests.fixtures.plans import sim_plan_text
from tests.fixtures.sshd import free_port
from tests.session.sim_sessions import BENCH

SWEEP = """[sweep]
strategy = "grid"
on_crash = "auto"
load_timeout = 30
max_wall_minutes = 5

[sweep.axes]
speculative_num_steps = [1, 2]
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


def _plan(tmp_path: Path, port: int | str) -> SweepPlan:
    text = sim_plan_text(
        tmp_path / "run",
        port=port,
        extra_args=["--sim-load-seconds", "0.2"],
        sweep=SWEEP,
        bench=BENCH,
        name="console handle",
    )
    return replace(loads_plan(text), source=text)


def _console(
    plan: SweepPlan, tmp_path: Path, **kwargs: object
) -> tuple[Session, ConsoleController, SpecConsoleApp]:
    """What ``commands.tui._run`` opens for ``plan``."""
    session = Session.create(tmp_path / "sessions", plan)
    controller = ConsoleController(
        plan, session, ControllerState(plan=plan, policy=plan.on_crash), isolate_load=True
    )
    app = make_app(
        controller,
        run_controller=controller.run,
        box=controller,
        tick_interval=None,
        **kwargs,  # type: ignore[arg-type]
    )
    return session, controller, app


@pytest.mark.slow
async def test_the_start_sweep_sent_before_the_wiring_runs_the_sweep(tmp_path: Path) -> None:
    port = free_port()
    plan = resolve_placeholders(_plan(tmp_path, port), {"python": sys.executable})
    session, controller, app = _console(
        plan,
        tmp_path,
        confirm_first_deploy=False,
        initial_intents=[StartSweep(plan=plan, policy=plan.on_crash)],
    )
    assert controller.wired is None  # nothing is wired before the console runs
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await _until(pilot, lambda: controller.wired is not None, 30, "the wiring")
            header = app.screen.query_one(StatusHeader)
            await _until(pilot, lambda: "process" in str(header.render()), 10, "the labels")
            await _until(
                pilot, lambda: controller.state.phase is Phase.DONE, SWEEP_WAIT_S, "the sweep"
            )
            assert [t.status for t in controller.state.trials] == [TrialStatus.OK] * 2
            assert controller.state is controller.wired.controller.state  # type: ignore[union-attr]
            await pilot.press("q")
    finally:
        await controller.close(stop_server=True)
    assert not _serves(port), "close(stop_server=True) stops the server"
    assert len(session.load_trials()) == 2


async def test_a_wiring_that_fails_is_said_and_the_first_deploy_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unresolved ``port = "auto"`` is refused by the wiring: the console says the
    controller stopped and why, and the first deploy's diff cannot be shown (nothing is
    deployed, nothing recorded)."""
    plan = _plan(tmp_path, "auto")  # resolve_local_placeholders was not called
    assert plan.auto_port
    said: list[str] = []
    session, controller, app = _console(plan, tmp_path)
    original = SpecConsoleApp._say

    def say(self: SpecConsoleApp, text: str, severity: str = "information") -> None:
        said.append(text)
        original(self, text, severity)

    monkeypatch.setattr(SpecConsoleApp, "_say", say)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await _until(pilot, lambda: any("controller stopped" in s for s in said), 30, "why")
            assert any('port = "auto" was not resolved' in s for s in said), said
            await pilot.press("s")  # the sweep's first deploy asks for its diff first
            await _until(
                pilot, lambda: any("Cannot show the first deploy" in s for s in said), 30, "it"
            )
            assert any("could not be wired" in s for s in said), said
            assert controller.wired is None and controller.state.phase is Phase.IDLE
            await pilot.press("q")
    finally:
        await controller.close(stop_server=False)
    assert not session.load_trials()


def test_a_plan_resolved_for_this_machine_is_what_the_handle_wires(tmp_path: Path) -> None:
    """The handle keeps the plan it was given; ``tui`` resolves it first (its port)."""
    plan = resolve_local_placeholders(_plan(tmp_path, "auto"))
    assert not plan.auto_port
    session = Session.create(tmp_path / "sessions", plan)
    controller = ConsoleController(plan, session, ControllerState(plan=plan), isolate_load=True)
    assert controller.state.plan is plan and controller.halted == ""
    assert controller.rollback_command == f"specconsole rollback {session.path}"
    assert controller.finally_action == plan.finally_action
