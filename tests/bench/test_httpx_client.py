"""The httpx client (the load generator's client for ``https://`` URLs) behind the same
``stream_into`` contract as the stdlib one: run here over plain HTTP against real servers,
since the contract does not depend on TLS — same token counts as the stdlib client on the
same streams, and a stalled stream fails as ``stall`` long before the request timeout."""

from __future__ import annotations

import time

from specconsole.bench.ladder_run import LadderRun
from specconsole.bench.loadgen import make_run, plan_for
from specconsole.bench.wire.httpxclient import HttpxStreamClient
from specconsole.bench.wire.rawhttp import RawStreamClient
from specconsole.core.ports import BenchApi, BenchSpec
from tests.bench.servers import mini_server
from tests.fixtures.sim import running_simulator


async def test_httpx_and_stdlib_clients_read_the_same_streams() -> None:
    with mini_server("--step-s", "0.005", "--chunks", "1,3,2") as url:
        for api in (BenchApi("generate"), BenchApi("chat")):
            spec = BenchSpec(ladder=(2,), requests_per_level=4, output_len=12, input_len=8, api=api)
            plan = plan_for(spec)
            levels = []
            for client in (HttpxStreamClient, RawStreamClient):
                run = LadderRun(plan, lambda c, client=client: client(url, c, timeout_s=30))
                levels.append((await run.run()).levels[0])
            httpx_level, raw_level = levels
            assert httpx_level.completed == raw_level.completed == 4, api
            assert httpx_level.total_output_tokens == raw_level.total_output_tokens == 48, api


async def test_httpx_client_fails_a_stalled_stream_as_stall() -> None:
    spec = BenchSpec(
        ladder=(1,),
        requests_per_level=1,
        warmup_requests=0,
        output_len=50,
        input_len=16,
        stall_timeout_s=0.5,
    )
    with running_simulator("--sim-stall-after-tokens", "5") as stalled:
        run = LadderRun(plan_for(spec), lambda c: HttpxStreamClient(stalled.base_url, c))
        t0 = time.monotonic()
        level = (await run.run()).levels[0]
    assert time.monotonic() - t0 < 60
    assert level.errors == {"stall": 1} and level.completed == 0


async def test_make_run_takes_httpx_for_https_only() -> None:
    """``https://`` goes through httpx (imported then); ``http://`` through the stdlib client."""
    spec = BenchSpec(ladder=(1,), requests_per_level=1, output_len=4, input_len=4)
    clients = {
        scheme: make_run(spec, f"{scheme}://127.0.0.1:9")._factory(1)
        for scheme in ("http", "https")
    }
    assert isinstance(clients["http"], RawStreamClient)
    assert isinstance(clients["https"], HttpxStreamClient)
    for client in clients.values():
        await client.aclose()
