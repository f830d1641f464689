"""``[bench] window``: a steady-state window or bench_serving's completed-request metrics;
contradicting keys are refused with the key and the fix."""

from __future__ import annotations

import pytest

from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.plan import PlanError
from tests.controller.helpers import PLAN_TEXT

STEADY = PLAN_TEXT.replace("requests_per_level = 4\n", "")


def test_the_default_is_completed_request_metrics() -> None:
    bench = loads_plan(PLAN_TEXT).bench
    assert (bench.window, bench.window_s, bench.window_tokens) == ("completed", None, None)
    assert bench.requests_at(4) == 4


def test_a_steady_window_parses_with_its_bounds() -> None:
    text = STEADY.replace("[bench]\n", '[bench]\nwindow = "steady"\nwindow_s = 1.5\n')
    bench = loads_plan(
        text.replace("window_s = 1.5\n", "window_s = 1.5\nwindow_tokens = 900\n")
    ).bench
    assert (bench.window, bench.window_s, bench.window_tokens) == ("steady", 1.5, 900)
    assert bench.requests_at(4) is None  # each level ends with its window, not a count


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ('window = "rolling"', r'\[bench\] window must be "completed" .* or "steady"'),
        ("window_s = 2", r'window_s / window_tokens only apply with window = "steady"'),
        ('window = "steady"\nwindow_s = 0', r"\[bench\] window_s must be greater than 0"),
        ('window = "steady"\nwindow_tokens = 1.5', r"\[bench\] window_tokens must be an integer"),
        ('window = "steady"\nrequest_rate = 4', r"request_rate cannot be combined with window"),
        ('window = "steady"\nduration_s = 4', r"duration_s cannot be combined with window"),
    ],
)
def test_contradictions_name_the_key_and_the_fix(table: str, needle: str) -> None:
    with pytest.raises(PlanError, match=needle):
        loads_plan(STEADY.replace("[bench]\n", f"[bench]\n{table}\n"))


def test_requests_per_level_contradicts_a_steady_window() -> None:
    with pytest.raises(PlanError, match=r"requests_per_level cannot be combined.*window_s"):
        loads_plan(PLAN_TEXT.replace("[bench]\n", '[bench]\nwindow = "steady"\n'))
