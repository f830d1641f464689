"""What an engine is asked when a sweep turns per-level measurements into one configuration:
a draft length per batch-size range, and the side files such a configuration needs.

Why its own module: the engines that switch their draft length by batch size say it in their
own words — SGLang's ``--speculative-adaptive-config`` (candidate steps per batch-size bucket,
a JSON file on the box), vLLM's ``num_speculative_tokens_per_batch_size`` (inclusive ranges
inside ``--speculative-config``) — but the question is the same: "at these concurrency levels
these configurations measured best; give me one configuration that runs each one's draft
length at that level's batch size, or say why you cannot". The question's shape (the levels
and what won there, the batch-size ranges the levels stand for) is generic and lives here;
each engine answers through its ``schedule`` slot (``core.engine.protocol``).

How levels become ranges (:func:`level_ranges`): a closed-loop benchmark at concurrency ``c``
runs batches of about ``c`` requests, a little fewer between waves. A level's choice holds
from the geometric midpoint with the level below to the geometric midpoint with the level
above (1, 4, 16, 32, 64 → 1-2, 3-8, 9-22, 23-45, 46 and up), so a batch that dips below its
level keeps its level's draft length and each measured level lands in its own range. An
engine may move the boundaries further to fit its own routing (SGLang rounds a batch up to
a captured CUDA-graph size first; ``engines/sglang/adaptive.py`` says how).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = [
    "Edge",
    "LengthWords",
    "LevelPick",
    "Refusal",
    "Role",
    "ScheduleRow",
    "SideFile",
    "config_role",
    "first_difference",
    "level_ranges",
    "merged",
    "pick_rows",
    "static_lengths",
    "switch_points",
]


@dataclass(frozen=True, slots=True)
class LevelPick:
    """One ladder level and the configuration that measured best there."""

    concurrency: int
    config: object
    """The winning trial's configuration (a ``ServerConfig``: typed loosely so this module
    stays below the configuration model)."""


@dataclass(frozen=True, slots=True)
class ScheduleRow:
    """One batch-size range and the draft length it runs (0: no draft)."""

    start: int
    end: int | None
    """Inclusive; ``None``: every larger batch."""
    steps: int

    @property
    def span(self) -> str:
        """``1-2``, ``46+``, ``4`` for a one-size range."""
        if self.end is None:
            return f"{self.start}+"
        return str(self.start) if self.end == self.start else f"{self.start}-{self.end}"


@dataclass(frozen=True, slots=True)
class SideFile:
    """A file a configuration's command line names, deployed beside its unit or script (SGLang's
    adaptive config): its name (content-addressed, so a new schedule is a new file and a new
    artifact hash) and its text."""

    name: str
    text: str


@dataclass(frozen=True, slots=True)
class Edge:
    """A batch size where a configuration changes how it decodes: the first size on the new
    side (the batch one request smaller runs the old way). A schedule's own edges switch the
    draft length; an engine imposes others (the largest captured CUDA-graph batch)."""

    batch: int
    why: str
    """In the engine's words: ``steps 4 → 3 (bucket 9)``, ``above 64: no CUDA graphs``."""
    switches: bool = True
    """The draft length changes here (False: an engine's own limit inside one length)."""

    @property
    def rungs(self) -> tuple[int, int]:
        """The concurrencies just below and above the edge."""
        return (self.batch - 1, self.batch)


def switch_points(
    steps_at: Callable[[int], int | None], up_to: int, said: Callable[[int, int, int], str]
) -> tuple[Edge, ...]:
    """Where ``steps_at`` (a batch size's draft length) changes between 1 and ``up_to``, each
    named by ``said(batch, old, new)``; none where a length is chosen at run time (None)."""
    out: list[Edge] = []
    before = steps_at(1)
    for batch in range(2, max(up_to, 1) + 1):
        now = steps_at(batch)
        if before is not None and now is not None and now != before:
            out.append(Edge(batch, said(batch, before, now)))
        before = now
    return tuple(out)


def level_ranges(levels: Sequence[int]) -> list[tuple[int, int | None]]:
    """The batch-size range each ladder level stands for, in ladder order (see the module
    docstring): geometric midpoints between neighbours, the first from 1, the last open."""
    ordered = sorted(set(levels))
    out: list[tuple[int, int | None]] = []
    for i, level in enumerate(ordered):
        start = 1 if i == 0 else out[-1][1] + 1  # type: ignore[operator]
        if i + 1 < len(ordered):
            end = max(math.floor(math.sqrt(level * ordered[i + 1])), start, level)
        else:
            end = None
        out.append((start, end))
    return out


def merged(rows: Sequence[ScheduleRow]) -> tuple[ScheduleRow, ...]:
    """Neighbouring ranges with the same draft length as one range."""
    out: list[ScheduleRow] = []
    for row in rows:
        if out and out[-1].steps == row.steps:
            out[-1] = ScheduleRow(out[-1].start, row.end, row.steps)
        else:
            out.append(row)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the picks make no schedule, with the field and the fix (an engine turns it into
    its ``Issue``: this module stays below the configuration model)."""

    field: str | None
    message: str
    fix: str


@dataclass(frozen=True, slots=True)
class LengthWords:
    """How an engine names what its schedule switches, for :func:`static_lengths`'
    refusals (SGLang: the draft length, ``speculative_num_steps``; vLLM: K)."""

    field: str
    """The key refused when a pick does not draft one length at every batch size."""
    switches: str
    """What such a pick does: ``its draft length (or has no draft length)``."""
    built_from: str
    """What a schedule is built from instead: ``static chains``."""
    sweep_fix: str
    """The fix for such a pick: ``sweep static speculative_num_steps values at topk 1.``"""
    length: str
    """What one configuration switches by batch size: ``the draft length``."""
    lengths: str
    """What to measure at one value of a differing key: ``draft lengths``."""
    method: str = ""
    """The engine's speculative-method key, refused when no pick speculates."""


