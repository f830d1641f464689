"""The optimiser's search space: the plan's axes, the engine's ties, points as axis indices.

Why its own module: the sampler (``core.search.optimize``) sees a point as one index per axis, while
records hold configurations; turning one into the other (and applying the engine's ties, such
as SGLang's rule that topk 1 ties draft tokens to steps + 1, before anything is proposed) is
plain data handling that the strategy, its reasons and the benchmark share, with no
optimisation library in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specconsole.core.config.model import ServerConfig, option_fields, set_values
from specconsole.core.config.ties import apply_ties, engine_ties
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
    """The engine's own ties applied up front (``core.config.ties``: SGLang's draft tokens
    = steps + 1 at topk 1), so two points that differ only in a derived key are one
    configuration."""
    return apply_ties(plan.derive(config))


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
    for tie in engine_ties(plan.base.engine):
        if set(tie.sources) & set(outside):
            outside.append(tie.key)  # derived from the axes
    mine = set_values(project(plan, config), **dict.fromkeys(outside))
    base = set_values(project(plan, plan.base), **dict.fromkeys(outside))
    return params if _identity(mine) == _identity(base) else None


def point_label(plan: SweepPlan, config: ServerConfig) -> str:
    """The configuration's values on the plan's axes, e.g. ``steps=10 topk=1 mem=0.88``
    (a derived key too where its tie does not hold)."""
    names = [name for name, _values in plan.axes]
    for tie in engine_ties(config.engine):
        if tie.key not in names and not tie.holds(config):
            names.append(tie.key)
    return values_text(config, names)


def values_text(config: ServerConfig, names: Sequence[str]) -> str:
    """``steps=10 mem=0.88``: the keys' values by their short names in ``config``'s engine
    (``OptionField.short``) — one-line reasons and point labels."""
    own = option_fields(config.engine)
    return " ".join(
        f"{own[n].short if n in own and own[n].short else n}={getattr(config, n)}" for n in names
    )


__all__ = ["Axis", "decode", "encode", "point_label", "project", "space", "values_text"]
