"""The per-level table and the per_level strategy, as records in and answers out (issue 30).

Records carry the simulator model's figures for the seed box (``sim.physics.model.predict``), so the
per-level bests are the calibrated ones: steps 5 at c=1, 4 at c=4, 3 from c=16.
"""

from __future__ import annotations

import dataclasses

import pytest

from specconsole.core.config.issues import Issue
from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.registry import get_engine
from specconsole.core.engine.schedule import LevelPick, Role, ScheduleRow, level_ranges, merged
from specconsole.core.measure.trials import LevelSummary, Remeasure, TrialRecord, TrialStatus
from specconsole.core.plans.objective import best
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.plan import PlanError, StrategyKind
from specconsole.core.search.levels import level_table, role_of
from specconsole.core.search.per_level import derive, picks
from specconsole.core.search.strategy import findings, next_trial
from specconsole.sim.forecast import predict

LADDER = (1, 4, 16, 32, 64)
PLAN = """
[host]
transport = "local"
[service]
kind = "process"
[server]
model_path = "Qwen/Qwen3.5-122B-A10B-FP8"
speculative_algorithm = "EAGLE3"
speculative_draft_model_path = "specconsole/Qwen3.5-122B-A10B-EAGLE3"
speculative_eagle_topk = 1
mem_fraction_static = 0.88
cuda_graph_max_bs = 64
max_running_requests = 64
tp_size = 4
engine_version = "0.5.14"
launcher = "python3 -m specconsole.sim"
[sweep]
strategy = "per_level"
{extra}
[sweep.axes]
speculative_num_steps = [1, 2, 3, 4, 5]
[bench]
ladder = [1, 4, 16, 32, 64]
"""


def _plan(extra: str = ""):  # type: ignore[no-untyped-def]
    return loads_plan(PLAN.format(extra=extra))


def _measured(
    index: int, config: ServerConfig, scale: float = 1.0, remeasure: Remeasure | None = None
) -> TrialRecord:
    levels = []
    for c in remeasure.ladder if remeasure is not None and remeasure.ladder else LADDER:
        p = predict(config, c)
        levels.append(LevelSummary(c, p.aggregate_tok_s * scale, p.per_request_tok_s * scale, 10))
    return TrialRecord(
        index=index,
        config=config,
        status=TrialStatus.OK,
        levels=tuple(levels),
        remeasure=remeasure,
    )


def _run(plan, limit: int = 30) -> list[TrialRecord]:  # type: ignore[no-untyped-def]
    trials: list[TrialRecord] = []
    while len(trials) < limit:
        proposal = next_trial(plan, trials)
        if proposal is None:
            break
        trials.append(_measured(len(trials), proposal.config, remeasure=proposal.remeasure))
    return trials


def test_level_ranges_meet_at_geometric_midpoints() -> None:
    assert level_ranges([1, 4, 16, 32, 64]) == [(1, 2), (3, 8), (9, 22), (23, 45), (46, None)]
    assert level_ranges([64, 1]) == [(1, 8), (9, None)]
    rows = [ScheduleRow(1, 2, 5), ScheduleRow(3, 8, 3), ScheduleRow(9, None, 3)]
    assert merged(rows) == (ScheduleRow(1, 2, 5), ScheduleRow(3, None, 3))


def test_the_schedule_strategy_runs_candidates_baseline_then_the_schedule() -> None:
    plan = _plan()
    assert plan.strategy is StrategyKind.PER_LEVEL and plan.wants_baseline
    assert plan.estimated_trials == 7
    trials = _run(plan)
    roles = [role_of(t) for t in trials]
    # then the proof: its two edges (2|3, 8|9) measured for it and its three statics, and
    # SGLang's own adaptive mode, with its defaults and over the schedule's lengths
    assert (
        roles
        == [Role.STATIC] * 5
        + [Role.BASELINE, Role.SCHEDULE]
        + [Role.REMEASURE] * 4
        + [Role.ADAPTIVE] * 2
    )
    steps = [p.config.speculative_num_steps for p in picks(plan, trials[:6])]
    assert steps == [5, 4, 3, 3, 3]
    assert [t.remeasure.ladder for t in trials[7:11]] == [  # type: ignore[union-attr]
        (2, 3, 8, 9),  # the schedule
        (2, 3),  # steps 5, below the first edge
        (2, 3, 8, 9),  # steps 4, between them
        (8, 9),  # steps 3, above the second
    ]
    trials = trials[:7]
    schedule = trials[-1].config
    assert dict(schedule.options)["speculative_adaptive_schedule"] == "1:5,3:4,9:3"
    assert schedule.speculative_num_steps == 5 and schedule.speculative_num_draft_tokens == 6
    assert "schedule: derived from the per-level bests, trial 7" in findings(plan, trials)[0]
    # the per-level table: the schedule measured each level's best (the model's figures)
    table = level_table(trials, plan.goal, plan.noise_pct)
    assert table.schedule is trials[-1]
    for row in table.rows:
        assert row.schedule is not None and row.best is not None
        assert row.schedule.value == pytest.approx(row.best.value, rel=1e-6)
    assert table.single is trials[2]  # steps 3: the best peak aggregate
    weakest = table.worst_single
    assert weakest is not None and weakest.concurrency == 1
    assert (weakest.versus(weakest.single) or 0.0) > 15.0
    assert table.stops_paying is None and all(row.pays for row in table.rows)


