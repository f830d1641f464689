"""``strategy = "staged"``: the capacity axes first with speculation as in the base, then the
speculative axes on stage 1's winner; each stage's choice and why in the findings; a pure
function of the records (a resumed session continues in its stage)."""

from __future__ import annotations

from specconsole.core.config.model import ServerConfig
from specconsole.core.machine.state import LevelSummary, TrialRecord, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.plan import PlanError, SweepPlan
from specconsole.core.search import staged
from specconsole.core.search.strategy import findings, next_trial

PLAN = """
[server]
model_path = "Qwen/Qwen3.5-122B-A10B"
speculative_algorithm = "EAGLE3"
speculative_draft_model_path = "draft"
speculative_num_steps = 2
speculative_eagle_topk = 1
mem_fraction_static = 0.85
cuda_graph_max_bs = 64

[sweep]
strategy = "staged"

[sweep.axes]
speculative_num_steps = [1, 2, 3]
mem_fraction_static = [0.80, 0.85, 0.90]
cuda_graph_max_bs = [32, 64]

[bench]
ladder = [1, 4]
"""


def _score(config: ServerConfig) -> float:
    """A box where memory 0.90 / graphs 32 wins stage 1 and 3 steps win stage 2."""
    mem = {0.8: 0.0, 0.85: 50.0, 0.9: 100.0}[config.mem_fraction_static]  # type: ignore[index]
    cg = 30.0 if config.cuda_graph_max_bs == 32 else 0.0
    return 1000.0 + mem + cg + 10.0 * (config.speculative_num_steps or 0)


def _run(plan: SweepPlan, crash: set[float] = frozenset()) -> list[TrialRecord]:  # type: ignore[assignment]
    trials: list[TrialRecord] = []
    for _ in range(50):
        proposal = next_trial(plan, trials)
        if proposal is None:
            return trials
        cfg = proposal.config
        if cfg.mem_fraction_static in crash:
            trials.append(
                TrialRecord(len(trials), cfg, status=TrialStatus.CRASHED, note=proposal.reason)
            )
            continue
        agg = _score(cfg)
        levels = (
            LevelSummary(concurrency=1, output_tok_s=100.0, per_request_tok_s=100.0, completed=4),
            LevelSummary(concurrency=4, output_tok_s=agg, per_request_tok_s=agg / 4, completed=4),
        )
        trials.append(
            TrialRecord(
                len(trials), cfg, status=TrialStatus.OK, levels=levels, note=proposal.reason
            )
        )
    raise AssertionError("the staged search did not end")


def test_capacity_first_then_speculation_on_the_winner() -> None:
    plan = loads_plan(PLAN)
    assert plan.pruning and plan.skip_infeasible
    assert staged.split_axes(plan) == (
        ("mem_fraction_static", "cuda_graph_max_bs"),
        ("speculative_num_steps",),
    )
    trials = _run(plan)
    first, second = trials[:6], trials[6:]
    assert all(t.config.speculative_num_steps == 2 for t in first)  # speculation as in the base
    assert all("stage 1 (capacity)" in t.note for t in first)
    assert [t.config.speculative_num_steps for t in second] == [1, 3]  # 2 is the winner itself
    assert all(
        (t.config.mem_fraction_static, t.config.cuda_graph_max_bs) == (0.9, 32) for t in second
    )
    assert all("on trial 5's capacity" in t.note for t in second)
    assert len(trials) == staged.size(plan) == plan.estimated_trials == 8
    said = findings(plan, trials)
    assert said[0].startswith("stage 1 (capacity: mem_fraction_static, cuda_graph_max_bs): chose")
    assert "mem=0.9 cg-bs=32 — trial 5" in said[0] and "6 of 6 tried" in said[0]
    assert said[1].startswith("stage 2 (speculation: speculative_num_steps): chose steps=3")
    assert said[-1].startswith("best: trial 8")


def test_a_resumed_session_continues_in_its_stage() -> None:
    plan = loads_plan(PLAN)
    full = _run(plan)
    for cut in range(len(full)):
        proposal = next_trial(plan, full[:cut])
        assert proposal is not None and proposal.config == full[cut].config


def test_no_feasible_capacity_keeps_the_base_and_says_so() -> None:
    plan = loads_plan(PLAN)
    trials = _run(plan, crash={0.8, 0.85, 0.9})
    assert all(t.config.mem_fraction_static == 0.85 for t in trials[6:])  # the base's
    said = findings(plan, trials)
    assert "no feasible trial (6 of 6 tried, 6 did not load); kept the base's values" in said[0]


def test_staged_needs_axes() -> None:
    text = PLAN.split("[sweep.axes]")[0] + "[bench]\nladder = [1]\n"
    try:
        loads_plan(text)
    except PlanError as exc:
        assert 'strategy = "staged" needs [sweep.axes]' in str(exc)
    else:  # pragma: no cover
        raise AssertionError("a staged plan without axes was accepted")
