"""vLLM 0.34's per-batch-size K as the simulator's vLLM face runs it (issue 43): a tier of
CUDA graphs per K of the table, each up to the largest batch drafting that K within the
512-token ceiling — so its graphs and its KV differ from the longest static K's — and the
planted collapse of vllm#49548 next to a schedule's edge (``--sim-edge-cliff``)."""

from __future__ import annotations

import pytest

from specconsole.core.config.model import set_values
from specconsole.core.plans.parse import loads_plan
from specconsole.sim.forecast import predict, profile_for, resolve_config
from specconsole.sim.physics.model import graph_slots

PLAN = """
[host]
transport = "local"
[service]
kind = "process"
[server]
engine = "vllm"
engine_version = "0.34.0"
model_path = "Qwen/Qwen3.5-122B-A10B-FP8"
method = "eagle3"
speculative_model = "specconsole/Qwen3.5-122B-A10B-EAGLE3"
num_speculative_tokens = 5
tensor_parallel_size = 4
gpu_memory_utilization = 0.92
max_num_seqs = 64
max_model_len = 32768
launcher = "python3 -m specconsole.sim vllm serve"
extra_args = ["--sim-profile", "examples/sim/qwen3.5-122b-a10b-eagle3.toml"{extra}]
[sweep]
strategy = "grid"
[sweep.axes]
num_speculative_tokens = [5]
"""
TABLE = "1-2:5,3-8:4,9-64:3"


def _config(extra: str = "", table: bool = True):  # type: ignore[no-untyped-def]
    base = loads_plan(PLAN.replace("{extra}", extra)).base
    return set_values(base, num_speculative_tokens_per_batch_size=TABLE) if table else base


def test_each_k_of_the_table_captures_its_own_tier_of_graphs() -> None:
    config = _config()
    args = resolve_config(config, profile_for(config))
    tiers = dict(args.capture_by_steps)
    assert set(tiers) == {3, 4, 5}
    assert max(tiers[5]) == 2 and max(tiers[4]) == 8 and max(tiers[3]) == 64
    assert args.at_batch(6).capture_bs == tiers[4]  # a batch runs its own K's graphs
    static = resolve_config(_config(table=False), profile_for(config))
    assert graph_slots(args) == 64 * 4 + 8 * 5 + 2 * 6  # each tier's widest batch x (K + 1)
    assert graph_slots(args) < graph_slots(static)  # K 5's graphs up to 64 cost more
    # 0.34 sizes the KV cache after the graphs: the smaller tiers leave it more room
    assert (
        predict(config, 1).max_total_num_tokens
        > predict(_config(table=False), 1).max_total_num_tokens
    )


def test_a_planted_cliff_slows_only_the_batches_next_to_its_edge() -> None:
    plain = _config()
    planted = _config(', "--sim-edge-cliff", "8", "--sim-edge-cliff-at", "9"')
    everywhere = _config(', "--sim-edge-cliff", "8"')
    for c, hit in (
        (1, False),
        (2, False),
        (3, False),
        (4, False),
        (8, True),
        (9, True),
        (16, False),
    ):
        ratio = predict(planted, c).aggregate_tok_s / predict(plain, c).aggregate_tok_s
        assert (ratio < 0.2) is hit, (c, ratio)
    assert predict(everywhere, 2).aggregate_tok_s < 0.2 * predict(plain, 2).aggregate_tok_s
    args = resolve_config(planted, profile_for(planted))
    assert [b for b in range(1, 20) if args.at_edge(b)] == [8, 9]


@pytest.mark.parametrize("k", [1, 3])
def test_a_static_k_has_no_tiers_and_no_edge(k: int) -> None:
    config = set_values(_config(table=False), num_speculative_tokens=k)
    args = resolve_config(config, profile_for(config))
    assert args.capture_by_steps == () and not any(args.at_edge(b) for b in range(1, 70))
