"""How vLLM spends a GPU, by release: where the KV cache gets its memory.

Why apart from the box's memory model (:func:`specconsole.sim.physics.model.plan_memory`): the parts
are the box's — weights, the draft, activations, CUDA graphs, the KV cache per token — but the
order vLLM sizes them in changed between the releases the face plays:

* **0.11**: ``--gpu-memory-utilization`` is the budget for the weights, the activations of a
  profiling run and the KV cache; CUDA graphs are captured afterwards, from the memory outside
  it (the box's plan, SGLang's order). The engine refuses to start when less than that share
  of the GPU is free (``Free memory on device ... less than desired GPU memory utilization``).
* **0.34**: the KV cache is *extensible* by default on CUDA: it is sized after CUDA graphs and
  warm-up, from what is left within the utilization — graphs count inside the budget, and
  without ``--gpu-memory-utilization`` the budget is the whole GPU (1.0). No start-up check.

Both refuse a KV cache that cannot hold one request of ``--max-model-len``. Pure.
"""

from __future__ import annotations

import dataclasses
import math

from specconsole.sim.physics.model import GIB, LoadFailure, MemoryPlan, plan_memory
from specconsole.sim.physics.resolve import ResolvedArgs
from specconsole.sim.profile import Profile

__all__ = ["TOO_SHORT", "extensible", "free_at_start_gb", "needed_gb", "vllm_plan"]

TOO_SHORT = "max_model_len"
"""``MemoryPlan.failed_graph`` when the KV cache loads but holds less than one request of
``--max-model-len`` (vLLM refuses to start)."""


def free_at_start_gb(profile: Profile) -> float:
    """GPU memory free when the engine starts (the CUDA context taken)."""
    return profile.gpu.memory_gb - profile.memory.cuda_context_gb


def extensible(release: str) -> bool:
    """Whether the release sizes an extensible KV cache after CUDA graphs (0.34 on CUDA)."""
    return release != "0.11.0"


def needed_gb(plan: MemoryPlan, max_model_len: int) -> float:
    """The KV cache one request of ``max_model_len`` needs (target and draft layers)."""
    return max_model_len * (plan.target_kv_bytes_per_token + plan.draft_kv_bytes_per_token) / GIB


def vllm_plan(args: ResolvedArgs, profile: Profile, release: str) -> MemoryPlan:
    """The memory plan of ``args`` on the release: the box's parts in vLLM's order."""
    plan = plan_memory(args, profile)
    if extensible(release) and plan.failure is not LoadFailure.WEIGHTS_OOM:
        total = plan.total_gb
        graphs = plan.graph_target_gb + plan.graph_draft_gb
        budget = total * args.mem_fraction_static
        used = (
            profile.memory.cuda_context_gb
            + plan.target_weights_gb
            + plan.draft_weights_gb
            + plan.spec_workspace_gb
            + graphs
            + plan.activation_reserve_gb
        )
        per_token = plan.target_kv_bytes_per_token + plan.draft_kv_bytes_per_token
        rest = budget - used
        tokens = math.floor(rest * GIB / per_token) if rest > 0 else 0
        failure: LoadFailure | None = None
        failed: str | None = None
        if used > total:
            failure, failed = LoadFailure.CUDA_GRAPH_CAPTURE, "target"
        elif tokens <= 0:
            failure = LoadFailure.NOT_ENOUGH_MEMORY
        kv = max(tokens, 0) * per_token / GIB
        after_graphs = plan.avail_after_draft_gb - plan.spec_workspace_gb - graphs
        plan = dataclasses.replace(
            plan,
            static_budget_gb=budget,
            max_total_num_tokens=tokens,
            avail_after_target_graph_gb=after_graphs + plan.graph_draft_gb,
            avail_after_graph_gb=after_graphs,
            avail_after_kv_gb=after_graphs - kv,
            failure=failure,
            failed_graph=failed,
        )
    if plan.failure is None and 0 < plan.max_total_num_tokens < args.context_length:
        plan = dataclasses.replace(
            plan, failure=LoadFailure.NOT_ENOUGH_MEMORY, failed_graph=TOO_SHORT
        )
    return plan
