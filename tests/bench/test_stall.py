"""Stalled streams are noticed (issue 18, defect 7): a server that stops streaming while the
connection stays open fails its requests as ``stall`` after ``stall_timeout_s``, long before
the request timeout, in both load generators."""

from __future__ import annotations

import time

import pytest

from specconsole.bench.runner import ThreadedBenchmarkRunner
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.plan import PlanError
from specconsole.core.ports import BenchSpec
from tests.controller.helpers import PLAN_TEXT
from tests.fixtures.sim import running_simulator


async def test_a_stalled_stream_fails_as_stall_long_before_the_request_timeout() -> None:
    from specconsole.bench.remote_runner import RemoteBenchmarkRunner
    from specconsole.remote.transport.local import LocalTransport

    spec = BenchSpec(
        ladder=(2,),
        requests_per_level=2,
        warmup_requests=0,
        output_len=50,
        prompts="random",
        input_len=16,
        stall_timeout_s=0.5,  # the request timeout stays at its 600 s default
    )
    with running_simulator("--sim-stall-after-tokens", "5") as stalled:
        for runner in (ThreadedBenchmarkRunner(), RemoteBenchmarkRunner(LocalTransport())):
            t0 = time.monotonic()
            result = await runner.run(spec, stalled.base_url)
            assert time.monotonic() - t0 < 60
            level = result.levels[0]
            assert level.errors == {"stall": 2} and level.completed == 0


def test_stall_timeout_is_a_plan_key_with_bounds() -> None:
    text = PLAN_TEXT.replace("input_len = 64", "input_len = 64\nstall_timeout_s = 5")
    assert loads_plan(text).bench.stall_timeout_s == 5.0
    with pytest.raises(PlanError, match="stall_timeout_s"):
        loads_plan(PLAN_TEXT.replace("input_len = 64", "input_len = 64\nstall_timeout_s = inf"))


async def test_a_server_that_streamed_before_it_stalled_is_not_a_silent_one() -> None:
    """Issue 44 stops a level after its first wave only when the server said nothing at all:
    streams that stall after some tokens are each measured (3 requests, 3 stalls)."""
    spec = BenchSpec(
        ladder=(1,),
        requests_per_level=3,
        warmup_requests=0,
        output_len=50,
        prompts="random",
        input_len=16,
        stall_timeout_s=0.5,
    )
    with running_simulator("--sim-stall-after-tokens", "5") as stalled:
        result = await ThreadedBenchmarkRunner().run(spec, stalled.base_url)
    assert result.levels[0].errors == {"stall": 3}
