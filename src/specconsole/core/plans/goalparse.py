"""Reading a plan's ``[sweep] objective`` and ``constraints`` (the forms ``core.plans.objective``
documents) into a :class:`~specconsole.core.plans.objective.Goal`, and writing it back.

Why apart from the judging: parsing is about TOML shapes and error messages (each names the
field and the fix); ``core.plans.objective`` is about trials. Every mistake raises
:class:`~specconsole.core.plans.objective.ObjectiveError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from specconsole.core.plans.objective import (
    METRIC_ALIASES,
    METRIC_HELP,
    METRIC_KINDS,
    PEAK_AGGREGATE,
    Constraint,
    Goal,
    Metric,
    Objective,
    ObjectiveError,
    ObjectiveKind,
    Op,
)

_METRIC_RE = re.compile(r"^(?P<kind>[a-z0-9_]+?)_(?P<c>\d+)$")


def parse_metric(text: Any, where: str) -> Metric:
    """``"peak_aggregate"``, ``"aggregate_at_64"``, ``"ttft_p99_ms_at_64"``... → Metric."""
    if not isinstance(text, str) or not text.strip():
        raise ObjectiveError(f"{where} must be a metric name; use one of {METRIC_HELP}")
    name = text.strip()
    kind_name, concurrency = name, None
    m = _METRIC_RE.match(name)
    if m is not None and METRIC_ALIASES.get(m["kind"], m["kind"]) in METRIC_KINDS:
        kind_name, concurrency = m["kind"], int(m["c"])
    kind_name = METRIC_ALIASES.get(kind_name, kind_name)
    kind = METRIC_KINDS.get(kind_name)
    if kind is None:
        raise ObjectiveError(f"{where}: unknown metric {name!r}; use one of {METRIC_HELP}")
    if kind.per_level and concurrency is None:
        raise ObjectiveError(
            f"{where}: {name!r} needs a concurrency level; write it as {name}_C, e.g. {name}_64"
        )
    if not kind.per_level and concurrency is not None:
        raise ObjectiveError(
            f"{where}: {kind.name!r} is one figure per trial, not per level; "
            f"write {kind.name!r} without _{concurrency}"
        )
    if concurrency is not None and concurrency < 1:
        raise ObjectiveError(f"{where}: concurrency must be at least 1 in {name!r}")
    return Metric(kind, concurrency)


_CONSTRAINT_RE = re.compile(
    r"^\s*(?P<metric>[A-Za-z0-9_]+)\s*(?P<op><=|>=|<|>)\s*(?P<bound>\S+)\s*$"
)


def parse_constraint(text: Any, where: str) -> Constraint:
    if not isinstance(text, str):
        raise ObjectiveError(
            f'{where} must be a string like "ttft_p99_ms_at_64 <= 2000", got {text!r}'
        )
    m = _CONSTRAINT_RE.match(text)
    if m is None:
        raise ObjectiveError(
            f"{where} = {text!r} is not a constraint; write METRIC <= NUMBER (or <, >=, >), "
            'e.g. "ttft_p99_ms_at_64 <= 2000" or "single_request >= 200"'
        )
    metric = parse_metric(m["metric"], where)
    try:
        bound = float(m["bound"])
    except ValueError:
        raise ObjectiveError(
            f"{where} = {text!r}: the bound {m['bound']!r} must be a number, e.g. 2000"
        ) from None
    return Constraint(metric, Op(m["op"]), bound)


def parse_objective(value: Any, where: str = "[sweep] objective") -> Objective:
    """A TOML ``objective`` value → Objective (see the module docstring for the forms)."""
    if isinstance(value, str):
        return Objective(ObjectiveKind.METRIC, ((parse_metric(value, where), 1.0),))
    if not isinstance(value, Mapping) or len(value) != 1:
        raise ObjectiveError(
            f'{where} must be a metric name ("peak_aggregate") or a table with one of '
            "{ aggregate_at = 64 }, { weighted = { single_request = 1.0, peak_aggregate = "
            '0.1 } }, { pareto = ["single_request", "peak_aggregate"] }'
        )
    ((key, inner),) = value.items()
    if key == "aggregate_at":
        if isinstance(inner, bool) or not isinstance(inner, int) or inner < 1:
            raise ObjectiveError(
                f"{where}.aggregate_at must be a concurrency level (a positive integer), "
                f"got {inner!r}"
            )
        return Objective(
            ObjectiveKind.METRIC, ((Metric(METRIC_KINDS["aggregate_at"], inner), 1.0),)
        )
    if key == "weighted":
        if not isinstance(inner, Mapping) or not inner:
            raise ObjectiveError(
                f"{where}.weighted must be a table of metric = weight, e.g. "
                "{ single_request = 1.0, peak_aggregate = 0.1 }"
            )
        terms: list[tuple[Metric, float]] = []
        for name, weight in inner.items():
            sub = f"{where}.weighted.{name}"
            metric = parse_metric(name, sub)
            if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
                raise ObjectiveError(
                    f"{sub} must be a positive number (a latency's weight already counts "
                    f"against it), got {weight!r}"
                )
            terms.append((metric, float(weight)))
        return Objective(ObjectiveKind.WEIGHTED, tuple(terms))
    if key == "pareto":
        if not isinstance(inner, list) or len(inner) != 2:
            raise ObjectiveError(
                f'{where}.pareto must list two metrics, e.g. ["single_request", "peak_aggregate"]'
            )
        pair = tuple((parse_metric(n, f"{where}.pareto[{i}]"), 1.0) for i, n in enumerate(inner))
        if pair[0][0] == pair[1][0]:
            raise ObjectiveError(f"{where}.pareto lists {pair[0][0].name} twice; name two metrics")
        return Objective(ObjectiveKind.PARETO, pair)
    raise ObjectiveError(
        f"{where}: unknown form {key!r}; use aggregate_at, weighted or pareto "
        '(or a metric name string, e.g. "peak_aggregate")'
    )


def parse_constraints(value: Any, where: str = "[sweep] constraints") -> tuple[Constraint, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ObjectiveError(
            f'{where} must be a list of strings, e.g. ["ttft_p99_ms_at_64 <= 2000"]'
        )
    return tuple(parse_constraint(v, f"{where}[{i}]") for i, v in enumerate(value))


def parse_goal(objective: Any = None, constraints: Any = None) -> Goal:
    """The plan's ``[sweep] objective`` and ``constraints`` (either may be absent)."""
    obj = PEAK_AGGREGATE if objective is None else parse_objective(objective)
    cons = () if constraints is None else parse_constraints(constraints)
    return Goal(obj, cons)


def goal_document(goal: Goal) -> dict[str, Any]:
    """The goal as ``[sweep]`` keys that :func:`parse_goal` reads back to an equal goal."""
    obj = goal.objective
    doc: dict[str, Any] = {}
    if obj.kind is ObjectiveKind.METRIC:
        doc["objective"] = obj.terms[0][0].name
    elif obj.kind is ObjectiveKind.WEIGHTED:
        doc["objective"] = {"weighted": {m.name: w for m, w in obj.terms}}
    else:
        doc["objective"] = {"pareto": [m.name for m in obj.metrics]}
    if goal.constraints:
        doc["constraints"] = [c.text for c in goal.constraints]
    return doc
