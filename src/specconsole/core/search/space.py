"""The optimiser's search space: the plan's axes, SGLang's tie, points as axis indices.

Why its own module: the sampler (``core.search.optimize``) sees a point as one index per axis, while
records hold configurations; turning one into the other (and applying SGLang's rule that
topk 1 ties draft tokens to steps + 1 before anything is proposed) is plain data handling
that the strategy, its reasons and the benchmark share, with no optimisation library in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from specconsole.core.config.model import ServerConfig, set_values
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.search.contenders import identity as _identity


@dataclass(frozen=True, slots=True)
class Axis:
    name: str
    values: tuple[Any, ...]
    """Sorted ascending for a numeric axis, as listed otherwise."""
    numeric: bool

    def index_of(self, value: Any) -> int | None:
        """The index of ``value`` (a numeric value off the list snaps to the nearest)."""
        if value in self.values:
            return self.values.index(value)
        if not self.numeric or not _is_number(value):
            return None
        return min(range(len(self.values)), key=lambda i: abs(self.values[i] - value))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def space(plan: SweepPlan) -> tuple[Axis, ...]:
    out: list[Axis] = []
    for name, values in plan.axes:
        numeric = all(_is_number(v) for v in values)
        out.append(Axis(name, tuple(sorted(values)) if numeric else tuple(values), numeric))
    return tuple(out)


def project(plan: SweepPlan, config: ServerConfig) -> ServerConfig:
    """SGLang's own tie applied up front: with topk 1 the draft tokens are steps + 1 (so two
    points that differ only in draft tokens at topk 1 are one configuration)."""
    config = plan.derive(config)
    steps = config.speculative_num_steps
    if config.speculative_eagle_topk == 1 and steps is not None:
        return replace(config, speculative_num_draft_tokens=steps + 1)
    return config


def decode(plan: SweepPlan, axes: Sequence[Axis], params: dict[str, int]) -> ServerConfig:
    values = {a.name: a.values[params[a.name]] for a in axes}
    return project(plan, plan.at(plan.base, **values))


def encode(plan: SweepPlan, axes: Sequence[Axis], config: ServerConfig) -> dict[str, int] | None:
    """The point of a recorded configuration, or None when it lies outside the space
    (another base, or a value a categorical axis does not list)."""
    params: dict[str, int] = {}
    for a in axes:
        i = a.index_of(getattr(config, a.name))
        if i is None:
            return None
        params[a.name] = i
    outside = [a.name for a in axes]
    if "speculative_num_steps" in outside or "speculative_eagle_topk" in outside:
        outside.append("speculative_num_draft_tokens")  # derived from the tree axes
    mine = set_values(project(plan, config), **dict.fromkeys(outside))
    base = set_values(project(plan, plan.base), **dict.fromkeys(outside))
    return params if _identity(mine) == _identity(base) else None


_SHORT = {
    "speculative_num_steps": "steps",
    "speculative_eagle_topk": "topk",
    "speculative_num_draft_tokens": "draft",
    "mem_fraction_static": "mem",
    "cuda_graph_max_bs": "cg_bs",
    "max_running_requests": "max_req",
}


def point_label(plan: SweepPlan, config: ServerConfig) -> str:
    """The configuration's values on the plan's axes, e.g. ``steps=10 topk=1 mem=0.88``."""
    names = [name for name, _values in plan.axes]
    if "speculative_num_draft_tokens" not in names and config.speculative_eagle_topk != 1:
        names.append("speculative_num_draft_tokens")
    return " ".join(f"{_SHORT.get(n, n)}={getattr(config, n)}" for n in names)


SHORT = _SHORT
"""Short axis names for one-line reasons (``steps``, ``topk``, ``mem``...)."""

__all__ = ["SHORT", "Axis", "decode", "encode", "point_label", "project", "space"]
