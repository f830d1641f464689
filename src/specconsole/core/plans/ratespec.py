"""``[sweep.rate_search]``: how ``objective = "max_rate_under_slo"`` probes request rates.

Why its own module: the plan must say how far to search (the lowest and highest rate worth
trying), how hard (rounds) and how exactly (a relative tolerance), and which in-flight cap
the Poisson load keeps — as vLLM's ``vllm bench sweep serve_sla`` and SGLang's searcher are
told. It is plan data read from TOML with errors that name the key; the search itself (which
rate next, when it is done) is ``core.search.ratesearch``'s. A plan whose objective is
``max_rate_under_slo`` gets these defaults without the table::

    [sweep.rate_search]
    min = 0.25          # req/s: below this the configuration is said to hold no rate
    max = 64.0          # req/s: the search never offers more (the answer is then ">= max")
    rounds = 10         # probes per trial at most (each one a benchmark of the probe)
    tolerance = 0.05    # stop once the highest rate that held and the lowest that failed
                        # are within 5 % of each other
    concurrency = 64    # the in-flight cap of the Poisson load (default: the ladder's top)

The SLOs are the plan's ``[sweep] constraints``: a probe holds when every one of them is
met by the probe's figures (a level metric names the cap, ``ttft_p99_ms_at_64 <= 2000``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specconsole.core.config.inputs import did_you_mean
from specconsole.core.plans.objective import Goal

_KEYS = frozenset({"min", "max", "rounds", "tolerance", "concurrency"})
"""``[sweep.rate_search]``'s keys."""

MAX_ROUNDS = 30
"""A plan may not ask for more probes per trial (each costs a benchmark)."""


class RateSpecError(ValueError):
    """``[sweep.rate_search]`` is wrong; the message names the key and the fix."""


@dataclass(frozen=True, slots=True)
class RateSearchSpec:
    """The bounds, effort and precision of one trial's rate search."""

    min_rate: float = 0.25
    max_rate: float = 64.0
    rounds: int = 10
    tolerance: float = 0.05
    """Relative: done when ``lowest failing / highest holding <= 1 + tolerance``."""
    concurrency: int | None = None
    """In-flight cap of the probes' Poisson load (None: the ladder's highest level)."""

    def cap(self, ladder: Sequence[int]) -> int:
        return self.concurrency if self.concurrency is not None else max(ladder)


def uses_rate_search(goal: Goal) -> bool:
    """True when the goal's objective is the highest rate under the SLOs."""
    return any(m.kind.name == "max_rate_under_slo" for m in goal.objective.metrics)


def _number(table: Mapping[str, Any], key: str, default: float, *, integer: bool = False) -> Any:
    value = table.get(key, default)
    where = f"[sweep.rate_search] {key}"
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RateSpecError(f"{where} must be a number, got {value!r}")
    if integer and not isinstance(value, int):
        raise RateSpecError(f"{where} must be an integer, got {value!r}")
    if value <= 0:
        raise RateSpecError(f"{where} must be greater than 0, got {value!r}")
    return value


def parse_rate_search(table: Any, goal: Goal, ladder: Sequence[int]) -> RateSearchSpec | None:
    """The table (or its defaults) for a goal that searches rates; None otherwise. Checks
    that the search has SLOs to hold and that their levels name the in-flight cap."""
    if table is None:
        table = {}
    if not isinstance(table, Mapping):
        raise RateSpecError("[sweep.rate_search] must be a table, e.g. { min = 0.5, max = 32 }")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise RateSpecError(
            f"[sweep.rate_search]: unknown key {unknown[0]!r}; {did_you_mean(unknown[0], _KEYS)}"
            "known keys: concurrency, max, min, rounds, tolerance"
        )
    if not uses_rate_search(goal):
        if table:
            raise RateSpecError(
                '[sweep.rate_search] is only used with objective = "max_rate_under_slo"; '
                "remove it or set that objective"
            )
        return None
    spec = RateSearchSpec(
        min_rate=float(_number(table, "min", 0.25)),
        max_rate=float(_number(table, "max", 64.0)),
        rounds=int(_number(table, "rounds", 10, integer=True)),
        tolerance=float(_number(table, "tolerance", 0.05)),
        concurrency=_number(table, "concurrency", max(ladder), integer=True)
        if "concurrency" in table
        else None,
    )
    if spec.min_rate >= spec.max_rate:
        raise RateSpecError(
            f"[sweep.rate_search] min ({spec.min_rate:g}) must be below max ({spec.max_rate:g})"
        )
    if spec.rounds < 2 or spec.rounds > MAX_ROUNDS:
        raise RateSpecError(f"[sweep.rate_search] rounds must be 2 to {MAX_ROUNDS}")
    if not goal.constraints:
        raise RateSpecError(
            'objective = "max_rate_under_slo" needs the SLOs to hold in [sweep] constraints, '
            'e.g. constraints = ["ttft_p99_ms_at_64 <= 2000", "itl_p99_ms_at_64 <= 50"]'
        )
    cap = spec.cap(ladder)
    for c in goal.constraints:
        if c.metric.concurrency is not None and c.metric.concurrency != cap:
            raise RateSpecError(
                f"[sweep] constraints: {c.text} names concurrency {c.metric.concurrency}, but "
                f"the rate search's probes keep at most {cap} requests in flight; name "
                f"{c.metric.kind.name}_{cap} (or set [sweep.rate_search] concurrency)"
            )
    return spec


def rate_search_document(spec: RateSearchSpec | None) -> dict[str, Any]:
    """The table :func:`parse_rate_search` reads back to an equal spec ({} for None)."""
    if spec is None:
        return {}
    doc: dict[str, Any] = {
        "min": spec.min_rate,
        "max": spec.max_rate,
        "rounds": spec.rounds,
        "tolerance": spec.tolerance,
    }
    if spec.concurrency is not None:
        doc["concurrency"] = spec.concurrency
    return doc


__all__ = [
    "RateSearchSpec",
    "RateSpecError",
    "parse_rate_search",
    "rate_search_document",
    "uses_rate_search",
]
