"""Snapshot tests of the console's scenes at 80×24 and 120×40, in the dark and mono themes —
and, for the scenes of issue 34 (the crash banner, the paused sweep, the trials table with
five-digit figures, search, the help screen and the diff pane), in the light theme too.

Every scene is a real ``ControllerState`` published by the recording controller to the app
the CLI builds (``make_app``), rendered at a fixed clock with cursor blink and animations
off; log lines are fixed text. Update baselines with ``make snapshots-update`` after looking
at the report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from specconsole.core.machine.state import ControllerState, TrialStatus
from specconsole.ui.app import make_app
from tests.ui.doubles import (
    NOW,
    RecordingController,
    benchmarking_state,
    big_figures_state,
    crashed_state,
    crashed_sweep_state,
    diffs_state,
    idle_state,
    loading_state,
    paused_state,
    pool_state,
    repeated_bench_state,
)
from tests.ui.gpu_scenes import gpu_crash_state, gpu_loading_state
from tests.ui.schedule_scenes import schedule_proof_state, schedule_state

JOURNAL = (
    "[2026-07-20 12:01:02 TP0] Init torch distributed begin.",
    "[2026-07-20 12:01:40 TP0] Load weight begin. avail mem=78.50 GB",
    "[2026-07-20 12:02:21 TP0] Load weight end. elapsed=41.20 s, type=Qwen3MoeForCausalLM, "
    "avail mem=17.80 GB, mem usage=60.70 GB.",
    "[2026-07-20 12:02:23 TP0] Max running requests is reset to 48 for speculative decoding. "
    "You can override this by explicitly setting --max-running-requests.",
    "[2026-07-20 12:02:30 TP0] KV Cache is allocated. #tokens: 370000, K size: 4.20 GB, "
    "V size: 4.20 GB",
    "[2026-07-20 12:02:31 TP0] max_total_num_tokens=370000, chunked_prefill_size=8192, "
    "max_prefill_tokens=16384, max_running_requests=64, context_len=32768, "
    "available_gpu_mem=5.10 GB",
    "[2026-07-20 12:02:58] The server is fired up and ready to roll!",
    "[2026-07-20 12:03:05 TP0] Decode batch, #running-req: 16, #token: 9120, token usage: 0.02, "
    "accept len: 3.18, cuda graph: True, gen throughput (token/s): 1843.12, #queue-req: 0",
)

CRASH_JOURNAL = (
    "[2026-07-20 12:05:02 TP0] Load weight end. elapsed=41.20 s, type=Qwen3MoeForCausalLM, "
    "avail mem=17.80 GB, mem usage=60.70 GB.",
    "[2026-07-20 12:05:14 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 2801, in run_scheduler',
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
    "Current value: mem_fraction_static=0.85",
    "[2026-07-20 12:05:15] Received sigquit from a child process. It usually means the child "
    "failed.",
)


async def _type_invalid_tree(pilot: Pilot[None]) -> None:
    """topk 2 with 9 draft tokens: more than steps × topk + 1 = 7 (the core's rule)."""
    await pilot.press("e")
    await pilot.pause()
    screen = pilot.app.screen
    screen.query_one("#field-speculative_eagle_topk", Input).value = "2"
    box = screen.query_one("#field-speculative_num_draft_tokens", Input)
    box.focus()
    box.value = "9"
    box.cursor_position = len(box.value)
    await pilot.pause()


async def _show_bench_pane(pilot: Pilot[None]) -> None:
    """At 80×24 the panes switch: 2 shows the benchmark panel and charts."""
    await pilot.press("2")
    await pilot.pause()


async def _open_help(pilot: Pilot[None]) -> None:
    await pilot.press("question_mark")
    await pilot.pause()


async def _show_trials(pilot: Pilot[None]) -> None:
    """At 80×24 the panes switch: 3 shows the trials table (focused)."""
    await pilot.press("3")
    await pilot.pause()


async def _search(pilot: Pilot[None]) -> None:
    """Filter the journal on a word found in plain and in highlighted lines."""
    await pilot.press("slash")
    await pilot.press(*"mem")
    await pilot.pause()


async def _open_trial_diff(pilot: Pilot[None]) -> None:
    """The diff pane at trial 3: a 300-character process command line, wrapped."""
    await pilot.press("3")
    await pilot.press("k")
    await pilot.pause()
    await pilot.press("v")
    await pilot.pause(0.2)


async def _page_to_the_end(pilot: Pilot[None]) -> None:
    """The trials table's column pager pressed past its last page: it stops there."""
    await pilot.press("3")
    await pilot.pause()
    for _ in range(6):
        await pilot.press("l")
    await pilot.pause()


def _cancelled_state() -> ControllerState:
    """The sweep paused after trial 4 was cancelled mid-ladder: its figures are partial."""
    state = paused_state()
    last = dataclasses.replace(state.trials[-1], status=TrialStatus.CANCELLED)
    return dataclasses.replace(state, trials=(*state.trials[:-1], last))


Action = Callable[[Pilot[None]], Awaitable[None]]
Scene = tuple[Callable[[], ControllerState], tuple[str, ...], Action | None]

SCENES: dict[str, Scene] = {
    "idle": (idle_state, (), None),
    "loading": (loading_state, JOURNAL[:6], None),
    "benchmarking": (benchmarking_state, JOURNAL, _show_bench_pane),
    "repeats": (repeated_bench_state, JOURNAL, _show_bench_pane),
    "crashed": (crashed_state, CRASH_JOURNAL, None),
    "editor_error": (idle_state, (), _type_invalid_tree),
    "help": (idle_state, (), _open_help),
    "pool": (pool_state, JOURNAL, None),
    "crash_banner": (crashed_sweep_state, CRASH_JOURNAL, None),
    "paused": (paused_state, JOURNAL, None),
    "five_digits": (big_figures_state, (), _show_trials),
    "search": (idle_state, JOURNAL, _search),
    "diff_pane": (diffs_state, (), _open_trial_diff),
    "gpu_loading": (gpu_loading_state, JOURNAL[:6], None),
    "gpu_crash": (gpu_crash_state, CRASH_JOURNAL, None),
    "schedule": (schedule_state, JOURNAL, _show_trials),
    "schedule_proof": (schedule_proof_state, JOURNAL, _show_trials),
    "pager_start": (big_figures_state, (), _show_trials),
    "pager_end": (big_figures_state, (), _page_to_the_end),
    "cancelled": (_cancelled_state, JOURNAL, _show_trials),
}

THREE_THEMES: frozenset[str] = frozenset(
    {"crash_banner", "paused", "five_digits", "search", "help", "diff_pane"}
)
"""Issue 34's scenes, also in the light theme (the others: dark and mono)."""

SIZES: dict[str, tuple[int, int]] = {"80x24": (80, 24), "120x40": (120, 40)}

CASES = [
    pytest.param(scene, SIZES[size], theme, id=f"{scene}-{size}-{theme}")
    for scene in SCENES
    for size in SIZES
    for theme in (("dark", "light", "mono") if scene in THREE_THEMES else ("dark", "mono"))
]


@pytest.mark.parametrize(("scene", "size", "theme"), CASES)
def test_scene(
    snap_compare: Callable[..., bool], scene: str, size: tuple[int, int], theme: str
) -> None:
    make_state, lines, action = SCENES[scene]
    controller = RecordingController(make_state())
    app = make_app(controller, theme=theme, clock=lambda: NOW, tick_interval=None)

    async def run_before(pilot: Pilot[None]) -> None:
        if lines:
            controller.log(*lines)
        await pilot.pause(0.25)  # one bridge flush
        await pilot.app.workers.wait_for_complete()
        if action is not None:
            await action(pilot)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)
