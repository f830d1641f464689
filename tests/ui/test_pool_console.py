"""The console on a pool of boxes: the pool lanes, the box key and the trials' box column.

The first tests drive the real app against the recording controller publishing the snapshots
``controller.pool.console`` composes (``tests.ui.doubles.pool_state``); the last runs the
real pool of two process-backend boxes (the simulator on two loopback ports) behind the
console's pool handle, started with ``s``, switched with ``n`` and quit with ``q``, which
carries out ``[sweep] finally`` on both boxes (``controller.pool.box``).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from textual.pilot import Pilot

from specconsole.controller.pool.box import PoolBox
from specconsole.controller.pool.console import PoolConsole
from specconsole.controller.pool.run import Pool, box_plan
from specconsole.core.machine.events import FocusBox, LogLines, StartSweep
from specconsole.core.machine.state import Phase, TrialStatus
from specconsole.present.labels import config_label
from specconsole.remote.process import ProcessBackend
from specconsole.remote.transport.local import LocalTransport
from specconsole.session.store import Session
from specconsole.ui.app import SpecConsoleApp, make_app
from specconsole.ui.widgets.journal import JournalPane
from specconsole.ui.widgets.pool import PoolLanes
from specconsole.ui.widgets.trials import TrialsPane
from tests.fixtures.plans import assert_pool_serves_its_best, local_pool_plan
from tests.ui.doubles import (
    FLEET_TAILS,
    NOW,
    RecordingController,
    idle_state,
    pool_state,
    steps_config,
)


def _app(controller: RecordingController | PoolConsole, **kw: object) -> SpecConsoleApp:
    return make_app(controller, theme="dark", clock=lambda: NOW, tick_interval=None, **kw)  # type: ignore[arg-type]


def _lanes_text(app: SpecConsoleApp) -> str:
    return str(app.screen.query_one(PoolLanes).render())


def _column(app: SpecConsoleApp, column: str) -> list[str]:
    table = app.screen.query_one(TrialsPane).table
    return [str(table.get_cell(row, column)) for row in table.rows]


async def test_two_boxes_show_a_lane_each_and_n_switches_the_journal() -> None:
    controller = RecordingController(pool_state("gpu-a"))
    app = _app(controller)
    async with app.run_test(size=(120, 40)) as pilot:
        controller.log("line of gpu-a")
        await pilot.pause(0.25)  # one bridge flush
        lanes = _lanes_text(app).splitlines()
        assert len(lanes) == 2
        assert lanes[0].startswith("▶ gpu-a") and lanes[1].startswith("  gpu-b")
        assert "BENCHMARKING" in lanes[0] and "0:41" in lanes[0] and "trial 4" in lanes[0]
        assert (
            "LOADING" in lanes[1]
            and "1:12" in lanes[1]
            and f"trial 5: {config_label(steps_config(5))}" in lanes[1]
        )
        assert FLEET_TAILS["gpu-b"][:40] in lanes[1]  # its last journal line
        assert _column(app, "box") == ["gpu-a", "gpu-b", "gpu-a", "gpu-a"]  # + the running one
        assert app.screen.check_action("next_box", ()) is True
        assert "next box" in str(app.screen.active_bindings.get("n").binding.description)  # type: ignore[union-attr]

        await pilot.press("n")
        await pilot.pause()
        assert [i for i in controller.intents if isinstance(i, FocusBox)] == [
            FocusBox(box="gpu-b", at=NOW)
        ]
        # the pool's handle answers with gpu-b's snapshot and its recent journal
        controller.publish(pool_state("gpu-b"), LogLines(lines=("line of gpu-b",), at=NOW))
        await pilot.pause(0.25)
        journal = app.screen.query_one(JournalPane).log_view
        assert list(journal.lines) == ["line of gpu-b"]  # gpu-a's lines are gone
        assert _lanes_text(app).splitlines()[1].startswith("▶ gpu-b")


async def test_one_box_has_no_lanes_no_box_key_and_no_box_column() -> None:
    controller = RecordingController(idle_state())
    app = _app(controller)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.25)
        assert not app.screen.query_one(PoolLanes).display
        assert app.screen.check_action("next_box", ()) is False
        await pilot.press("n")
        await pilot.pause()
        assert not [i for i in controller.intents if isinstance(i, FocusBox)]
        table = app.screen.query_one(TrialsPane).table
        assert "box" not in [c.value for c in table.columns]


SWEEP = """[sweep]
strategy = "grid"
on_crash = "auto"
load_timeout = 60
[sweep.axes]
speculative_num_steps = [1, 2, 3]
"""
BENCH = """[bench]
ladder = [1]
requests_per_level = 2
input_len = 32
output_len = 8
warmup_requests = 0
"""


async def _until(pilot: Pilot[None], done: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():  # type: ignore[operator]
            return
        await pilot.pause(0.2)
    raise AssertionError(f"{what} did not happen within {timeout:.0f} s")


@pytest.mark.slow
async def test_console_on_a_real_pool_of_two_boxes(tmp_path: Path) -> None:
    plan = local_pool_plan(tmp_path, sweep=SWEEP, bench=BENCH, name="pool", load_seconds=0.5)
    session = Session.create(tmp_path / "sessions", plan)
    pool = Pool(plan, session)
    console = PoolConsole(pool)
    app = _app(
        console,
        run_controller=console.run,
        box=PoolBox(pool, console),
        confirm_first_deploy=False,
    )
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.25)
            assert [line[2:7] for line in _lanes_text(app).splitlines()] == ["box-a", "box-b"]
            assert app.screen.check_action("next_box", ()) is True
            await pilot.press("s")  # starts the sweep on both boxes
            await _until(
                pilot,
                lambda: len(pool.trials) == 3 and not any(r.state.busy for r in pool.alive()),
                120,
                "the 3-trial sweep on two boxes",
            )
            assert [i for i in app.sent_intents if isinstance(i, StartSweep)]
            assert all(t.status is TrialStatus.OK for t in pool.trials), pool.trials
            await pilot.pause(0.3)
            boxes = _column(app, "box")
            assert sorted(set(boxes)) == ["box-a", "box-b"], boxes
            assert sorted(boxes) == sorted(t.box for t in pool.trials)
            lanes = _lanes_text(app).splitlines()
            assert all("DONE" in lane for lane in lanes), lanes
            b_tail = list(console._tails["box-b"])
            assert b_tail and b_tail[-1][:30] in lanes[1]  # the lane's last journal line

            await pilot.press("n")
            await _until(pilot, lambda: console.focus == "box-b", 5, "the switch to box-b")
            await pilot.pause(0.3)
            journal = list(app.screen.query_one(JournalPane).log_view.lines)
            assert journal[: len(b_tail)] == b_tail[: len(journal)], "box-b's journal"
            assert dict(app.state.labels)["box"] == "box-b"
            assert _lanes_text(app).splitlines()[1].startswith("▶ box-b")
            assert app.state.phase is Phase.DONE
            # q after the finished sweep: [sweep] finally (default best) on both boxes, each
            # left serving the pool's best trial — also the box whose own last trial was not.
            await pilot.press("q")
            await _until(pilot, lambda: all(r.task.done() for r in pool.runs.values()), 60, "quit")  # type: ignore[union-attr]
            ports = {name: run.port for name, run in pool.runs.items()}
            assert_pool_serves_its_best(plan, pool.trials, ports, app.final_message)
            assert not app.final_failed
    finally:
        await pool.close()
        for box in plan.boxes:
            await ProcessBackend(LocalTransport(), box_plan(plan, box).profile.service).stop()
    assert len(session.load_trials()) == 3
    await asyncio.sleep(0)
