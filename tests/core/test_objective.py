"""core.plans.objective: parsing objectives/constraints with field-and-fix errors, judging
trials."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specconsole.core.config.model import ServerConfig
from specconsole.core.machine.state import LevelSummary, TrialRecord, TrialStatus
from specconsole.core.plans.goalparse import (
    goal_document,
    parse_constraint,
    parse_goal,
    parse_metric,
    parse_objective,
)
from specconsole.core.plans.objective import (
    DEFAULT_GOAL,
    Goal,
    ObjectiveError,
    ObjectiveKind,
    best,
    pareto_front,
)
from specconsole.core.plans.parse import loads_plan, parse_plan, plan_document
from specconsole.core.plans.plan import PlanError
from specconsole.core.plans.verdict import assess, improves, tied


def trial(
    index: int,
    single: float,
    agg: float,
    *,
    ttft99_64: float = 500.0,
    status: TrialStatus = TrialStatus.OK,
    ci: float | None = None,
) -> TrialRecord:
    lv1 = LevelSummary(1, output_tok_s=single, per_request_tok_s=single, completed=4)
    lv64 = LevelSummary(
        64, output_tok_s=agg, per_request_tok_s=agg / 64, completed=64, ttft_p99_ms=ttft99_64
    )
    if ci is not None:  # a repeated level carries its interval as <field>_ci
        lv64 = replace(lv64, repeats=3, output_tok_s_ci=(agg - ci, agg + ci))
    return TrialRecord(
        index=index,
        config=ServerConfig(model_path="m", speculative_num_steps=index + 1),
        status=status,
        levels=(lv1, lv64) if status is TrialStatus.OK else (),
    )


# ----------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "name", "concurrency"),
    [
        ("peak_aggregate", "peak_aggregate", None),
        ("peak_aggregate_tok_s", "peak_aggregate", None),
        ("single_request", "single_request", None),
        ("aggregate_at_64", "aggregate_at", 64),
        ("output_tok_s_at_16", "aggregate_at", 16),
        ("ttft_p99_ms_at_64", "ttft_p99_ms_at", 64),
        ("itl_p50_ms_at_4", "itl_p50_ms_at", 4),
    ],
)
def test_metric_names(text: str, name: str, concurrency: int | None) -> None:
    m = parse_metric(text, "x")
    assert (m.kind.name, m.concurrency) == (name, concurrency)


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("throughput", "unknown metric 'throughput'"),
        ("aggregate_at", "needs a concurrency level; write it as aggregate_at_C"),
        ("single_request_4", "without _4"),
        ("", "must be a metric name"),
    ],
)
def test_metric_errors_name_field_and_fix(value: str, needle: str) -> None:
    with pytest.raises(ObjectiveError) as err:
        parse_metric(value, "[sweep] objective")
    assert "[sweep] objective" in str(err.value)
    assert needle in str(err.value)


def test_objective_forms() -> None:
    assert parse_objective("single_request").describe == "single_request"
    at = parse_objective({"aggregate_at": 64})
    assert at.kind is ObjectiveKind.METRIC and at.terms[0][0].name == "aggregate_at_64"
    w = parse_objective({"weighted": {"single_request": 1.0, "ttft_p50_ms_at_64": 0.5}})
    assert w.kind is ObjectiveKind.WEIGHTED and len(w.terms) == 2
    p = parse_objective({"pareto": ["single_request", "peak_aggregate"]})
    assert p.kind is ObjectiveKind.PARETO


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ({"aggregate_at": "64"}, "aggregate_at must be a concurrency level"),
        ({"weighted": {"single_request": -1}}, "weighted.single_request must be a positive"),
        ({"weighted": {}}, "table of metric = weight"),
        ({"pareto": ["single_request"]}, "must list two metrics"),
        ({"pareto": ["single_request", "single_request"]}, "twice"),
        ({"best": 1}, "unknown form 'best'"),
        (3, "must be a metric name"),
    ],
)
def test_objective_errors(value: object, needle: str) -> None:
    with pytest.raises(ObjectiveError, match="objective") as err:
        parse_objective(value)
    assert needle in str(err.value)


def test_constraints_parse_and_judge() -> None:
    c = parse_constraint("ttft_p99_ms_at_64 <= 2000", "c")
    assert c.text == "ttft_p99_ms_at_64 <= 2000"
    assert c.met(trial(0, 100, 1000, ttft99_64=1999))
    assert not c.met(trial(0, 100, 1000, ttft99_64=2500))
    assert c.violation(trial(0, 100, 1000, ttft99_64=3000)) == pytest.approx(0.5, abs=1e-6)
    floor = parse_constraint("single_request >= 200", "c")
    assert floor.met(trial(0, 200, 1)) and not floor.met(trial(0, 199, 1))
    strict = parse_constraint("single_request > 200", "c")
    assert not strict.met(trial(0, 200, 1))


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("ttft_p99_ms_at_64 = 2000", "is not a constraint; write METRIC <= NUMBER"),
        ("ttft_p99_ms_at_64 <= fast", "the bound 'fast' must be a number"),
        ("latency <= 3", "unknown metric 'latency'"),
    ],
)
def test_constraint_errors(text: str, needle: str) -> None:
    with pytest.raises(ObjectiveError) as err:
        parse_goal(None, [text])
    assert "[sweep] constraints[0]" in str(err.value) and needle in str(err.value)


def test_plan_keys_and_ladder_check() -> None:
    base = '[server]\nmodel_path = "m"\n[bench]\nladder = [1, 16]\n[sweep]\n'
    plan = loads_plan(
        base + 'objective = "single_request"\nconstraints = ["single_request >= 5"]\n'
    )
    assert plan.goal.describe == "maximise single_request subject to single_request >= 5"
    assert parse_plan(plan_document(plan)).goal == plan.goal  # round trip
    assert loads_plan(base).goal == DEFAULT_GOAL
    with pytest.raises(PlanError) as err:
        loads_plan(base + 'constraints = ["ttft_p99_ms_at_64 <= 2000"]\n')
    assert "needs concurrency 64 in [bench] ladder (it has 1, 16)" in str(err.value)
    with pytest.raises(PlanError, match=r"\[sweep\] constraints must be a list"):
        loads_plan(base + "constraints = 3\n")


def test_goal_document_round_trips() -> None:
    for objective in (
        "peak_aggregate",
        {"weighted": {"single_request": 2.0, "peak_aggregate": 0.5}},
        {"pareto": ["single_request", "aggregate_at_64"]},
    ):
        goal = parse_goal(objective, ["ttft_p99_ms_at_64 < 10"])
        doc = goal_document(goal)
        assert parse_goal(doc["objective"], doc["constraints"]) == goal


# ----------------------------------------------------------------------------- judging


def test_best_under_constraints_ignores_failures_and_misses() -> None:
    trials = [
        trial(0, 150, 900),
        trial(1, 120, 1400, ttft99_64=3000),  # best aggregate but misses the SLO
        trial(2, 0, 0, status=TrialStatus.CRASHED),
        trial(3, 130, 1200),
    ]
    assert best(trials).index == 1  # type: ignore[union-attr]
    goal = parse_goal("peak_aggregate", ["ttft_p99_ms_at_64 <= 2000"])
    assert best(trials, goal).index == 3  # type: ignore[union-attr]
    assert best(trials, parse_goal("single_request")).index == 0  # type: ignore[union-attr]
    verdict = assess(trials, goal)
    assert [t.index for t in verdict.infeasible] == [1]
    assert verdict.sentence.startswith("best: trial 4 (peak_aggregate 1,200.0)")
    assert best([trial(0, 1, 1, status=TrialStatus.CRASHED)]) is None
    none_ok = assess([trials[1]], goal)
    assert none_ok.best is None and "no trial meets the constraints" in none_ok.sentence


def test_latency_objective_minimises_and_weighted_subtracts_latency() -> None:
    trials = [trial(0, 100, 1000, ttft99_64=900), trial(1, 100, 1000, ttft99_64=300)]
    assert best(trials, parse_goal("ttft_p99_ms_at_64")).index == 1  # type: ignore[union-attr]
    goal = parse_goal({"weighted": {"peak_aggregate": 1.0, "ttft_p99_ms_at_64": 1.0}})
    assert goal.objective.score(trials[0]) == pytest.approx(100.0)
    assert best(trials, goal).index == 1  # type: ignore[union-attr]


def test_pareto_front_and_balanced_best() -> None:
    trials = [trial(0, 200, 800), trial(1, 150, 1500), trial(2, 100, 1600), trial(3, 90, 700)]
    goal = parse_goal({"pareto": ["single_request", "peak_aggregate"]})
    assert [t.index for t in pareto_front(trials, goal)] == [0, 1, 2]
    assert best(trials, goal).index == 1  # type: ignore[union-attr]  # balanced member
    assert [t.index for t in pareto_front(trials)] == [0, 1, 2]


def test_ties_need_overlapping_intervals() -> None:
    a = trial(0, 100, 1000, ci=30)
    b = trial(1, 100, 1020, ci=30)
    c = trial(2, 100, 1200, ci=30)
    assert tied(a, b) and not tied(a, c)
    verdict = assess([a, b, c])
    assert verdict.best is c and verdict.tied == ()
    verdict = assess([a, b])
    assert verdict.best is b and verdict.tied == (a,)
    assert "statistically tied with trial 1" in verdict.sentence
    # single measurements: only equal scores tie
    assert not tied(trial(0, 1, 1000), trial(1, 1, 1001))


def test_improves_clears_interval_and_noise() -> None:
    inc = trial(0, 100, 1000, ci=20)
    assert not improves(trial(1, 100, 1030, ci=20), inc)  # intervals overlap
    assert improves(trial(1, 100, 1050, ci=5), inc)
    point = trial(0, 100, 1000)
    assert improves(trial(1, 100, 1005), point)
    assert not improves(trial(1, 100, 1005), point, noise_pct=1.0)
    assert improves(trial(1, 100, 1011), point, noise_pct=1.0)
    assert improves(trial(1, 1, 1), None)
    assert not improves(trial(1, 1, 1, status=TrialStatus.CRASHED), None)
    assert not improves(
        trial(1, 1, 9999, ttft99_64=5000),
        inc,
        Goal(DEFAULT_GOAL.objective, parse_goal(None, ["ttft_p99_ms_at_64 <= 10"]).constraints),
    )
