"""The edge proof: a schedule measured where it switches, its cliffs found, named and removed.

Why: the ladder (1, 4, 16, 32, 64) never straddles an edge the schedule chose — ``3-8:4,
9+:3`` is never measured at 8 and 9 — and that is where schedules break: vLLM's per-batch-size
K collapsed 8 concurrent requests from ~232 to 24-157 tok/s at its schedule's threshold
(vllm#49548). So once a schedule has run on the ladder, its proof goes on:

1. **the edges** — every batch size where the schedule switches its draft length *as the
   engine routes a batch* (``Engine.edges``: SGLang rounds a batch up to a captured
   CUDA-graph size first, so ``46: [3]`` switches at 45) and every limit the engine imposes
   inside it (the largest captured CUDA-graph batch), up to the ladder's top;
2. **the rungs** — the concurrencies just below and above each edge: the schedule is
   measured there (one trial, ``TrialRecord.remeasure``), and so are the two statics it
   switches between (the picks of the ladder levels on either side), each in one trial;
   a rung that is a ladder level is read from the ladder's trials;
3. **a cliff** — a rung where the schedule falls below *both* neighbouring statics by more
   than the noise band (:func:`band_pct`): named with its edge and figures;
4. **the adjustment** — the two buckets around a cliffed edge are merged: both levels take
   the static that did better over the two (its figures against each level's best), the
   engine says the new schedule (``Engine.schedule``), and it is proven again: on the
   ladder, then at its own edges. An engine's own limit cannot be merged away; it is named.

Bounded: at most :data:`MAX_ROUNDS` schedules are proven (each adjustment removes an edge),
and each round spends at most one trial per configuration. Pure: a function of the plan and
the records, so a resumed session proves the same edges.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from specconsole.core.config.concepts import Concept, concept_value
from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.registry import engine_for
from specconsole.core.engine.schedule import Edge, LevelPick
from specconsole.core.measure.trials import Remeasure, TrialRecord, TrialStatus
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.search.contenders import identity
from specconsole.core.search.proof.remeasure import EDGE, figure_at, measured_at

__all__ = [
    "EDGE_FLOOR_PCT",
    "MAX_ROUNDS",
    "EdgeCheck",
    "Round",
    "RungFigures",
    "band_pct",
    "check_round",
    "merge",
    "needed",
]

MAX_ROUNDS = 3
"""Schedules an edge proof proves at most: the derived one and two adjustments."""

EDGE_FLOOR_PCT = 5.0
"""The least shortfall called a cliff: one benchmark run of a configuration varies by a few
percent (2-4 % between sessions on the simulated seed box with a short steady window), and a
cliff is a collapse (vllm#49548: 32-90 %) — a schedule is never reshaped by noise."""


def band_pct(plan: SweepPlan) -> float:
    """How far below both neighbours a rung must fall to be a cliff, in percent: the plan's
    noise (``[sweep] noise_pct``), never less than :data:`EDGE_FLOOR_PCT`."""
    return max(plan.noise_pct, EDGE_FLOOR_PCT)


@dataclass(frozen=True, slots=True)
class RungFigures:
    """One rung: the schedule's figure and its two neighbouring statics' (None: not
    measured)."""

    concurrency: int
    schedule: float | None
    left: float | None
    right: float | None

    def shortfall_pct(self) -> float | None:
        """How far the schedule falls below the lower of its two neighbours, percent
        (negative: above both); None unless all three were measured."""
        if self.schedule is None or self.left is None or self.right is None:
            return None
        floor = min(self.left, self.right)
        return None if floor <= 0 else (1.0 - self.schedule / floor) * 100.0


@dataclass(frozen=True, slots=True)
class EdgeCheck:
    """One edge of a schedule, the statics it switches between and its rungs' figures."""

    edge: Edge
    left: LevelPick
    right: LevelPick
    rungs: tuple[RungFigures, ...]
    band_pct: float

    @property
    def cliff(self) -> RungFigures | None:
        """The rung that falls furthest below both neighbours beyond the band (None: the edge
        holds, or a rung was not measured)."""
        worst = [
            (short, r)
            for r in self.rungs
            if (short := r.shortfall_pct()) is not None and short > self.band_pct
        ]
        return max(worst, key=lambda p: p[0])[1] if worst else None

    @property
    def measured(self) -> bool:
        return all(r.shortfall_pct() is not None for r in self.rungs)


@dataclass(frozen=True, slots=True)
class Round:
    """One schedule's edge proof."""

    schedule: ServerConfig
    trial: TrialRecord | None
    """Its trial on the ladder (None: not run yet)."""
    picks: tuple[LevelPick, ...]
    checks: tuple[EdgeCheck, ...] = ()
    missing: tuple[tuple[ServerConfig, tuple[int, ...]], ...] = ()
    """What is still to be measured: each configuration and its rungs, in order."""
    merged: tuple[tuple[Edge, int, int], ...] = field(default=())
    """The cliffed edges the next round merges away: (edge, the level that changes, the
    level whose static it takes)."""

    @property
    def cliffs(self) -> tuple[EdgeCheck, ...]:
        return tuple(c for c in self.checks if c.cliff is not None)


def _neighbours(edge: Edge, picks: Sequence[LevelPick]) -> tuple[LevelPick, LevelPick] | None:
    """The picks of the ladder levels just below and at-or-above the edge."""
    ordered = sorted(picks, key=lambda p: p.concurrency)
    if not ordered:
        return None
    below = [p for p in ordered if p.concurrency < edge.batch]
    above = [p for p in ordered if p.concurrency >= edge.batch]
    return (below[-1] if below else ordered[0]), (above[0] if above else ordered[-1])


def top_level(plan: SweepPlan, schedule: ServerConfig) -> int:
    """The largest concurrency a rung may be measured at: the ladder's top (a batch never
    grows past the running limit, so a rung above it measures the queue)."""
    top = max(plan.bench.ladder, default=1)
    running = concept_value(schedule, Concept.MAX_CONCURRENCY)
    return min(top, running) if isinstance(running, int) and running > 0 else top


def needed(
    plan: SweepPlan, schedule: ServerConfig, picks: Sequence[LevelPick]
) -> tuple[tuple[Edge, LevelPick, LevelPick, tuple[int, ...]], ...]:
    """The schedule's edges with their neighbouring statics and rungs (within the ladder's
    span)."""
    top = top_level(plan, schedule)
    out = []
    for edge in engine_for(schedule).edges(schedule, top):
        pair = _neighbours(edge, picks)
        rungs = tuple(c for c in edge.rungs if 1 <= c <= top)
        if pair is not None and rungs:
            out.append((edge, *pair, rungs))
    return tuple(out)


def check_round(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    schedule: ServerConfig,
    trial: TrialRecord | None,
    picks: Sequence[LevelPick],
) -> Round:
    """``schedule``'s edge proof so far: its checks and what is still to be measured."""
    if trial is None or trial.status is not TrialStatus.OK:
        return Round(schedule, trial, tuple(picks))
    band = band_pct(plan)
    checks: list[EdgeCheck] = []
    wanted: dict[ServerConfig, list[int]] = {}
    configs: dict[ServerConfig, ServerConfig] = {}
    for edge, left, right, rungs in needed(plan, schedule, picks):
        figures = []
        for c in rungs:
            row = RungFigures(
                c,
                figure_at(trials, schedule, c),
                figure_at(trials, left.config, c),  # type: ignore[arg-type]
                figure_at(trials, right.config, c),  # type: ignore[arg-type]
            )
            figures.append(row)
            for config in (schedule, left.config, right.config):
                assert isinstance(config, ServerConfig)
                if c not in measured_at(trials, config):
                    key = identity(config)
                    configs.setdefault(key, config)
                    wanted.setdefault(key, [])
                    if c not in wanted[key]:
                        wanted[key].append(c)
        checks.append(EdgeCheck(edge, left, right, tuple(figures), band))
    missing = tuple((configs[k], tuple(sorted(v))) for k, v in wanted.items())
    return Round(schedule, trial, tuple(picks), tuple(checks), missing)


def merge(
    picks: Sequence[LevelPick],
    cliffs: Sequence[EdgeCheck],
    score: dict[tuple[int, ServerConfig], float],
    recreates: Callable[[tuple[LevelPick, ...]], bool] = lambda _picks: False,
) -> tuple[tuple[LevelPick, ...], tuple[tuple[Edge, int, int], ...]]:
    """The picks with each cliffed edge that switches merged away: the level on one side
    takes the other's static — the one whose figures at the two levels (``score``: figure
    over the level's best, by (level, identity)) sum higher, unless that makes a schedule
    with an edge already found cliffed (``recreates``) and the other way does not. Engine
    limits stay."""
    out = {p.concurrency: p for p in picks}
    said: list[tuple[Edge, int, int]] = []

    def ordered(table: dict[int, LevelPick]) -> tuple[LevelPick, ...]:
        return tuple(table[c] for c in sorted(table))

    for check in cliffs:
        if not check.edge.switches:
            continue
        left, right = out[check.left.concurrency], out[check.right.concurrency]
        levels = (left.concurrency, right.concurrency)

        def total(config: object, levels: tuple[int, int] = levels) -> float:
            return sum(score.get((c, identity(config)), 0.0) for c in levels)  # type: ignore[arg-type]

        ways = sorted([(left, right), (right, left)], key=lambda wl: -total(wl[0].config))
        tried = []
        for winner, loser in ways:
            table = {**out, loser.concurrency: LevelPick(loser.concurrency, winner.config)}
            tried.append((winner, loser, table))
        winner, loser, table = next((w for w in tried if not recreates(ordered(w[2]))), tried[0])
        out = table
        said.append((check.edge, loser.concurrency, winner.concurrency))
    return ordered(out), tuple(said)


def edge_trial(config: ServerConfig, rungs: tuple[int, ...]) -> Remeasure:
    """What a trial measuring ``config`` at ``rungs`` records."""
    del config
    return Remeasure(EDGE, ladder=rungs)
