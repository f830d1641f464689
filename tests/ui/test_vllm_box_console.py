"""The console on a vLLM box in the real systemd container over the real sshd: the user's
hand-written ``vllm serve`` unit (the simulator's vLLM face) imported, a sweep that crashes
while loading stops at the crash banner in vLLM's words, ``r`` resumes, and quitting after
the sweep carries out ``finally = "best"``: the best K runs in the user's unit and serves.
"""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

import pytest
import tomli_w

from specconsole.commands.tui import read_console_file
from specconsole.core.machine.state import Phase, TrialStatus
from specconsole.ui.screens.quit import LeavingScreen
from specconsole.ui.widgets.crash import CrashBanner
from tests.fixtures.nspawn import NspawnBox, nspawn_box  # noqa: F401
from tests.fixtures.sshd import free_port
from tests.remote.test_box_sweep import health, profile_toml
from tests.remote.test_systemd_edit import install_hand_written
from tests.remote.test_vllm_box import UNIT, UNIT_PATH, cli, running_k, vllm_unit
from tests.ui.test_box_console import SWEEP_WAIT_S, _until, console

pytestmark = [pytest.mark.systemd, pytest.mark.slow]


async def test_the_console_on_a_vllm_unit_crash_banner_r_and_finally_best(
    nspawn_box: NspawnBox,  # noqa: F811
    tmp_path: Path,
) -> None:
    port = free_port()
    await asyncio.to_thread(install_hand_written, nspawn_box, UNIT, vllm_unit(port))
    start = f"rm -rf {UNIT_PATH}.d && systemctl daemon-reload && systemctl start {UNIT}"
    await asyncio.to_thread(nspawn_box.ssh, start)
    profile = tmp_path / "box.toml"
    profile.write_text(profile_toml(nspawn_box))
    try:
        imported = str(tmp_path / "imported.toml")
        code, out = await asyncio.to_thread(cli, "import", str(profile), "-o", imported)
        assert code == 0, out
        document = tomllib.loads((tmp_path / "imported.toml").read_text())
        document["sweep"] = {
            "strategy": "grid",
            "on_crash": "pause",
            "load_timeout": 60,
            "finally": "best",
            "axes": {"gpu_memory_utilization": [0.9, 0.35], "num_speculative_tokens": [1, 2]},
        }
        document["bench"] = {
            "ladder": [1, 2],
            "input_len": 32,
            "output_len": 16,
            "duration_s": 0.3,
            "warmup_requests": 0,
            "api": "chat",
        }
        path = tmp_path / "plan.toml"
        path.write_text(tomli_w.dumps(document))
        plan, _theme = read_console_file(path)
        _session, wired, app = console(plan, tmp_path)
        app._gate.open = True  # the first deploy's confirmation has its own tests
        state = lambda: wired.controller.state  # noqa: E731
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.press("s")
                await _until(
                    pilot,
                    lambda: state().phase is Phase.AWAITING_DECISION,
                    SWEEP_WAIT_S,
                    "the crash of gpu_memory_utilization 0.35",
                )
                statuses = [t.status for t in state().trials]
                assert statuses == [TrialStatus.OK, TrialStatus.OK, TrialStatus.CRASHED]
                banner = app.screen.query_one(CrashBanner)
                await _until(pilot, lambda: banner.display and banner.view, 10, "the banner")
                view = banner.view
                assert view is not None and "crashed while loading (KV cache)" in view.title
                words = " ".join((view.cause, *view.excerpt, *view.fixes))
                assert "larger than the available KV cache memory" in words, words
                assert "--gpu-memory-utilization" in words, words
                for _ in range(2):  # r: the next trial (0.35 fails for K 2 too), then the end
                    await pilot.press("r")
                    await _until(
                        pilot,
                        lambda: (
                            state().phase in (Phase.AWAITING_DECISION, Phase.DONE)
                            and state().trial is None
                            and len(state().trials) >= 4
                        ),
                        SWEEP_WAIT_S,
                        "the sweep after r",
                    )
                await _until(pilot, lambda: state().phase is Phase.DONE, SWEEP_WAIT_S, "the end")
                await pilot.press("q")
                await _until(pilot, lambda: isinstance(app.screen, LeavingScreen), 5, "leaving")
                await _until(pilot, lambda: app.final_message, SWEEP_WAIT_S, "finally = best")
            assert app.final_message.startswith("finally = best: deployed trial"), app.final_message
            best = max(
                (t for t in state().trials if t.status is TrialStatus.OK),
                key=lambda t: t.peak_aggregate_tok_s or 0.0,
            )
            k = await asyncio.to_thread(running_k, nspawn_box)
            assert k == best.config.num_speculative_tokens
            assert await asyncio.to_thread(health, nspawn_box, port) == 200
        finally:
            wired.recorder.close()
            await wired.ports.transport.close()
    finally:
        await asyncio.to_thread(nspawn_box.ssh, f"systemctl stop {UNIT}; true")
