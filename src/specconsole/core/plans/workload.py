"""Whether a plan's benchmark will show the acceptance its model shows in production.

Why: speculative decoding's acceptance depends on the text. A draft proposes what the model
would say next in a conversation, so random token soup (bench_serving's ``random`` dataset)
is accepted far less than real requests, and so is bare text sent without the model's chat
template (``/generate`` or ``/v1/completions`` fed a prompt file or the plain built-in set):
a speculative sweep benchmarked that way reads low and may pick too short a draft. The
pre-flight says so once (``core.machine.handlers.preflight``, a warning, never blocking); the chat
API
(the server applies the template) and the templated built-in workloads (``coding``,
``prose``) are what it suggests.
"""

from __future__ import annotations

from specconsole.core.config.concepts import speculates as speculates_config
from specconsole.core.plans.plan import SweepPlan, speculative_axis
from specconsole.core.ports import BenchApi

__all__ = ["TEMPLATED_DATASETS", "speculates", "workload_warning"]

TEMPLATED_DATASETS: frozenset[str] = frozenset({"coding", "prose"})
"""Built-in workloads wrapped in the model's chat template (``bench.workload.prompts.TEMPLATED``).
"""


def speculates(plan: SweepPlan) -> bool:
    """Whether the sweep deploys speculative decoding (its base, or an axis about it)."""
    if speculates_config(plan.base):
        return True
    return any(speculative_axis(name, plan.base.engine) for name, _values in plan.axes)


def workload_warning(plan: SweepPlan) -> str:
    """Why the plan's acceptance will read low ('' when it will not, or nothing drafts)."""
    if not speculates(plan):
        return ""
    bench = plan.bench
    dataset = bench.prompts
    better = 'use dataset = "coding" or "prose", or api = "chat"'
    if dataset == "random":
        return (
            "the benchmark sends random tokens: speculative acceptance will read low (drafts "
            f"follow real text); {better}"
        )
    if bench.api is not BenchApi.CHAT and dataset not in TEMPLATED_DATASETS:
        return (
            f"the prompts go to the {bench.api.value} API as bare text, without the model's "
            f"chat template: speculative acceptance will read lower than it serves; {better}"
        )
    return ""
