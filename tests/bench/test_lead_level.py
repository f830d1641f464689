"""``BenchSpec.lead`` (incumbent pruning): the deciding level runs first, then the rest in
ladder order; the result keeps the ladder's order."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from specconsole.bench.ladder import LadderPlan
from specconsole.bench.loadgen import make_run
from specconsole.core.ports import BenchSpec
from tests.bench.servers import mini_server


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with mini_server("--step-s", "0.005", "--chunks", "2") as base:
        yield base


def test_the_plan_orders_the_lead_first() -> None:
    plan = LadderPlan(ladder=(1, 4, 16), prompts=(), lead=16, warmup_requests=0)
    assert plan.order() == [2, 0, 1]
    assert LadderPlan(ladder=(1, 4), prompts=(), lead=None).order() == [0, 1]
    assert LadderPlan(ladder=(1, 4), prompts=(), lead=9).order() == [0, 1]  # not a level


async def test_the_lead_level_runs_first_and_the_result_keeps_the_ladder(url: str) -> None:
    events: list[dict[str, Any]] = []
    spec = BenchSpec(ladder=(1, 4), requests_per_level=4, warmup_requests=0, output_len=8, lead=4)
    result = await make_run(spec, url, on_progress=events.append).run()
    finished = [e["concurrency"] for e in events if e.get("level_result") is not None]
    assert finished == [4, 1]
    assert not any(e["warmup"] for e in events)  # the plan's warm-up (none), as for any level
    assert [lv.max_concurrency for lv in result.levels] == [1, 4]
    assert all(lv.completed == 4 for lv in result.levels)