def test_what_if_trials_come_last_and_never_win() -> None:
    plan = _plan("what_if_accept_length = 4.5")
    trials = _run(plan)
    assert len(trials) == 18  # the proof's six, then the what-ifs
    what_ifs = trials[13:]
    assert all(role_of(t) is Role.WHAT_IF for t in what_ifs)
    assert [dict(t.config.options)["simulate_accept_length"] for t in what_ifs] == [4.5] * 5
    deployed = get_engine("sglang").normalize(what_ifs[0].config)[0]  # the variable it runs
    assert dict(deployed.env)["SGLANG_SIMULATE_ACC_LEN"] == "4.5"
    boosted = [dataclasses.replace(t, levels=tuple(
        dataclasses.replace(lv, output_tok_s=lv.output_tok_s * 10) for lv in t.levels))
        for t in what_ifs]  # fmt: skip
    assert best([*trials[:13], *boosted], plan.goal) in trials[:7]
    table = level_table([*trials[:13], *boosted], plan.goal)
    assert all(row.best.trial not in boosted for row in table.rows)  # type: ignore[union-attr]


def test_speculation_stops_paying_where_none_wins_beyond_the_noise() -> None:
    plan = _plan()
    trials = _run(plan)[:6]
    baseline = trials[5]
    lifted = dataclasses.replace(
        baseline,
        levels=tuple(
            dataclasses.replace(lv, output_tok_s=4000.0) if lv.concurrency >= 32 else lv
            for lv in baseline.levels
        ),
    )
    table = level_table([*trials[:5], lifted], plan.goal, plan.noise_pct)
    assert table.stops_paying == 32
    assert [row.pays for row in table.rows] == [True, True, True, False, False]
    # the schedule drafts nothing where the baseline won: SGLang 0.5.14 takes a 0 candidate
    derived = derive(plan, [*trials[:5], lifted])
    assert isinstance(derived, ServerConfig)
    assert dict(derived.options)["speculative_adaptive_schedule"] == "1:5,3:4,9:3,23:0"


def test_a_schedule_is_refused_with_the_field_and_the_fix() -> None:
    plan = _plan()
    trials = _run(plan)[:6]
    old = dataclasses.replace(plan, base=dataclasses.replace(plan.base, engine_version="0.5.9"))
    refused = derive(old, [dataclasses.replace(t, config=dataclasses.replace(
        t.config, engine_version="0.5.9")) for t in trials])  # fmt: skip
    assert isinstance(refused, Issue) and refused.field == "speculative_adaptive_schedule"
    assert "0.5.9 has no --speculative-adaptive" in refused.message and "0.5.13" in refused.fix
    sglang = get_engine("sglang")
    mixed = [
        LevelPick(1, trials[4].config),
        LevelPick(64, dataclasses.replace(trials[2].config, mem_fraction_static=0.85)),
    ]
    issue = sglang.schedule(mixed)
    assert isinstance(issue, Issue) and issue.field == "mem_fraction_static"
    assert "hold it in the plan" in issue.fix
    tree = [LevelPick(1, dataclasses.replace(trials[4].config, speculative_eagle_topk=4))]
    assert isinstance(sglang.schedule(tree), Issue)
    llama = get_engine("llamacpp").schedule([LevelPick(1, trials[0].config)])
    assert isinstance(llama, Issue) and llama.field == "spec_draft_n_max"


def test_a_schedule_plan_says_what_it_needs() -> None:
    with pytest.raises(PlanError, match=r"needs \[sweep.axes\]"):
        loads_plan(PLAN.format(extra="").replace("[sweep.axes]\nspeculative_num_steps", "#"))
    with pytest.raises(PlanError, match="remove prune = true"):
        _plan("prune = true")
    with pytest.raises(PlanError, match="above 64"):
        _plan("what_if_accept_length = 100")
    grid = loads_plan(PLAN.format(extra="baseline = true").replace('"per_level"', '"grid"'))
    assert grid.wants_baseline and grid.estimated_trials == 6
    proposed = _run(grid)
    assert [role_of(t) for t in proposed] == [Role.STATIC] * 5 + [Role.BASELINE]


def test_finally_best_may_choose_the_schedule_when_it_wins_the_objective() -> None:
    weighted = _plan("objective = { weighted = { single_request = 1.0, peak_aggregate = 0.1 } }")
    trials = _run(weighted)
    assert best(trials, weighted.goal) is trials[6]  # single of steps 5, peak of steps 3
    assert role_of(trials[6]) is Role.SCHEDULE


def test_the_single_request_chart_plots_only_trials_on_the_axis() -> None:
    """The baseline (steps unset) and the schedule (steps = its largest candidate) did not run
    at a point of the steps axis: the chart against it leaves them out; by trial number, not."""
    from specconsole.present.charts.series import single_series

    trials = _run(_plan())[:7]
    line = single_series(trials, "speculative_num_steps")
    assert line is not None and line.xs == (1.0, 2.0, 3.0, 4.0, 5.0)
    assert line.ys == tuple(t.single_request_tok_s for t in trials[:5])
    everything = single_series(trials, None)
    assert everything is not None and len(everything.xs) == 7
