"""The ``staged`` strategy: capacity first, then speculation on the winner.

Why: the capacity axes (``mem_fraction_static``, ``cuda_graph_max_bs``,
``max_running_requests``, ``chunked_prefill_size``, and any other axis that is not about the
draft) decide how much the box can hold and batch; the speculative axes decide how each
request is decoded. Searching them jointly spends loads on combinations; searching them one
after the other — the way SGLang's own searcher runs its base flags before its speculative
settings — needs the sum of the two spaces, not their product. So:

1. **Stage 1 (capacity)**: every combination of the capacity axes (the plan's values, in
   order, the last axis fastest), with the speculative axes as in the base (the base's value,
   or the nearest listed one; the first listed when the base names none).
2. **Stage 2 (speculation)**: every combination of the speculative axes, with the capacity
   axes at stage 1's winner — the best trial of stage 1 by the plan's goal
   (``core.plans.objective.best``); the base's values when no stage-1 trial was feasible.

Like every strategy this is a pure function of the plan and the records, so a resumed
session continues in the stage it stopped in. A stage with no axes is skipped. Each stage's
choice and why is a sentence of :func:`findings`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from specconsole.core.config.model import ServerConfig
from specconsole.core.measure.trials import TrialRecord, TrialStatus
from specconsole.core.plans.objective import best
from specconsole.core.plans.plan import SPECULATIVE_PREFIXES, SweepPlan, speculative_axis
from specconsole.core.search.contenders import identity, not_to_propose
from specconsole.core.search.space import space, values_text

speculative = speculative_axis
"""Whether an axis is about the draft (``core.plans.plan.SPECULATIVE_PREFIXES``)."""


@dataclass(frozen=True, slots=True)
class Stage:
    """One stage: its axes and the configurations it tries, in order."""

    number: int
    title: str
    axes: tuple[str, ...]
    configs: tuple[ServerConfig, ...]


def _anchor(plan: SweepPlan, name: str) -> Any:
    """The value a held axis takes: the base's, snapped to the axis's listed values."""
    for axis in space(plan):
        if axis.name == name:
            value = getattr(plan.base, name)
            index = axis.index_of(value) if value is not None else None
            return axis.values[index if index is not None else 0]
    return getattr(plan.base, name)


def _combos(
    plan: SweepPlan, names: Sequence[str], fixed: dict[str, Any]
) -> tuple[ServerConfig, ...]:
    values = dict(plan.axes)
    out: list[ServerConfig] = []
    for combo in itertools.product(*(values[n] for n in names)):
        out.append(plan.at(plan.base, **fixed, **dict(zip(names, combo, strict=True))))
    return tuple(out)


def split_axes(plan: SweepPlan) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(capacity axes, speculative axes) in the plan's order."""
    names = [name for name, _values in plan.axes]
    return (
        tuple(n for n in names if not speculative(n, plan.base.engine)),
        tuple(n for n in names if speculative(n, plan.base.engine)),
    )


def stage_one(plan: SweepPlan) -> Stage:
    capacity, spec = split_axes(plan)
    held = {n: _anchor(plan, n) for n in spec}
    return Stage(1, "capacity", capacity, _combos(plan, capacity, held) if capacity else ())


def _in(stage: Stage, config: ServerConfig) -> bool:
    return identity(config) in {identity(c) for c in stage.configs}


def stage_one_winner(plan: SweepPlan, trials: Sequence[TrialRecord]) -> TrialRecord | None:
    """The best stage-1 trial by the plan's goal (None: none was feasible)."""
    one = stage_one(plan)
    return best([t for t in trials if _in(one, t.config)], plan.goal)


def stage_two(plan: SweepPlan, trials: Sequence[TrialRecord]) -> Stage:
    capacity, spec = split_axes(plan)
    winner = stage_one_winner(plan, trials)
    source = winner.config if winner is not None else plan.base
    held = {n: getattr(source, n) if winner is not None else _anchor(plan, n) for n in capacity}
    return Stage(2, "speculation", spec, _combos(plan, spec, held) if spec else ())


def next_config(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    skipped: Iterable[ServerConfig] = (),
    pending: Iterable[ServerConfig] = (),
) -> tuple[ServerConfig, str] | None:
    """The next configuration and its reason, or None when both stages are done. Stage 2
    waits for stage 1 to be decided (nothing of it left to run, here or elsewhere)."""
    blocked = not_to_propose(trials, skipped, pending)
    one = stage_one(plan)
    for i, config in enumerate(one.configs):
        if identity(config) not in blocked:
            return config, f"staged: stage 1 (capacity) {i + 1} of {len(one.configs)}"
    if any(_in(one, c) for c in pending):
        return None  # stage 1's last trials run elsewhere: its winner is not known yet
    two = stage_two(plan, trials)
    winner = stage_one_winner(plan, trials)
    on = f"on trial {winner.index + 1}'s capacity" if winner is not None else "on the base"
    for i, config in enumerate(two.configs):
        if identity(config) not in blocked:
            return config, f"staged: stage 2 (speculation) {i + 1} of {len(two.configs)} {on}"
    return None


def _values(config: ServerConfig, names: Sequence[str]) -> str:
    return values_text(config, names)


def _stage_sentence(plan: SweepPlan, stage: Stage, trials: Sequence[TrialRecord]) -> str:
    mine = [t for t in trials if _in(stage, t.config)]
    top = best(mine, plan.goal)
    axes = ", ".join(stage.axes)
    failed = sum(1 for t in mine if t.status in (TrialStatus.CRASHED, TrialStatus.LOAD_TIMEOUT))
    pruned = sum(1 for t in mine if t.status is TrialStatus.PRUNED)
    counts = f"{len(mine)} of {len(stage.configs)} tried"
    if failed:
        counts += f", {failed} did not load"
    if pruned:
        counts += f", {pruned} pruned"
    head = f"stage {stage.number} ({stage.title}: {axes})"
    if top is None:
        keep = "the base's values" if stage.number == 1 else "nothing"
        return f"{head}: no feasible trial ({counts}); kept {keep}"
    score = plan.goal.objective.score(top)
    figure = "" if score is None else f" {plan.goal.objective.describe} {abs(score):,.1f}"
    return (
        f"{head}: chose {_values(top.config, stage.axes)} — trial {top.index + 1},{figure}, "
        f"the best of its stage ({counts})"
    )


def findings(plan: SweepPlan, trials: Sequence[TrialRecord]) -> tuple[str, ...]:
    """One sentence per stage that has axes: what it chose and why."""
    out: list[str] = []
    one = stage_one(plan)
    if one.axes:
        out.append(_stage_sentence(plan, one, trials))
    two = stage_two(plan, trials)
    if two.axes:
        out.append(_stage_sentence(plan, two, trials))
    return tuple(out)


def planned(plan: SweepPlan) -> tuple[ServerConfig, ...]:
    """Every configuration the stages may run before any is measured (stage 2 on the
    base's capacity): what a plan check validates up front."""
    return (*stage_one(plan).configs, *stage_two(plan, ()).configs)


def size(plan: SweepPlan) -> int:
    """Trials both stages plan (stage 2 includes stage 1's winner itself when its
    speculative values are listed, which is not run twice)."""
    one = stage_one(plan)
    two = stage_two(plan, ())
    overlap = 1 if one.configs and two.configs else 0
    return len(one.configs) + len(two.configs) - overlap


__all__ = [
    "SPECULATIVE_PREFIXES",
    "Stage",
    "findings",
    "next_config",
    "planned",
    "size",
    "speculative",
    "split_axes",
    "stage_one",
    "stage_one_winner",
    "stage_two",
]
