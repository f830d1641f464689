"""What the draft costs in KV tokens (issue 31): against a baseline trial without speculation
when the session has one, else the capacity line at no draft tokens; in words where the
capacity is shown."""

from __future__ import annotations

from dataclasses import replace

from specconsole.core.machine.state import TrialRecord, TrialStatus
from specconsole.core.search.draftcost import DraftCost, draft_cost
from specconsole.present.figures.draftcost import draft_cost_text
from tests.controller.helpers import plan


def _trial(index: int, steps: int | None, capacity: int | None) -> TrialRecord:
    base = plan().base
    if steps is None:
        config = replace(
            base,
            speculative_algorithm=None,
            speculative_draft_model_path=None,
            speculative_num_steps=None,
            speculative_eagle_topk=None,
            speculative_num_draft_tokens=None,
        )
    else:
        config = replace(
            base,
            speculative_num_steps=steps,
            speculative_eagle_topk=1,
            speculative_num_draft_tokens=steps + 1,
        )
    return TrialRecord(index, config, status=TrialStatus.OK, capacity=capacity)


def test_against_the_capacity_line() -> None:
    trials = [_trial(0, 1, 455_362), _trial(1, 3, 349_078)]  # 53,142 tokens a draft token
    cost = draft_cost(trials[1], trials)
    assert cost == DraftCost(349_078, 561_646, "model")
    assert cost.tokens == 212_568 and round(cost.share * 100) == 38
    assert draft_cost_text(cost, source=False) == "the draft costs 212,568 KV tokens, 38 %"
    assert "by the capacity line at no draft tokens" in draft_cost_text(cost)


def test_a_baseline_wins() -> None:
    trials = [_trial(0, None, 462_000), _trial(1, 1, 455_362), _trial(2, 3, 349_078)]
    cost = draft_cost(trials[2], trials)
    assert cost == DraftCost(349_078, 462_000, "baseline", 0)
    assert draft_cost_text(cost) == (
        "the draft costs 112,922 KV tokens, 24 % (trial 1 held 462,000 without it)"
    )


def test_nothing_to_say() -> None:
    alone = _trial(0, 3, 349_078)
    assert draft_cost(alone, [alone]) is None  # one point: no line
    assert draft_cost(_trial(0, None, 462_000), []) is None  # no draft
    assert draft_cost(_trial(1, 3, None), []) is None  # did not load
    assert draft_cost_text(None) == ""