def static_lengths(
    picks: Sequence[LevelPick],
    length_of: Callable[[Any], int | None],
    without: Callable[[Any], object],
    ignore: Collection[str],
    words: LengthWords,
) -> tuple[object, list[int]] | Refusal:
    """The configuration a schedule of ``picks`` is built on (the first speculative pick's)
    and each pick's static draft length (``length_of``: 0 without a draft, None when it
    switches), or why there is none: no pick speculates, a pick switches, or two picks differ
    in more than the draft length (``ignore``; a pick without a draft is compared with
    ``without(base)``)."""
    spec = [p for p in picks if length_of(p.config)]  # truthy: speculates, statically
    if not spec:
        return Refusal(
            words.method or None,
            "no level measured best with speculation: a schedule would draft nothing.",
            "deploy the configuration without speculation (the baseline).",
        )
    base = spec[0].config
    lengths: list[int] = []
    for pick in picks:
        length = length_of(pick.config)
        if length is None:
            return Refusal(
                words.field,
                f"c={pick.concurrency}'s best already switches {words.switches}: a schedule "
                f"is built from {words.built_from}.",
                words.sweep_fix,
            )
        differs = first_difference(pick.config, base if length else without(base), ignore)
        if differs is not None:
            return Refusal(
                differs,
                f"c={pick.concurrency}'s best differs from c={spec[0].concurrency}'s in "
                f"{differs}: one configuration switches only {words.length} by batch size.",
                f"measure the {words.lengths} at one {differs} (hold it in the plan), or "
                "deploy each level's best on its own.",
            )
        lengths.append(length)
    return base, lengths


def pick_rows(picks: Sequence[LevelPick], lengths: Sequence[int]) -> tuple[ScheduleRow, ...]:
    """Each pick's draft length over the batch sizes its level stands for
    (:func:`level_ranges`), neighbours with the same length merged."""
    ranges = level_ranges([p.concurrency for p in picks])
    order = sorted(range(len(picks)), key=lambda i: picks[i].concurrency)
    return merged([ScheduleRow(s, e, lengths[i]) for (s, e), i in zip(ranges, order, strict=True)])


def first_difference(a: object, b: object, ignore: Collection[str] = ()) -> str | None:
    """The first configuration key (a field, or one of the engine's own keys) on which ``a``
    and ``b`` differ, besides ``ignore`` and what is not part of a configuration's identity
    (its title, the box's flags); None when they agree. An engine's ``schedule`` asks it
    whether two levels' picks differ in more than the draft length."""
    for f in dataclasses.fields(a):  # type: ignore[arg-type]
        if not f.compare or f.name in ignore or f.name == "options":
            continue
        if getattr(a, f.name) != getattr(b, f.name, None):
            return f.name
    mine, theirs = dict(getattr(a, "options", ())), dict(getattr(b, "options", ()))
    for key in sorted(set(mine) | set(theirs)):
        if key not in ignore and mine.get(key) != theirs.get(key):
            return key
    return None


class Role(StrEnum):
    """What a configuration is to a per-level sweep, as its engine says."""

    STATIC = "static"
    """Drafts one length at every batch size: a candidate for the per-level bests."""
    BASELINE = "baseline"
    """Drafts nothing: what speculation is measured against."""
    SCHEDULE = "schedule"
    """Switches its draft length by batch size (``Engine.scheduled``)."""
    WHAT_IF = "what_if"
    """Runs with its acceptance fixed (``Engine.fixed_acceptance``): a what-if, never
    mixed with measured acceptance — never a level's best, never the sweep's best."""
    ADAPTIVE = "adaptive"
    """The engine chooses its draft length at run time by its own rule (SGLang's EMA of
    acceptance, ``Engine.adaptive_mode``): a contender the schedule is compared with,
    never a level's best static."""
    REMEASURE = "remeasure"
    """A trial's role, not a configuration's: it measured its configuration again under
    other benchmark settings (``TrialRecord.remeasure``: a schedule's edges, another
    workload) — never a level's best, never the sweep's best."""


def config_role(config: object) -> Role:
    """``config``'s role, asked of its engine (static when the engine is not registered)."""
    from specconsole.core.engine.registry import EngineNotFound, engine_for

    try:
        engine = engine_for(config)  # type: ignore[arg-type]
    except EngineNotFound:
        return Role.STATIC
    if engine.fixed_acceptance(config):  # type: ignore[arg-type]
        return Role.WHAT_IF
    if engine.verify_tokens(config) == 0:  # type: ignore[arg-type]
        return Role.BASELINE
    if engine.scheduled(config) is not None:  # type: ignore[arg-type]
        return Role.SCHEDULE
    if engine.adaptive_mode(config) is not None:  # type: ignore[arg-type]
        return Role.ADAPTIVE
    return Role.STATIC
