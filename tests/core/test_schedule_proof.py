"""The schedule's proof beyond the ladder (issue 43), as records in and answers out: its edges
as each engine routes a batch, a cliff planted in the simulated vLLM face found, named,
merged away and re-proven, the engine's own adaptive mode as two contenders, each trial's
break-even concurrency, what the server ran read back, and trials that re-measure.

Records carry the simulator model's figures (``sim.forecast.predict``) at the concurrencies
each proposal asks for, as ``benchmarks/schedule_efficiency.py`` runs the strategy.
"""

from __future__ import annotations

import dataclasses

import pytest

from specconsole.core.config.issues import Issue
from specconsole.core.config.model import ServerConfig, set_values
from specconsole.core.config.validation import validate
from specconsole.core.engine.registry import get_engine
from specconsole.core.engine.schedule import Role, config_role
from specconsole.core.measure.acceptance import CounterAcceptance
from specconsole.core.measure.trials import LevelSummary, Remeasure, TrialRecord, TrialStatus
from specconsole.core.plans.objective import best
from specconsole.core.plans.parse import loads_plan
from specconsole.core.search.levels import level_table, role_of
from specconsole.core.search.per_level import rounds
from specconsole.core.search.proof.readback import in_force, mismatches
from specconsole.core.search.strategy import next_trial
from specconsole.present.figures.levels import level_headers, level_verdicts
from specconsole.present.figures.proof import edge_lines, readback_lines
from specconsole.session.records import record_from_dict, record_to_dict
from specconsole.sim.forecast import predict

LADDER = (1, 4, 16, 32, 64)
SERVERS = {
    "sglang": """model_path = "Qwen/Qwen3.5-122B-A10B-FP8"
speculative_algorithm = "EAGLE3"
speculative_draft_model_path = "specconsole/Qwen3.5-122B-A10B-EAGLE3"
speculative_eagle_topk = 1
mem_fraction_static = 0.88
cuda_graph_max_bs = 64
max_running_requests = 64
tp_size = 4
engine_version = "0.5.14"
launcher = "python3 -m specconsole.sim"
""",
    "vllm": """engine = "vllm"
engine_version = "0.34.0"
model_path = "Qwen/Qwen3.5-122B-A10B-FP8"
method = "eagle3"
speculative_model = "specconsole/Qwen3.5-122B-A10B-EAGLE3"
tensor_parallel_size = 4
gpu_memory_utilization = 0.92
max_num_seqs = 64
max_model_len = 32768
launcher = "python3 -m specconsole.sim vllm serve"
extra_args = ["--sim-profile", "examples/sim/qwen3.5-122b-a10b-eagle3.toml"{extra}]
""",
}


AXIS = {"sglang": "speculative_num_steps", "vllm": "num_speculative_tokens"}
"""Each engine's draft length in its own key."""


def _plan(engine: str, extra: str = "", sweep: str = ""):  # type: ignore[no-untyped-def]
    server = SERVERS[engine].replace("{extra}", extra)
    return loads_plan(f"""
[host]
transport = "local"
[service]
kind = "process"
[server]
{server}
[sweep]
strategy = "per_level"
{sweep}
[sweep.axes]
{AXIS[engine]} = [1, 2, 3, 4, 5]
[bench]
ladder = [1, 4, 16, 32, 64]
""")


def _measured(index: int, config: ServerConfig, remeasure: Remeasure | None) -> TrialRecord:
    at = remeasure.ladder if remeasure is not None and remeasure.ladder else LADDER
    preds = [predict(config, c) for c in at]
    levels = tuple(LevelSummary(p.concurrency, p.aggregate_tok_s, p.per_request_tok_s, 10)
                   for p in preds)  # fmt: skip
    return TrialRecord(
        index=index,
        config=config,
        status=TrialStatus.OK,
        levels=levels,
        capacity=preds[0].max_total_num_tokens,
        remeasure=remeasure,
    )


def _run(plan, limit: int = 40) -> list[TrialRecord]:  # type: ignore[no-untyped-def]
    trials: list[TrialRecord] = []
    while len(trials) < limit:
        proposal = next_trial(plan, trials)
        if proposal is None:
            return trials
        trials.append(_measured(len(trials), proposal.config, proposal.remeasure))
    raise AssertionError("the proof must be bounded")


