"""BenchSpec's request count per level: one rule shared by the machine and the engine."""

from __future__ import annotations

import pytest

from specconsole.bench.ladder import LadderPlan
from specconsole.core.measure.metrics import default_requests_per_level
from specconsole.core.ports import BenchSpec


@pytest.mark.parametrize(("concurrency", "expected"), [(1, 8), (2, 8), (4, 16), (64, 256)])
def test_default_count_is_four_per_slot_with_a_floor_of_eight(
    concurrency: int, expected: int
) -> None:
    assert default_requests_per_level(concurrency) == expected
    assert BenchSpec().requests_at(concurrency) == expected


def test_explicit_count_wins_and_duration_mode_has_no_count() -> None:
    assert BenchSpec(requests_per_level=5).requests_at(64) == 5
    assert BenchSpec(duration_s=2.0).requests_at(64) is None
    assert BenchSpec(requests_per_level=5, duration_s=2.0).requests_at(1) == 5


def test_engine_plan_uses_the_same_rule() -> None:
    for spec in (BenchSpec(), BenchSpec(requests_per_level=3), BenchSpec(duration_s=1.0)):
        plan = LadderPlan(
            ladder=spec.ladder,
            prompts=(),
            requests_per_level=spec.requests_per_level,
            duration_s=spec.duration_s,
        )
        assert [plan.requests_for(c) for c in spec.ladder] == [
            spec.requests_at(c) for c in spec.ladder
        ]
