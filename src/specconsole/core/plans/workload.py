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

The template part holds for a trained draft (an EAGLE head, a draft model) on a real engine
only: n-gram speculation drafts from the text itself, whatever wraps it, and the simulated box
models acceptance from the kind of text asked for, never its template
(``sim.physics.textkind``) — so the shipped plans on the simulator are not warned about a
template their box ignores. Random tokens read low for every drafter: that warning stays.
"""

from __future__ import annotations

from specconsole.core.config.concepts import Concept, concept_keys, concept_value
from specconsole.core.config.concepts import speculates as speculates_config
from specconsole.core.config.model import runs_simulator
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


def drafts_with_a_model(plan: SweepPlan) -> bool:
    """Whether a trained draft (a draft model or head, not n-gram lookup) drafts in any of the
    plan's configurations: its base, or a draft-model axis with a value."""
    if concept_value(plan.base, Concept.DRAFT_MODEL):
        return True
    keys = concept_keys(plan.base.engine, Concept.DRAFT_MODEL)
    return any(name in keys and any(values) for name, values in plan.axes)


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
    template_matters = drafts_with_a_model(plan) and not runs_simulator(plan.base)
    if template_matters and bench.api is not BenchApi.CHAT and dataset not in TEMPLATED_DATASETS:
        return (
            f"the prompts go to the {bench.api.value} API as bare text, without the model's "
            f"chat template: speculative acceptance will read lower than it serves; {better}"
        )
    return ""