def test_sglang_routes_a_batch_through_its_captured_sizes_to_a_bucket() -> None:
    sglang = get_engine("sglang")
    base = _plan("sglang").base
    schedule = set_values(
        base,
        speculative_num_steps=5,
        speculative_num_draft_tokens=6,
        speculative_adaptive_schedule="1:5,3:4,46:3",
    )
    # 45 pads to the captured 48, which routes to bucket 46: the edge is at 45, not 46
    assert [sglang.steps_at(schedule, b) for b in (2, 3, 44, 45, 46)] == [5, 4, 4, 3, 3]
    edges = sglang.edges(schedule, 64)
    assert [(e.batch, e.switches) for e in edges] == [(3, True), (45, True)]
    assert "45 rounds up to captured size 48" in edges[1].why
    # an engine limit inside a bucket: batches above cuda_graph_max_bs run without graphs
    small = set_values(schedule, cuda_graph_max_bs=16)
    assert (17, False) in [(e.batch, e.switches) for e in sglang.edges(small, 64)]


def test_the_sglang_proof_measures_its_edges_then_sglangs_own_adaptive_mode() -> None:
    plan = _plan("sglang")
    trials = _run(plan)
    roles = [role_of(t) for t in trials]
    assert roles[7:] == [Role.REMEASURE] * 4 + [Role.ADAPTIVE] * 2
    (done,) = rounds(plan, trials)
    assert [c.edge.batch for c in done.checks] == [3, 9]
    assert not done.cliffs and not done.missing
    assert "edge proof: the schedule holds at every edge (1 round(s), 4 edge trials)" in (
        edge_lines(rounds(plan, trials), plan.base, trials)
    )
    # a re-measure is never a level's best nor the sweep's
    boosted = [dataclasses.replace(t, levels=tuple(
        dataclasses.replace(lv, output_tok_s=lv.output_tok_s * 10) for lv in t.levels))
        for t in trials[7:11]]  # fmt: skip
    assert best([*trials[:7], *boosted], plan.goal) in trials[:7]
    table = level_table(trials, plan.goal, plan.noise_pct)
    assert [lv.concurrency for lv in trials[7].levels] == [2, 3, 8, 9]
    assert [r.concurrency for r in table.rows] == list(LADDER)  # the rungs are not levels
    # the contenders: (a) the release's defaults, (b) the EMA over the schedule's 3, 4, 5
    default, same = trials[11], trials[12]
    assert default.config.speculative_adaptive is True
    assert default.config.speculative_adaptive_schedule is None
    assert default.config.speculative_num_steps is None  # the release's own candidates
    assert same.config.speculative_adaptive_schedule == "1:3/4/5,3:3/4/5,9:3/4/5"
    assert default.capacity == 136_509  # the longest default candidate (7) reserves its KV
    for contender in (default, same):
        assert config_role(contender.config) is Role.ADAPTIVE
        assert not [i for i in validate(contender.config) if i.blocking]
    assert level_headers(table)[6:8] == ("adaptive (a)", "adaptive (b)")
    for key, weakest in (("a", 64), ("b", 64)):
        rivalry = table.rivalry(key)
        assert rivalry is not None and rivalry.at_weakest[0] == weakest
        assert rivalry.at_weakest[1] >= 3.0 and rivalry.worst[1] >= -1.0
        assert not rivalry.contender_wins
    said = level_verdicts(table, plan.base, plan.noise_pct)
    assert any("engine adaptive, its defaults (a) #12" in v and "136,509 KV tokens" in v
               for v in said)  # fmt: skip
    assert table.breakeven(default) == 64  # its default drafts nothing from 64: no gain there
    assert table.breakeven(trials[6]) is None


def test_a_cliff_planted_at_a_vllm_edge_is_found_named_merged_and_reproven() -> None:
    plan = _plan("vllm", ', "--sim-edge-cliff", "8", "--sim-edge-cliff-at", "9"')
    trials = _run(plan)
    first, second = rounds(plan, trials)
    (cliffed,) = first.cliffs
    assert cliffed.edge.batch == 9 and "K 4 → 3 at batch 9" in cliffed.edge.why
    assert cliffed.cliff is not None and (cliffed.cliff.shortfall_pct() or 0.0) > 80.0
    assert [(e.batch, level, takes) for e, level, takes in first.merged] == [(9, 16, 4)]
    assert second.trial is not None and not second.cliffs and not second.missing
    labels = [c.edge.batch for c in second.checks]
    assert labels == [3, 23]  # the adjusted schedule 1-2:5,3-22:4,23+:3
    lines = edge_lines((first, second), plan.base, trials)
    assert any("a cliff at c=9" in line for line in lines)
    assert "edge proof: the schedule holds at every edge (2 round(s), 7 edge trials)" in lines
    # vLLM has no adaptive mode of its own: no contender ran, the table says why
    table = level_table(trials, plan.goal, plan.noise_pct)
    assert table.schedule is second.trial
    assert all(isinstance(c.refusal, Issue) and c.trial is None for c in table.contenders)
    assert any("no engine adaptive mode to compare" in v
               for v in level_verdicts(table, plan.base, plan.noise_pct))  # fmt: skip


