"""``[bench] window = "steady"`` against the simulator (a real HTTP process): the window's
figures match the simulator's model, the cancelled streams leave the server idle, and the
self-contained remote runner carries the same code."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest

from specconsole.bench.loadgen import plan_for
from specconsole.bench.remote_runner import build_script
from specconsole.bench.runner import ThreadedBenchmarkRunner
from specconsole.core.engine.registry import get_engine
from specconsole.core.machine.handlers.speculation import uncounted
from specconsole.core.machine.results import level_summaries
from specconsole.core.measure.metrics import LevelMetrics
from specconsole.core.ports import BenchSpec
from specconsole.sim.faces.sglang.args import parse_argv
from specconsole.sim.faces.sglang.resolve import resolve
from specconsole.sim.forecast import predict
from specconsole.sim.physics.model import Prediction
from specconsole.sim.physics.textkind import TextKind
from specconsole.sim.profile import load_default_profile
from tests.bench.test_remote_runner import run_on_bare_python
from tests.controller.helpers import plan
from tests.fixtures.sim import DEFAULT_FLAGS, SimProcess, running_simulator

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # figures against the model

INPUT_LEN = 256
OUTPUT_LEN = 512
"""Requests far longer than the window: no request finishes while it is measured."""
SGLANG_COUNTERS = get_engine("sglang").endpoints.spec_counters


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with running_simulator("--enable-metrics") as process:
        # A fresh server's first request takes its lazy paths (~0.1 s on a busy machine);
        # one small request first, so c = 1's ramp is the model's prefill, not start-up.
        body = {"text": "warm up", "sampling_params": {"max_new_tokens": 4}}
        httpx.post(f"{process.base_url}/generate", json=body, timeout=30).raise_for_status()
        yield process


def prediction(concurrency: int) -> Prediction:
    profile = load_default_profile()
    args = resolve(parse_argv(list(DEFAULT_FLAGS)), profile)
    # Random word prompts: exactly INPUT_LEN tokens to the simulator, drafting as "random".
    return predict(args, concurrency, INPUT_LEN, OUTPUT_LEN, profile, kind=TextKind.RANDOM)


def spec(ladder: tuple[int, ...], window_s: float) -> BenchSpec:
    return BenchSpec(
        ladder=ladder,
        input_len=INPUT_LEN,
        output_len=OUTPUT_LEN,
        prompts="random",
        warmup_requests=0,
        window="steady",
        window_s=window_s,
    )


def running_requests(sim: SimProcess) -> float:
    text = httpx.get(f"{sim.base_url}/metrics", timeout=5).text
    (line,) = [ln for ln in text.splitlines() if ln.startswith("sglang:num_running_reqs")]
    return float(line.rsplit(" ", 1)[1])


async def test_the_window_matches_the_model_and_leaves_the_server_idle(sim: SimProcess) -> None:
    result = await ThreadedBenchmarkRunner().run(spec((1, 16), 1.0), sim.base_url)
    assert not result.partial and result.error is None
    for concurrency in (1, 16):
        level = result.level(concurrency)
        assert level is not None and level.measurement == "steady" and level.window is not None
        window, expected = level.window, prediction(concurrency)
        assert window["streams"] == concurrency == level.completed and level.failed == 0
        assert window["ramp_complete"] and window["requests_finished"] == 0
        assert window["window_s"] >= 1.0 and window["window_tokens"] > 0
        # The ramp is the wave's prefill; every stream then decodes at the model's rate, and
        # a whole request (ramp + 511 tokens at that rate) is the aggregate's definition.
        assert window["ramp_s"] >= expected.ttft_s * 0.9
        per_stream = expected.decode_tok_s_per_request
        assert level.mean_decode_tok_s == pytest.approx(per_stream, rel=0.03)
        assert window["window_output_throughput"] == pytest.approx(
            per_stream * concurrency, rel=0.03
        )
        e2e = window["ramp_s"] + (OUTPUT_LEN - 1) / level.mean_decode_tok_s
        assert level.output_throughput == pytest.approx(concurrency * OUTPUT_LEN / e2e)
        if concurrency > 1:
            # At c = 16 the ramp is the model's 16-prompt prefill; at c = 1 it is one 14 ms
            # prefill, where one scheduling hiccup of a busy machine would be 4 % of a request.
            assert level.output_throughput == pytest.approx(expected.aggregate_tok_s, rel=0.03)
        assert level.latency_ms["median_ttft_ms"] > 0 and level.latency_ms["median_itl_ms"] > 0
        back = LevelMetrics.from_record(level.to_record())
        assert back.measurement == "steady" and back.window == window
        print(
            f"c={concurrency}: decode {level.mean_decode_tok_s:.1f} vs {per_stream:.1f}, "
            f"aggregate {level.output_throughput:.1f} vs {expected.aggregate_tok_s:.1f}"
        )
    assert result.single_request_tok_s == result.level(1).mean_decode_tok_s  # type: ignore[union-attr]
    # The window's streams were cancelled, not left decoding 512 tokens each.
    deadline = time.monotonic() + 5.0
    while running_requests(sim) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert running_requests(sim) == 0


def test_the_remote_runner_script_measures_the_same_window(sim: SimProcess) -> None:
    """The bare-stdlib script (``python -I -S``) bundles the steady window too."""
    messages = run_on_bare_python(build_script(plan_for(spec((4,), 0.5)), sim.base_url))
    (result,) = [m for m in messages if m["type"] == "result"]
    (level,) = result["result"]["levels"]
    assert level["measurement"] == "steady" and level["window"]["streams"] == 4
    assert level["output_throughput"] == pytest.approx(prediction(4).aggregate_tok_s, rel=0.05)


BOUND_S = 10.0
"""What a loaded machine may add to a run of levels (connections, the first sends)."""


async def test_streams_that_stall_mid_window_are_failures_in_bounded_time() -> None:
    """The simulator stops every stream after 3 tokens: the window ends within
    ``stall_timeout_s`` (not the 600 s request timeout), and each level records the stalled
    requests as failures (the trial is then degraded, not a clean result).

    The margins come from the configured bounds (issue 44: with both cores busy, a 0.5 s
    window once ended before one stream's stall was seen — 1 stalled request of 2). A window
    whose streams stopped is given up ``window_s + stall_timeout_s`` after the last stream's
    first token (``bench.steady``), and each stream's stall is seen ``stall_timeout_s`` after
    its own third token: every stall is seen before the window ends as long as three tokens
    and the stall's wake-up take less than ``window_s`` after that first token. A simulator's
    token takes milliseconds, a loaded machine's wake-up tens of them: ``window_s`` 3 s leaves
    seconds to spare. The run as a whole waits for each level's window, never the 600 s
    request timeout: twice each level's bound, and :data:`BOUND_S` for a loaded start."""
    stall_s = 1.0
    stalled = BenchSpec(
        ladder=(2, 4),
        input_len=64,
        output_len=64,
        prompts="random",
        warmup_requests=0,
        window="steady",
        window_s=3.0,
        stall_timeout_s=stall_s,
    )
    assert stalled.request_timeout_s > 10 * (stalled.window_s + stall_s)  # what is not waited
    per_level = stalled.window_s + stall_s  # the window given up, after the last first token
    with running_simulator("--sim-stall-after-tokens", "3") as process:
        started = time.monotonic()
        result = await ThreadedBenchmarkRunner().run(stalled, process.base_url)
        elapsed = time.monotonic() - started
    assert [lv.max_concurrency for lv in result.levels] == [2, 4]
    for level in result.levels:
        assert level.measurement == "steady" and level.window is not None
        assert level.failed >= level.max_concurrency and set(level.errors) == {"stall"}
        assert level.window["requests_finished"] == 0
    # stall_timeout_s bounds each window: twice each level's bound (a level's start and its
    # first tokens on a loaded machine), far below one request timeout
    assert elapsed < 2 * len(stalled.ladder) * per_level + BOUND_S, elapsed


async def test_a_full_window_reports_exactly_its_length_on_any_clock() -> None:
    """A window that ran its ``window_s`` reports that length, not ``(ws + w) − ws``, which
    on a clock reading 12,345.678 is 0.2999999999992724 (a steady level seemed to fall short
    of its own window)."""
    from specconsole.bench.steady import SteadyPhase

    now = [12_345.678]
    phase = SteadyPhase(0, 1, lambda: now[0], window_s=0.3, window_tokens=None)
    sink = phase.begin(0, output_len=64, prompt_len=8)
    for step in range(8):  # first token at ws, then one every 10 ms: well inside the window
        sink(12_345.678 + 0.01 * step, 2)
    now[0] = 12_345.678 + 0.5
    assert await phase.settle(asyncio.Event(), limit_s=5.0, first_token_s=5.0)
    assert phase.ws == 12_345.678 and phase.window_len == 0.3


async def test_a_window_no_request_finished_in_is_no_evidence_that_speculation_is_off(
    sim: SimProcess,
) -> None:
    """SGLang's face counts verify steps and generated tokens as each request finishes, as
    SGLang does (``TokenizerMetricsCollector.observe_one_finished_request``): over a steady
    window that no request finished in, its counters say nothing — 0 drafts and 0 tokens —
    and the trial is not marked "speculation off" for it. Whole requests, on the same
    server, count drafts."""
    counting = replace(spec((4,), 1.0), spec_counters=SGLANG_COUNTERS)
    result = await ThreadedBenchmarkRunner().run(counting, sim.base_url)
    (window,) = level_summaries(result)
    assert window.measurement == "steady" and window.counters is not None
    assert window.counters.trusted, window.counters
    assert window.counters.drafts == 0 and window.counters.output_tokens == 0
    speculating = plan().base  # EAGLE-3, as the simulator runs
    assert uncounted(speculating, [window]) == ""
    whole = replace(
        counting, window="completed", window_s=None, requests_per_level=4, output_len=32
    )
    (completed,) = level_summaries(await ThreadedBenchmarkRunner().run(whole, sim.base_url))
    assert completed.counters is not None and completed.counters.drafts > 0
    assert (completed.counters.output_tokens or 0) >= 4 * 32 * 0.95
    assert uncounted(speculating, [window, completed]) == ""
