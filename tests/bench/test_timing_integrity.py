"""The UI's event loop being busy must not change the measurement.

A "UI" that blocks its loop for 40 ms at a time (a slow repaint, a synchronous call) is
simulated on the caller's loop. The threaded runner's timings stay put; the same ladder run
on the caller's loop is visibly distorted — which proves the check can fail.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from specconsole.bench.loadgen import run_ladder
from specconsole.bench.runner import ThreadedBenchmarkRunner
from specconsole.core.measure.result import BenchResult
from specconsole.core.ports import BenchSpec
from tests.bench.servers import mini_server

SPEC = BenchSpec(ladder=(4,), requests_per_level=8, output_len=20, input_len=16)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with mini_server("--step-s", "0.01", "--chunks", "1") as base:
        yield base


async def _with_busy_loop(work: asyncio.Future[BenchResult]) -> BenchResult:
    while not work.done():
        time.sleep(0.04)  # noqa: ASYNC251 - the point: the UI loop blocked
        await asyncio.sleep(0.005)
    return work.result()


async def test_busy_ui_loop_does_not_distort_threaded_runner(url: str) -> None:
    quiet = await ThreadedBenchmarkRunner().run(SPEC, url)
    busy = await _with_busy_loop(asyncio.ensure_future(ThreadedBenchmarkRunner().run(SPEC, url)))
    on_loop = await _with_busy_loop(asyncio.ensure_future(run_ladder(SPEC, url)))
    q, b, o = (r.levels[0].latency_ms for r in (quiet, busy, on_loop))
    # 10 ms per token from the server: the threaded runner sees it with or without the hog.
    assert b["median_itl_ms"] == pytest.approx(q["median_itl_ms"], rel=0.2)
    assert b["p99_itl_ms"] < 25.0
    assert busy.levels[0].output_throughput == pytest.approx(
        quiet.levels[0].output_throughput, rel=0.1
    )
    # On the UI's own loop, 40 ms stalls show up: the first token waits for the loop (the
    # tokens that piled up meanwhile are read together, share that read's timestamp and split
    # its gap evenly, bench_serving's rule for a multi-token chunk, so ITL hides it).
    assert o["median_ttft_ms"] > q["median_ttft_ms"] + 15.0
