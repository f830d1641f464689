"""strategy = "optimize": proposal rules (validation, infeasibility prior, SLO constraints,
convergence with repeats), determinism and resumability, on records built from the pure
simulator model (``sim.physics.model.predict``), no servers."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from specconsole.core.config import validation
from specconsole.core.config.model import ServerConfig
from specconsole.core.machine.state import LevelSummary, TrialKind, TrialRecord, TrialStatus
from specconsole.core.plans.objective import best
from specconsole.core.plans.parse import loads_plan, parse_plan, plan_document
from specconsole.core.plans.plan import PlanError, StrategyKind, SweepPlan
from specconsole.core.search.focus import single_request_goal
from specconsole.core.search.optimize import converged, encode, observations, space, space_size
from specconsole.core.search.strategy import findings, next_trial, stop_reason
from specconsole.sim.forecast import predict
from tests.fixtures.plans import SEED_SERVER

LADDER = (1, 16, 64)

BASE = f"""
{SEED_SERVER}
[bench]
ladder = [1, 16, 64]
input_len = 1024
output_len = 512
"""


def plan(sweep: str, axes: str) -> SweepPlan:
    return loads_plan(BASE + '[sweep]\nstrategy = "optimize"\n' + sweep + "\n[sweep.axes]\n" + axes)


WIDE_AXES = """
speculative_num_steps = { min = 1, max = 10 }
speculative_eagle_topk = [1, 2, 4, 8]
speculative_num_draft_tokens = [2, 4, 8, 16, 32, 64]
mem_fraction_static = { min = 0.80, max = 0.92, step = 0.04 }
"""


def simulate(index: int, config: ServerConfig, *, kind: TrialKind = TrialKind.SWEEP) -> TrialRecord:
    """The trial the simulated seed box would record for ``config``."""
    levels: list[LevelSummary] = []
    capacity = None
    for c in LADDER:
        p = predict(config, c, 1024, 512)
        if not p.ok:
            cap = p.max_total_num_tokens if p.max_total_num_tokens > 0 else None
            return TrialRecord(
                index,
                config,
                normalized=config,
                kind=kind,
                status=TrialStatus.CRASHED,
                capacity=cap,
            )
        capacity = p.max_total_num_tokens
        levels.append(
            LevelSummary(
                c, p.aggregate_tok_s, p.per_request_tok_s, c, ttft_p99_ms=p.ttft_s * 1000.0
            )
        )
    return TrialRecord(
        index,
        config,
        normalized=config,
        kind=kind,
        status=TrialStatus.OK,
        levels=tuple(levels),
        capacity=capacity,
    )


def run(p: SweepPlan, n: int, trials: list[TrialRecord] | None = None) -> list[TrialRecord]:
    trials = list(trials or [])
    for _ in range(n):
        proposal = next_trial(p, trials)
        if proposal is None:
            break
        trials.append(replace(simulate(len(trials), proposal.config), note=proposal.reason))
    return trials


# ----------------------------------------------------------------------------- plan keys


def test_plan_ranges_defaults_and_errors() -> None:
    p = plan("", WIDE_AXES)
    assert p.strategy is StrategyKind.OPTIMIZE and p.skip_infeasible is True
    assert dict(p.axes)["speculative_num_steps"] == tuple(range(1, 11))
    assert dict(p.axes)["mem_fraction_static"] == (0.8, 0.84, 0.88, 0.92)
    assert space_size(p) >= 300
    assert plan("skip_infeasible = false", WIDE_AXES).skip_infeasible is False
    with pytest.raises(PlanError, match=r"floats need one, e\.g\. step = 0\.02"):
        plan("", "mem_fraction_static = { min = 0.8, max = 0.9 }")
    with pytest.raises(PlanError, match="a range is"):
        plan("", "speculative_num_steps = { from = 1, to = 3 }")
    with pytest.raises(PlanError, match="more than 1000"):
        plan("", "mem_fraction_static = { min = 0.1, max = 0.9, step = 0.0001 }")
    with pytest.raises(PlanError, match=r'strategy = "optimize" needs \[sweep.axes\]'):
        loads_plan(BASE + '[sweep]\nstrategy = "optimize"\n')
    with pytest.raises(PlanError, match=r"\[sweep\] patience must be an integer"):
        plan("patience = 2.5", WIDE_AXES)


# ----------------------------------------------------------------------------- rules


def test_every_proposal_passes_validation_and_ties_topk1_drafts() -> None:
    trials = run(plan("seed = 3\npatience = 100", WIDE_AXES), 14)
    assert len(trials) == 14
    for t in trials:
        assert not validation.errors(validation.validate(t.config)), t.config
        if t.config.speculative_eagle_topk == 1:
            assert t.config.speculative_num_draft_tokens == t.config.speculative_num_steps + 1
    assert len({t.config for t in trials}) == len(trials)  # never repeats a trial
    assert all(t.note.startswith("optimize (") for t in trials)
    assert any("rejected by validation" in t.note for t in trials)


def test_capacity_prior_skips_predicted_infeasible_with_the_numbers() -> None:
    p = plan("seed = 1", "speculative_num_steps = { min = 1, max = 12 }\n")
    base = p.base
    seen = [simulate(i, p.at(base, speculative_num_steps=s)) for i, s in enumerate((1, 2, 4))]
    assert all(t.capacity for t in seen)
    trials = run(p, 12, seen)
    tried = [t.config.speculative_num_steps for t in trials]
    # steps >= 10 are predicted not to load on the seed box: never deployed
    assert max(tried) <= 9, tried
    assert any(
        re.search(
            r"skipped: predicted infeasible steps=1[0-2]: predicted -?[\d,]+ KV tokens < 1,536",
            t.note,
        )
        for t in trials
    ), [t.note for t in trials]
    # unless the user asks: with skip_infeasible = false they may be deployed
    p2 = replace(p, skip_infeasible=False)
    trials2 = run(p2, 12, seen)
    assert max(t.config.speculative_num_steps for t in trials2) >= 10


def test_crashes_are_learned_as_infeasible() -> None:
    p = plan("seed = 0", WIDE_AXES)
    trials = run(p, 25)
    crashes = [t for t in trials if t.status is TrialStatus.CRASHED]
    obs = observations(p, trials)
    assert len(obs) == len(trials)
    assert all(o.violation == 1.0 and o.values is None for o in obs if o.trial in crashes)
    # later proposals crash less than the space's share of crashes (about 40%)
    late = trials[10:]
    assert sum(t.status is TrialStatus.CRASHED for t in late) / len(late) < 0.3


def test_slo_constraint_marks_misses_infeasible_and_best_meets_it() -> None:
    axes = "speculative_num_steps = { min = 1, max = 8 }\n"
    # peak aggregate alone prefers short chains; the SLO on single-request speed rules out
    # steps 1-3 on the seed box (steps 3, the peak-aggregate optimum, runs ~229 tok/s)
    p = plan('seed = 2\nconstraints = ["single_request >= 235"]', axes)
    trials = run(p, 8)
    obs = {o.trial.config.speculative_num_steps: o for o in observations(p, trials)}
    missed = [o for o in obs.values() if o.trial.status is TrialStatus.OK and o.violation > 0]
    assert missed, "the constraint should rule some trial out"
    for o in missed:
        assert (o.trial.single_request_tok_s or 0) < 235 and o.values is not None
    found = best(trials, p.goal)
    assert found is not None and (found.single_request_tok_s or 0) >= 235
    unconstrained = best(trials, replace(p.goal, constraints=()))
    assert unconstrained is not None and unconstrained is not found
    # an SLO nothing meets: no best, and the findings say so
    impossible = plan('seed = 2\nconstraints = ["single_request >= 1e9"]', axes)
    trials = run(impossible, 5)
    assert all(o.violation > 0 for o in observations(impossible, trials))
    assert "no trial meets the constraints" in findings(impossible, trials)[0]


def _ci(trial: TrialRecord, half: float) -> TrialRecord:
    """The trial as if its levels had been repeated with a +-half confidence interval."""
    levels = tuple(
        replace(lv, repeats=3, output_tok_s_ci=(lv.output_tok_s - half, lv.output_tok_s + half))
        for lv in trial.levels
    )
    return replace(trial, levels=levels)


def _ok(index: int, steps: int, agg: float) -> TrialRecord:
    cfg = ServerConfig(model_path="Qwen/Qwen3.5-122B-A10B-FP8", speculative_num_steps=steps)
    return TrialRecord(
        index, cfg, status=TrialStatus.OK, levels=(LevelSummary(1, agg, agg / 4, 1),)
    )


def test_convergence_compares_confidence_intervals() -> None:
    p = plan(
        "patience = 3\nstartup_trials = 1\nnoise_pct = 0",
        "speculative_num_steps = { min = 1, max = 9 }\n",
    )
    # each trial a little better than the last, but within the repeats' interval
    creeping = [_ci(_ok(i, i + 1, 1000.0 + 10 * i), half=50.0) for i in range(5)]
    assert converged(p, creeping)
    # the runner-up (trial 4) is tied with the best (trial 5): measured once more first
    again = next_trial(p, creeping)
    assert again is not None and again.config == creeping[3].config
    assert "repeat: trial 4" in again.reason and "tied with the best, trial 5" in again.reason
    creeping.append(_ci(_ok(5, 4, 1030.0), half=50.0))
    assert next_trial(p, creeping) is None
    assert stop_reason(p, creeping).startswith("converged: no improvement beyond the noise in 3")
    # the same figures measured once each are real improvements: not converged
    single = [_ok(i, i + 1, 1000.0 + 10 * i) for i in range(5)]
    assert not converged(p, single)
    # noise_pct is the floor without repeats
    assert converged(replace(p, noise_pct=5.0), single)


def test_deterministic_for_a_seed_and_resumable_from_records() -> None:
    p = plan("seed = 7", WIDE_AXES)
    a = run(p, 8)
    b = run(p, 8)
    assert [t.config for t in a] == [t.config for t in b]
    # resume: the records alone rebuild the search; the next proposal equals the next of
    # an uninterrupted run, and a cancelled trial is proposed again
    cont = run(p, 4, a[:5])
    assert [t.config for t in cont[:8]] == [t.config for t in a]
    cancelled = [*a[:5], replace(a[5], status=TrialStatus.CANCELLED, levels=())]
    assert next_trial(p, cancelled).config == a[5].config  # type: ignore[union-attr]
    other = run(plan("seed = 8", WIDE_AXES), 8)
    assert [t.config for t in other] != [t.config for t in a]


def test_trials_of_earlier_strategies_count() -> None:
    p = plan("seed = 0", WIDE_AXES)
    grid = loads_plan(BASE + "[sweep.axes]\nspeculative_num_steps = [1, 2, 3]\n")
    earlier = [simulate(i, c) for i, c in enumerate(grid.grid())]
    assert all(encode(p, space(p), t.config) is not None for t in earlier)
    assert len(observations(p, earlier)) == 3
    proposal = next_trial(p, earlier)
    assert proposal is not None and proposal.config not in {t.config for t in earlier}
    # a manual trial outside the space (another model) is not an observation
    manual = replace(earlier[0], config=replace(earlier[0].config, model_path="other"))
    assert observations(p, [manual]) == []


def test_configurations_running_elsewhere_are_never_proposed() -> None:
    p = plan("seed = 4", WIDE_AXES)
    trials = run(p, 6)
    alone = next_trial(p, trials)
    assert alone is not None
    pooled = next_trial(p, trials, pending=[alone.config])
    assert pooled is not None and pooled.config != alone.config
    assert pooled.config not in {t.config for t in trials}


# ----------------------------------------------------------------------------- start and focus


def with_tree(p: SweepPlan) -> SweepPlan:
    """The plan with a base that names its tree (steps 3, topk 1, draft tokens 4)."""
    tree = {"speculative_num_steps": 3, "speculative_num_draft_tokens": 4}
    return replace(p, base=replace(p.base, **tree))


def test_the_first_proposal_is_the_base_configuration() -> None:
    p = with_tree(plan("seed = 5", WIDE_AXES))
    first = next_trial(p, [])
    assert first is not None and "the base configuration first" in first.reason
    # the base (steps 3, topk 1, mem 0.88 on the seed box) projected onto SGLang's tie
    assert (first.config.speculative_num_steps, first.config.speculative_eagle_topk) == (3, 1)
    assert first.config.speculative_num_draft_tokens == 4
    assert first.config.mem_fraction_static == p.base.mem_fraction_static
    # the base is the whole start-up: TPE from the second proposal on
    second = run(p, 3)[1:]
    assert all(t.note.startswith("optimize (TPE") for t in second), [t.note for t in second]
    # start_at_base = false: the sampler's own start, for every seed a point of its own
    off = [with_tree(plan(f"seed = {s}\nstart_at_base = false", WIDE_AXES)) for s in range(4)]
    randoms = [next_trial(q, []) for q in off]
    assert all(r is not None and "random start" in r.reason for r in randoms)
    notes = [t.note for t in run(off[0], 5)]
    assert all("random start" in n for n in notes[:4]) and "(TPE" in notes[4], notes
    assert len({r.config for r in randoms if r is not None}) > 1
    # a base that leaves an axis to SGLang (no steps) is no point of the space: no base start
    assert "random start" in (next_trial(plan("seed = 5", WIDE_AXES), []) or first).reason
    back = parse_plan(plan_document(plan("start_at_base = false\nstartup_trials = 2", WIDE_AXES)))
    assert (back.start_at_base, back.startup_trials) == (False, 2)
    assert parse_plan(plan_document(plan("", WIDE_AXES))).startup_trials is None
    with pytest.raises(PlanError, match=r"\[sweep\] start_at_base must be true or false"):
        plan('start_at_base = "yes"', WIDE_AXES)


CAPACITY_AXES = """
speculative_num_steps = { min = 1, max = 8 }
mem_fraction_static = { min = 0.80, max = 0.92, step = 0.04 }
cuda_graph_max_bs = [32, 64, 128]
"""


def test_a_single_request_goal_holds_the_capacity_axes_at_the_base_then_releases_them() -> None:
    p = plan('objective = "single_request"\npatience = 6\nseed = 2', CAPACITY_AXES)
    held = run(replace(p, patience=1000), 8)
    assert {(t.config.mem_fraction_static, t.config.cuda_graph_max_bs) for t in held} == {
        (0.88, 64)
    }
    assert all("cg-bs=64 mem=0.88 held at the base" in t.note for t in held), held[1].note
    # released after half the patience without an improvement: the rest search them too
    trials = run(p, 8)
    later = [t for t in trials if "held at the base" not in t.note]
    assert later and any(t.config.mem_fraction_static != 0.88 for t in later[:4] + trials[-4:])
    # a goal that reads batched levels holds nothing
    peak = run(plan("seed = 2\npatience = 1000", CAPACITY_AXES), 6)
    assert not any("held at the base" in t.note for t in peak)
    assert len({(t.config.mem_fraction_static, t.config.cuda_graph_max_bs) for t in peak}) > 1


def test_which_goals_read_single_requests_only() -> None:
    def goal(sweep: str) -> bool:
        p = plan(sweep, CAPACITY_AXES)
        return single_request_goal(p.goal, p.bench.ladder)

    assert goal('objective = "single_request"')
    assert goal('objective = "per_request_at_1"\nconstraints = ["accept_length >= 2"]')
    assert not goal('objective = "peak_aggregate"')
    assert not goal('objective = "single_request"\nconstraints = ["ttft_p99_ms_at_64 <= 2000"]')
    assert not goal('objective = "capacity"')
