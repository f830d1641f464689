"""The seed's plan in the console, against the real llama-server unit in the real systemd
container over the real sshd (a pilot test of the real app): the sweep starts on ``s`` and
the confirmed first deploy, the crash of the context the host cannot hold comes up in the
banner with its cause and the ``ctx_size`` fix, ``r`` resumes, and quitting after the
finished sweep carries out ``finally = "best"``: the best trial serves.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from specconsole.core.machine.state import Phase, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.ui.screens.quit import LeavingScreen
from specconsole.ui.widgets.crash import CrashBanner
from tests.fixtures.llamacpp import LlamaCppBuild
from tests.fixtures.nspawn import NspawnBox
from tests.fixtures.sshd import free_port
from tests.realengine.box import (
    N_MAX,
    UNIT,
    cli,
    health,
    install,
    profile_toml,
    running,
    seed_plan,
    users_unit,
)
from tests.ui.test_box_console import console

pytestmark = [pytest.mark.llamacpp, pytest.mark.systemd, pytest.mark.slow]

SWEEP_WAIT_S = 600.0


async def until(pilot: Pilot[None], done: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return
        await pilot.pause(0.2)
    raise AssertionError(f"{what} did not happen within {timeout:.0f} s")


@pytest.mark.timeout(900)
async def test_the_seed_plan_in_the_console_crash_r_resumes_finally_best(
    nspawn_box: NspawnBox, llamacpp_build: LlamaCppBuild, tmp_path: Path
) -> None:
    port = free_port()
    install(nspawn_box, users_unit(llamacpp_build, port))
    profile = tmp_path / "box.toml"
    profile.write_text(profile_toml(nspawn_box))
    imported = str(tmp_path / "imported.toml")
    code, out = await asyncio.to_thread(cli, "import", str(profile), "-o", imported)  # its own loop
    assert code == 0, out
    text = seed_plan((tmp_path / "imported.toml").read_text())
    _session, wired, app = console(loads_plan(text), tmp_path)  # as `specconsole tui` opens it
    controller = wired.controller
    app._gate.open = True  # the first deploy's confirmation has its own tests
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("s")
            await until(
                pilot,
                lambda: controller.state.phase is Phase.AWAITING_DECISION,
                SWEEP_WAIT_S,
                "the crash of trial 6",
            )
            trials = controller.state.trials
            assert [t.status for t in trials] == [TrialStatus.OK] * len(N_MAX) + [
                TrialStatus.CRASHED
            ]
            banner = app.screen.query_one(CrashBanner)
            await until(pilot, lambda: banner.display and banner.view, 10, "the crash banner")
            view = banner.view
            assert view is not None and "crashed while loading" in view.title, view
            assert "KV cache" in view.title and "insufficient memory" in view.cause, view
            assert "GPU" not in view.title, view  # llama.cpp on the CPU: its own words
            assert any("ctx_size" in fix for fix in view.fixes), view.fixes
            assert ("r", "resume") in view.choices, view.choices
            await pilot.press("r")
            await until(pilot, lambda: controller.state.phase is Phase.DONE, 60, "the sweep's end")
            await pilot.press("q")
            await until(pilot, lambda: isinstance(app.screen, LeavingScreen), 10, "leaving")
            await until(pilot, lambda: app.final_message, 180, "finally = best")
        message = app.final_message
        assert message.startswith("finally = best: deployed trial") and "serves" in message
        assert not app.final_failed
        best = int(message.split("deployed trial ", 1)[1].split()[0])
        assert running(nspawn_box) == (N_MAX[best - 1], 2048)
        assert health(nspawn_box, port) == 200
    finally:
        wired.recorder.close()
        await wired.ports.transport.close()
        nspawn_box.ssh(f"systemctl stop {UNIT}; true")
