"""How a sweep goes on: the strategy that picks its next trial and what a crash does.

Why apart from the plan's model (:mod:`.plan`, which re-exports both): the controller's
state keeps the crash policy and the console compares the strategy from its first frame on,
while the plan's model brings its tables (hosts, profile, rate search, objective, bench) with
it; these two enumerations need nothing.
"""

from __future__ import annotations

from enum import StrEnum


class CrashPolicy(StrEnum):
    """What happens after a crash."""

    PAUSE = "pause"
    """Wait for the user's decision (``ResumeChoice``)."""
    AUTO = "auto"
    """Record it and continue with the next planned trial."""


class StrategyKind(StrEnum):
    """How the next trial is chosen (see ``core.search.strategy``)."""

    GRID = "grid"
    """Every combination of the axes, in order."""
    BOUNDARY = "boundary"
    """Walk an integer axis upwards; after a crash at b with success at a, bisect (a, b) to
    find the largest value that loads; values above a crash are not tried."""
    PLATEAU = "plateau"
    """Walk an axis upwards while single-request tok/s gains at least ``min_gain_pct`` and
    peak aggregate tok/s does not fall; stop at the plateau."""
    OPTIMIZE = "optimize"
    """Sample-efficient constrained search over every axis (``core.search.optimize``): learns where
    loads crash, skips configurations predicted not to load, stops on convergence."""
    STAGED = "staged"
    """The capacity axes first (speculation as in the base), then the speculative axes on
    the winner (``core.search.staged``)."""
    PER_LEVEL = "per_level"
    """Every static candidate of the axes, the baseline without speculation, then one
    configuration that drafts each level's best length at its batch sizes (the *schedule*, a
    result), benchmarked on the same ladder (``core.search.per_level``). Named for what it
    measures, so the strategy and the schedule it derives are not one word; its former name
    ``"schedule"`` is still read (:data:`FORMER_STRATEGIES`)."""

    @classmethod
    def _missing_(cls, value: object) -> StrategyKind | None:
        return (
            cls(FORMER_STRATEGIES[value])
            if isinstance(value, str) and value in FORMER_STRATEGIES
            else None
        )


FORMER_STRATEGIES: dict[str, str] = {"schedule": "per_level"}
"""A strategy's former name → its name: an old plan (and a session recorded before the
rename) still reads, and the plan loader says the new name (``core.plans.parse``)."""
