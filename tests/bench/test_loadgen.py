"""The ladder engine over httpx against a real streaming server process (the mini server)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from specconsole.bench.loadgen import run_ladder
from specconsole.bench.runner import ThreadedBenchmarkRunner
from specconsole.core.ports import BenchApi, BenchProgress, BenchSpec
from tests.bench.servers import mini_server


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    # Decode steps of 10 ms carrying 1, 3, 2 tokens in turn (like accepted drafts).
    with mini_server("--step-s", "0.01", "--chunks", "1,3,2") as base:
        yield base


@pytest.fixture(scope="module")
def url_final_usage() -> Iterator[str]:
    with mini_server("--step-s", "0.005", "--chunks", "2", "--no-continuous-usage") as base:
        yield base


async def peak_in_flight(url: str) -> int:
    async with httpx.AsyncClient() as client:
        info = (await client.get(f"{url}/server_info")).json()
    return int(info["internal_states"][0]["max_in_flight"])


@pytest.mark.parametrize("concurrency", [1, 4])
async def test_generate_level_keeps_exactly_c_in_flight(url: str, concurrency: int) -> None:
    async with httpx.AsyncClient() as client:
        await client.post(f"{url}/reset_peak")
    events: list[dict[str, object]] = []
    spec = BenchSpec(ladder=(concurrency,), requests_per_level=8, output_len=12, input_len=32)
    result = await run_ladder(spec, url, on_progress=events.append)
    level = result.levels[0]
    assert await peak_in_flight(url) == concurrency
    assert level.completed == 8 and level.failed == 0
    assert level.total_output_tokens == 8 * 12  # from meta_info, not from chunk counting
    # 12 tokens arrive as 1,3,2,1,3,2: 6 verify steps -> accept length 2.0, from /server_info
    # (counters flushed after the warm-up) and from spec_verify_ct.
    assert level.accept_length == pytest.approx(2.0)
    assert level.request_accept_length == pytest.approx(2.0)
    # TPOT: the time after the first chunk spread over the 11 tokens after it (not over the 5
    # chunks after it) — bench_serving's (e2e - ttft) / (n - 1), exact on any machine. (The
    # server's 10 ms steps are no bound here: on a loaded machine a step takes longer, and the
    # figure once read 7.6 ms against the 4.5 the steps alone give.)
    latency = level.latency_ms
    spread = (latency["mean_e2e_latency_ms"] - latency["mean_ttft_ms"]) / 11
    assert latency["mean_tpot_ms"] == pytest.approx(spread, rel=1e-9) and spread > 0
    assert level.concurrency == pytest.approx(concurrency, rel=0.35)
    assert level.warmup_requests == concurrency
    assert result.settings["backend"] == "sglang"
    measured = [e for e in events if not e["warmup"]]
    assert measured[-1]["completed"] == 8 and measured[-1]["total"] == 8
    completions = [e["completed"] for e in measured]
    assert completions == sorted(completions)
    assert any(e["current_tok_s"] > 0 for e in measured)


@pytest.mark.parametrize("api", [BenchApi.COMPLETIONS, BenchApi.CHAT])
async def test_openai_apis_take_counts_from_usage(
    url: str, url_final_usage: str, api: BenchApi
) -> None:
    for base in (url, url_final_usage):
        spec = BenchSpec(ladder=(2,), requests_per_level=4, output_len=10, input_len=16, api=api)
        result = await run_ladder(spec, base)
        level = result.levels[0]
        assert level.completed == 4, result.to_dict()
        assert level.total_output_tokens == 40
        assert level.latency_ms["mean_itl_ms"] > 0
        assert result.settings["model"] == "mini-model"


async def test_failures_are_counted_by_kind(url: str, tmp_path: Path) -> None:
    prompts = tmp_path / "p.jsonl"
    lines = [
        {"prompt": "fine words here"},
        {"prompt": "please FAIL500 now"},
        {"messages": [{"role": "user", "content": "DROP this stream"}]},
    ]
    prompts.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    spec = BenchSpec(
        ladder=(3,),
        requests_per_level=9,
        warmup_requests=0,
        output_len=12,
        prompts=str(prompts),
        flush_cache=False,
    )
    result = await run_ladder(spec, url)
    level = result.levels[0]
    assert level.completed == 3
    assert level.errors.get("http_500") == 3
    assert sum(level.errors.values()) == 6
    assert set(level.errors) <= {"http_500", "disconnect", "incomplete"}
    assert result.settings["dataset_name"] == "custom"


async def test_unreachable_server_stops_the_ladder_with_a_reason() -> None:
    spec = BenchSpec(ladder=(1, 4), requests_per_level=2, warmup_requests=0, flush_cache=False)
    result = await run_ladder(spec, "http://127.0.0.1:9")
    assert result.error is not None and "connect" in result.error
    assert result.partial and len(result.levels) == 1
    # refused from the first request: unreachable, not a lost link, so no wait for a re-run
    assert result.reruns == ()


async def test_poisson_and_duration_modes(url: str) -> None:
    spec = BenchSpec(ladder=(4,), requests_per_level=10, request_rate=200.0, output_len=6)
    result = await run_ladder(spec, url)
    assert result.levels[0].completed == 10 and result.levels[0].request_rate == 200.0
    spec = BenchSpec(ladder=(2,), duration_s=0.6, output_len=6)
    result = await run_ladder(spec, url)
    level = result.levels[0]
    # 6 tokens take 3 steps of 10 ms: ~2 requests per 30 ms over 0.6 s.
    assert level.completed >= 10 and level.duration >= 0.6


async def test_threaded_runner_delivers_progress_on_the_callers_thread(url: str) -> None:
    threads: set[int] = set()
    events: list[BenchProgress] = []

    def on_progress(p: BenchProgress) -> None:
        threads.add(threading.get_ident())
        events.append(p)

    runner = ThreadedBenchmarkRunner()
    spec = BenchSpec(ladder=(1, 2), requests_per_level=4, output_len=8)
    result = await runner.run(spec, url, on_progress=on_progress)
    assert threads == {threading.get_ident()}
    assert [level.max_concurrency for level in result.levels] == [1, 2]
    assert not result.partial and runner.last_result is result
    assert events[-1].level_index == 1 and events[-1].completed == 4
    assert events[-1].level_count == 2


async def test_stop_returns_partial_result_promptly(url: str) -> None:
    import asyncio
    import time

    runner = ThreadedBenchmarkRunner()
    seen: list[BenchProgress] = []

    def on_progress(p: BenchProgress) -> None:
        seen.append(p)
        if not p.warmup and p.completed >= 3:
            runner.stop()

    spec = BenchSpec(ladder=(2, 4), requests_per_level=200, output_len=30)
    started = time.monotonic()
    result = await asyncio.wait_for(runner.run(spec, url, on_progress=on_progress), 30)
    assert time.monotonic() - started < 10
    assert result.cancelled and result.partial
    assert len(result.levels) == 1 and result.levels[0].partial
    assert 3 <= result.levels[0].completed < 200
    assert result.levels[0].output_throughput > 0


async def test_cancelling_the_awaiting_task_keeps_the_partial_result(url: str) -> None:
    import asyncio

    runner = ThreadedBenchmarkRunner()
    spec = BenchSpec(ladder=(2,), requests_per_level=500, output_len=30)
    task = asyncio.ensure_future(runner.run(spec, url))
    await asyncio.sleep(1.0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert runner.last_result is not None
    assert runner.last_result.cancelled and runner.last_result.levels[0].completed > 0
