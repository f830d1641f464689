"""Shifting traffic (issue 43): ``alternating:coding,prose`` runs each level in phases, one
category at a time, and reads the engine's own counters at each phase's end — the acceptance
per prompt category per level, on both engines' simulated faces (the simulator's text-kind
acceptance: code drafts are accepted more than prose). And what each server ran per level:
SGLang's ``sglang:spec_num_steps`` gauge, vLLM's draft tokens per draft under its
per-batch-size K."""

from __future__ import annotations

import asyncio

import pytest

from specconsole.bench.ladder import LadderPlan
from specconsole.bench.loadgen import plan_for, run_ladder
from specconsole.bench.workload.datasets import load_dataset, phases_of
from specconsole.bench.workload.prompts import PromptError
from specconsole.core.engine.registry import get_engine
from specconsole.core.ports import BenchSpec
from tests.fixtures.sim import running_simulator, vllm_flags

pytestmark = pytest.mark.slow  # real simulator processes


def _spec(engine: str, api: str) -> BenchSpec:
    return BenchSpec(
        ladder=(1, 8),
        prompts="alternating:coding,prose",
        input_len=256,
        output_len=64,
        warmup_requests=0,
        api=api,  # type: ignore[arg-type]
        spec_counters=get_engine(engine).endpoints.spec_counters,
    )


def test_an_alternating_workload_is_its_categories_in_turn() -> None:
    assert phases_of("alternating:coding,prose") == ("coding", "prose")
    assert phases_of("prose") == ()
    for bad in ("alternating:coding", "alternating:coding,coding", "alternating:coding,x.jsonl"):
        with pytest.raises(PromptError, match="two or more different built-in workloads"):
            phases_of(bad)
    prompts, settings = load_dataset("alternating:coding,prose", 10, input_len=128, output_len=32)
    assert {p.category for p in prompts} == {"coding", "prose"}
    assert settings["phases"] == ["coding", "prose"]
    assert settings["dataset_name"] == "alternating:coding,prose"
    plan = plan_for(_spec("sglang", "generate"))
    assert plan.phases == ("coding", "prose")
    assert plan.phase_size(8, 32) == 8 and plan.phase_size(1, 8) == 2  # each category twice
    assert LadderPlan.from_dict(plan.to_dict()).phases == plan.phases  # it crosses SSH
    with pytest.raises(ValueError, match='use window = "completed"'):
        LadderPlan.from_dict({**plan.to_dict(), "window": "steady"}).check()


def _categories(result) -> dict[int, dict[str, tuple[int, float]]]:  # type: ignore[no-untyped-def]
    out = {}
    for level in result.levels:
        assert level.counters is not None and level.counters.trusted, level.counters
        out[level.max_concurrency] = {
            c.category: (c.requests, c.acceptance_length) for c in level.counters.categories
        }
    return out


def test_sglang_acceptance_per_category_per_level_and_its_steps_in_force() -> None:
    with running_simulator("--enable-metrics", load_seconds=0.3) as sim:
        result = asyncio.run(run_ladder(_spec("sglang", "generate"), sim.base_url))
    found = _categories(result)
    assert set(found) == {1, 8}
    for c, categories in found.items():
        assert {k: n for k, (n, _al) in categories.items()} == {
            "coding": max(8, 4 * c) // 2,
            "prose": max(8, 4 * c) // 2,
        }
        coding, prose = categories["coding"][1], categories["prose"][1]
        assert coding > prose > 3.0, (c, categories)  # code drafts are accepted more
    for level in result.levels:  # sglang:spec_num_steps: the launch's steps 3
        assert level.counters is not None and level.counters.drafted_length == 3.0


def test_vllm_acceptance_per_category_per_level_and_its_k_in_force() -> None:
    flags = vllm_flags(4, num_speculative_tokens_per_batch_size=[[1, 4, 4], [5, 256, 2]])
    with running_simulator(*flags, base_flags=(), load_seconds=0.3) as sim:
        result = asyncio.run(run_ladder(_spec("vllm", "chat"), sim.base_url))
    found = _categories(result)
    for c, categories in found.items():
        assert {k: n for k, (n, _al) in categories.items()} == {
            "coding": max(8, 4 * c) // 2,
            "prose": max(8, 4 * c) // 2,
        }
        assert categories["coding"][1] > categories["prose"][1] > 1.5, (c, categories)
    ran = {lv.max_concurrency: lv.counters.drafted_length for lv in result.levels}  # type: ignore[union-attr]
    assert ran[1] == pytest.approx(4.0)  # the K of the range holding a batch of 1
    assert ran[8] == pytest.approx(2.0, abs=0.3)  # K 2 above 4 (a wave's tail drafts 4)
