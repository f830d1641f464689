"""GPU samples reach the console (issue 31): the real app and controller on the simulated box
over the real sshd (process backend, the box's own ``nvidia-smi``), at 80×24.

While the trial loads, the GPU line under the header shows every GPU (the simulator's memory
as it loads) from samples the box printed moments before; the crash of steps 10 stops at the
banner with each GPU's memory at the fatal line; the loaded trial's details give its memory
at ready and each level's tokens per joule. How fast a sample reaches the screen is measured
by ``benchmarks/telemetry.py``; here a generous bound only catches a stalled stream.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from textual.pilot import Pilot

from specconsole.controller.wiring import ConsoleBox, wire_controller
from specconsole.core.machine.state import ControllerState, Phase
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.session.store import Session
from specconsole.ui.app import make_app
from specconsole.ui.widgets.crash import CrashBanner
from specconsole.ui.widgets.gpus import GpuLine
from tests.controller.test_e2e import run_dir  # noqa: F401  (the fixture: stops the server)
from tests.fixtures.gpubox import GpuBox, gpu_sshd
from tests.fixtures.plans import sim_plan_text, ssh_host
from tests.fixtures.sshd import SshdServer, free_port
from tests.remote.test_gpu_e2e import BENCH

pytestmark = [pytest.mark.ssh, pytest.mark.slow]

SWEEP = """[sweep]
strategy = "grid"
on_crash = "pause"
load_timeout = 60
finally = "stop"

[sweep.axes]
speculative_num_steps = [3, 10]
"""
STALLED_S = 5.0
"""A sample older than this when shown means the stream is stuck (the target is 1 s)."""


@pytest.fixture(scope="module")
def gpu_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SshdServer, GpuBox]]:
    with gpu_sshd(tmp_path_factory.mktemp("gpu-console")) as box:
        yield box


def _age(stamp: str) -> float:
    whole, _, millis = stamp.partition(".")
    at = time.mktime(time.strptime(whole, "%Y/%m/%d %H:%M:%S")) + int(millis or 0) / 1000
    return time.time() - at


async def _until(pilot: Pilot[None], done: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"{what} did not happen within {timeout:.0f} s")


async def test_gpu_samples_reach_the_console(
    gpu_box: tuple[SshdServer, GpuBox],
    tmp_path: Path,
    run_dir: Path,  # noqa: F811  (the fixture)
) -> None:
    sshd, _box = gpu_box
    text = sim_plan_text(
        run_dir,
        host=ssh_host(sshd),
        port=free_port(),
        extra_args=["--sim-load-seconds", "3.0"],
        sweep=SWEEP,
        bench=BENCH,
        name="gpu console",
    )
    plan = replace(resolve_placeholders(loads_plan(text), {"python": sys.executable}), source=text)
    session = Session.create(tmp_path / "sessions", plan)
    wired = wire_controller(plan, session, ControllerState(plan=plan, policy=plan.on_crash))
    controller = wired.controller
    app = make_app(
        controller,
        run_controller=controller.run,
        box=ConsoleBox(wired, plan, str(session.path)),
        tick_interval=None,
        confirm_first_deploy=False,
    )
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("s")
            line = app.screen.query_one(GpuLine)

            def loading_shown() -> bool:
                shown = line.samples
                return (
                    controller.state.phase is Phase.LOADING
                    and line.display
                    and len(shown) == 4
                    and shown[0].memory_used_mib > 1000
                )

            await _until(pilot, loading_shown, 60, "GPU samples while loading")
            ages = [_age(s.stamp) for s in line.samples]
            assert max(ages) < STALLED_S, ages
            assert line.plain.startswith("GPUs ▕") and "/48.0 GiB" in line.plain, line.plain
            banner = app.screen.query_one(CrashBanner)
            await _until(pilot, lambda: banner.display, 120, "the crash banner of steps 10")
            assert "at the fatal line" in banner.plain, banner.plain
            decided = Phase.AWAITING_DECISION
            await _until(pilot, lambda: controller.state.phase is decided, 30, "the decision")
            await pilot.pause(0.2)
            assert not line.display  # the trial ended: its GPUs are no longer sampled
            record = session.load_trials()[0]
            assert record.gpu is not None and record.gpu.ready_mib, record
            assert all(lv.tokens_per_joule for lv in record.levels), record.levels
            await pilot.press("q")
            await pilot.pause(0.5)
    finally:
        wired.recorder.close()
        await wired.ports.transport.close()