def test_the_rounds_are_bounded_when_every_edge_collapses() -> None:
    plan = _plan("vllm", ', "--sim-edge-cliff", "8"')  # a collapse at every edge
    trials = _run(plan)
    done = rounds(plan, trials)
    assert len(done) == 3 and done[-1].cliffs  # named, never hidden: the bound ends it
    assert sum(1 for t in trials if t.remeasure is not None) <= 12


def test_speculation_is_off_from_the_break_even_where_the_engine_allows() -> None:
    plan = _plan("vllm")
    trials = _run(plan)[:6]
    baseline = trials[5]
    lifted = dataclasses.replace(baseline, levels=tuple(
        dataclasses.replace(lv, output_tok_s=lv.output_tok_s * 3) if lv.concurrency >= 32
        else lv for lv in baseline.levels))  # fmt: skip
    trials = [*trials[:5], lifted]
    table = level_table(trials, plan.goal, plan.noise_pct)
    assert table.stops_paying == 32
    assert table.breakeven(trials[2]) == 32  # K 3: it pays below 32, never from there
    proposal = next_trial(plan, trials)
    assert proposal is not None
    assert proposal.config.num_speculative_tokens_per_batch_size == "1-2:5,3-8:4,9-22:3,23-64:0"


def _with_drafted(trial: TrialRecord, lengths: dict[int, float]) -> TrialRecord:
    levels = tuple(
        dataclasses.replace(
            lv, counters=CounterAcceptance(10, 30, 20, drafted_length=lengths[lv.concurrency])
        )
        for lv in trial.levels
    )
    return dataclasses.replace(trial, levels=levels)


def test_what_the_server_ran_is_read_back_and_a_mismatch_is_a_finding() -> None:
    plan = _plan("vllm")
    trials = _run(plan)
    schedule = trials[6]
    assert role_of(schedule) is Role.SCHEDULE
    obeyed = _with_drafted(schedule, {1: 5.0, 4: 4.0, 16: 3.0, 32: 3.0, 64: 3.0})
    assert [r.deployed for r in in_force(obeyed)] == [5, 4, 3, 3, 3]
    assert not mismatches([obeyed])
    # data parallelism drops vLLM's table with a warning: the static K runs everywhere
    dropped = _with_drafted(schedule, {1: 5.0, 4: 5.0, 16: 5.0, 32: 5.0, 64: 5.0})
    found = mismatches([dropped])
    assert [(row.concurrency, row.deployed) for _t, row in found] == [(4, 4), (16, 3), (32, 3),
                                                                     (64, 3)]  # fmt: skip
    lines = readback_lines([dropped], plan.base)
    assert "MISMATCH" in lines[0]
    assert (
        "  finding: at c=16 the configuration deploys draft length 3, the server ran 5.0" in lines
    )


def test_a_remeasure_survives_the_record_codec() -> None:
    plan = _plan("sglang")
    trials = _run(plan)
    edge = trials[7]
    back = record_from_dict(record_to_dict(edge))
    assert back.remeasure == Remeasure("edge", (2, 3, 8, 9)) and back.levels == edge.levels


def test_a_proof_dataset_measures_the_schedule_its_statics_and_the_contender_there() -> None:
    plan = _plan("sglang", sweep='proof_dataset = "alternating:coding,prose"')
    trials = _run(plan)
    again = [t for t in trials if t.remeasure is not None and t.remeasure.why == "workload"]
    assert [t.remeasure.dataset for t in again] == ["alternating:coding,prose"] * 5  # type: ignore[union-attr]
    assert [role_of(dataclasses.replace(t, remeasure=None)) for t in again] == [
        Role.SCHEDULE, Role.STATIC, Role.STATIC, Role.STATIC, Role.ADAPTIVE]  # fmt: skip
    with pytest.raises(ValueError, match='needs strategy = "per_level"'):
        loads_plan('proof_dataset = "prose"\n'.join(_plan_text_grid().split("__PROOF__")))


def _plan_text_grid() -> str:
    return """
[host]
transport = "local"
[service]
kind = "process"
[server]
model_path = "m"
speculative_algorithm = "EAGLE3"
[sweep]
strategy = "grid"
__PROOF__
[sweep.axes]
speculative_num_steps = [1, 2]
"""
