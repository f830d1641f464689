"""The console on a vLLM box: the real app driving the real controller, the plain-process
backend and the simulator's vLLM face as a real HTTP process, over the local transport.

A sweep that crashes while loading (``--gpu-memory-utilization 0.35``: vLLM refuses a KV cache
that cannot hold one request of the model's context) stops at the crash banner, which says so
in vLLM's words — its ``ValueError``, remedies naming ``--gpu-memory-utilization`` and
``--max-model-len`` — labels the trial ``spec-tokens=... gpu-mem=...``; ``r`` resumes with the
next trial; the editor shows vLLM's flags; quitting after the finished sweep carries out
``finally = "best"`` and leaves the best K serving.
"""

from __future__ import annotations

import asyncio
import sys
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.core.machine.state import Phase, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.remote.process import ProcessBackend
from specconsole.remote.transport.local import LocalTransport
from specconsole.ui.screens.editor import EditorScreen
from specconsole.ui.screens.quit import LeavingScreen
from specconsole.ui.widgets.crash import CrashBanner
from specconsole.ui.widgets.journal import JournalPane
from tests.fixtures.plans import VLLM_LAUNCHER, VLLM_SERVER, sim_plan_text
from tests.fixtures.sshd import free_port
from tests.ui.test_box_console import SWEEP_WAIT_S, _serves, _until, console

pytestmark = pytest.mark.slow


def _metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        return resp.read().decode()


SWEEP = """[sweep]
strategy = "grid"
on_crash = "pause"
load_timeout = 30
max_wall_minutes = 5
finally = "best"

[sweep.axes]
gpu_memory_utilization = [0.9, 0.35]
num_speculative_tokens = [1, 3]
"""
BENCH = """[bench]
ladder = [1, 2]
input_len = 16
output_len = 8
duration_s = 0.3
warmup_requests = 0
api = "chat"
"""


async def test_a_vllm_crash_in_vllms_words_then_r_resumes_and_quit_leaves_the_best(
    tmp_path: Path,
) -> None:
    port = free_port()
    text = sim_plan_text(
        tmp_path / "run",
        port=port,
        extra_args=["--sim-load-seconds", "0.2"],
        sweep=SWEEP,
        bench=BENCH,
        name="vllm console",
        server=VLLM_SERVER,
        launcher=VLLM_LAUNCHER,
    )
    plan = replace(resolve_placeholders(loads_plan(text), {"python": sys.executable}), source=text)
    session, wired, app = console(plan, tmp_path)
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
            assert [t.status for t in state().trials] == [
                TrialStatus.OK,
                TrialStatus.OK,
                TrialStatus.CRASHED,
            ]
            banner = app.screen.query_one(CrashBanner)
            await _until(pilot, lambda: banner.display and banner.view, 10, "the banner")
            view = banner.view
            assert view is not None
            assert "crashed while loading (KV cache)" in view.title, view.title
            words = " ".join(
                (
                    view.title,
                    view.cause,
                    *view.excerpt,
                    *view.fixes,
                    *(p for _k, p in view.previews),
                )
            )
            assert "larger than the available KV cache memory" in words, words
            assert "--gpu-memory-utilization" in words and "--max-model-len" in words, words
            assert "mem-fraction-static" not in words and "SGLang" not in words, words
            journal = app.screen.query_one(JournalPane)
            await _until(
                pilot,
                lambda: any(
                    "EngineCore failed to start." in line for line in journal.log_view.lines
                ),
                10,
                "the engine core's record in the journal",
            )
            await pilot.press("e")  # the editor speaks vLLM's flags
            await _until(pilot, lambda: isinstance(app.screen, EditorScreen), 5, "the editor")
            shown = " ".join(str(w.render()) for w in app.screen.query("Label"))
            assert "gpu_memory_utilization" in shown and "num_speculative_tokens" in shown, shown
            await pilot.press("escape")
            await pilot.pause(0.3)

            await pilot.press("r")  # resume with the next planned trial
            await _until(
                pilot,
                lambda: len(state().trials) == 4 and state().phase is Phase.AWAITING_DECISION,
                SWEEP_WAIT_S,
                "the next trial after r",
            )
            assert state().trials[3].status is TrialStatus.CRASHED  # 0.35 fails for K 3 too
            await pilot.press("r")  # nothing left to try: the sweep ends
            await _until(pilot, lambda: state().phase is Phase.DONE, SWEEP_WAIT_S, "the end")

            await pilot.press("q")
            await _until(pilot, lambda: isinstance(app.screen, LeavingScreen), 5, "leaving")
            await _until(pilot, lambda: app.final_message, SWEEP_WAIT_S, "finally = best")
        assert app.final_message.startswith("finally = best: deployed trial"), app.final_message
        assert _serves(port)
        best = max(
            (t for t in state().trials if t.status is TrialStatus.OK),
            key=lambda t: t.peak_aggregate_tok_s or 0.0,
        )
        metrics = await asyncio.to_thread(_metrics, port)
        positions = metrics.count("vllm:spec_decode_num_accepted_tokens_per_pos_total{")
        assert positions == best.config.num_speculative_tokens
    finally:
        wired.recorder.close()
        await ProcessBackend(LocalTransport(), plan.profile.service).stop()
        await wired.ports.transport.close()
        del session
