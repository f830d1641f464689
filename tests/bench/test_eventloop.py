"""The load generator's event loop: uvloop when it imports (the console host has it), asyncio's
otherwise (a bare box Python) — the same client, the same figures, and the record says which
loop measured."""

from __future__ import annotations

import asyncio
import sys

import pytest
import uvloop  # a dependency (pyproject.toml): never skipped

from specconsole.bench.runner import ThreadedBenchmarkRunner
from specconsole.bench.wire.eventloop import loop_name, new_event_loop
from specconsole.core.ports import BenchApi, BenchSpec
from tests.bench.servers import mini_server


def test_uvloop_when_it_imports_else_asyncios(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = new_event_loop()
    try:
        assert isinstance(loop, uvloop.Loop) and loop_name(loop) == "uvloop"
    finally:
        loop.close()
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as on a Python without it
    loop = new_event_loop()
    try:
        assert type(loop).__module__.startswith("asyncio") and loop_name(loop) == "asyncio"
    finally:
        loop.close()


@pytest.mark.parametrize("api", [BenchApi.GENERATE, BenchApi.CHAT])
async def test_the_threaded_runner_streams_on_uvloop(api: BenchApi) -> None:
    """uvloop's transports are not ``asyncio.Transport`` subclasses: the stdlib client must
    work on them all the same (multi-token chunks, keep-alive reuse)."""
    spec = BenchSpec(ladder=(1, 4), requests_per_level=8, output_len=12, input_len=16, api=api)
    with mini_server("--step-s", "0.002", "--chunks", "1,3,2") as url:
        result = await ThreadedBenchmarkRunner().run(spec, url)
    assert result.settings["event_loop"] == "uvloop"
    assert [lv.completed for lv in result.levels] == [8, 8]
    assert all(lv.failed == 0 and lv.total_output_tokens == 8 * 12 for lv in result.levels)


async def test_the_callers_loop_is_recorded_as_it_is() -> None:
    from specconsole.bench.loadgen import run_ladder

    spec = BenchSpec(ladder=(1,), requests_per_level=2, output_len=4, input_len=8)
    with mini_server("--step-s", "0.002") as url:
        result = await run_ladder(spec, url)
    assert result.settings["event_loop"] == loop_name(asyncio.get_running_loop())
