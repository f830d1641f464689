"""Every strategy's real code replayed against the measured llama.cpp grid.

Why a replay: on a real engine every trial costs a load and a ladder, and the best point is
unknown until the whole space has been measured. Measured once (benchmarks/realsearch/grid.py,
several passes), the grid answers any strategy's proposals offline: each proposal of the
product's own code (``core.search.strategy.next_trial``, rebuilt from the records each time
as in a session) is answered by one of its point's measured runs, drawn by the seed — so the
search meets the real noise — and, under ``[sweep] prune``, by the run's lead level alone
when ``core.search.prune.verdict`` says it lost there (recorded ``pruned``, costing only
that level's seconds), exactly as ``core.machine.handlers.measuring`` would. With
``repeats = k`` a proposal gets k distinct runs, combined as the trial record combines
repeated ladders (``core.machine.results.combine_runs``).

The yardstick: a point's *true* figure is the mean of its runs; a strategy has reached the
grid's best when it has recorded (not pruned) a point whose true figure is within 2 % of the
best point's. Printed per strategy, with and without pruning, median over the seeds: trials
and benchmark seconds until then, how many seeds reached it, the trials and seconds the
strategy spent before it stopped, and how far its own final pick is from the best.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import tomli_w
from benchmarks.realsearch import grid

from specconsole.core.machine.results import combine_runs, mean_accept_length
from specconsole.core.measure.noise import NoiseBand, Sample, pool
from specconsole.core.measure.trials import LevelSummary, TrialRecord, TrialStatus
from specconsole.core.plans.objective import best
from specconsole.core.plans.parse import parse_plan
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.search import prune
from specconsole.core.search.strategy import next_trial
from specconsole.session.records import record_from_dict
from specconsole.session.reports.predictions_report import prediction_document

TARGET = 0.98
"""Within 2 % of the grid's best."""
STRATEGIES = ("grid", "boundary", "optimize", "staged")
OBJECTIVES = ("single_request", "peak_aggregate")
Key = tuple[str, int, float]
"""(draft, n_max, p_min): a point of the searched space."""


@dataclass(frozen=True)
class Run:
    """One measured trial of a point: its record and its benchmark seconds per level."""

    record: TrialRecord
    seconds: dict[int, float]


@dataclass
class Grid:
    points: dict[Key, list[Run]]
    references: dict[str, list[Run]]
    conditions: dict[str, Any]

    @property
    def drafts(self) -> tuple[str, ...]:
        """The drafts whose every point is measured: the space a replay searches (all of
        them once the measurement is complete)."""
        return tuple(
            d
            for d in grid.DRAFTS
            if all((d, n, p) in self.points for n in grid.N_MAX for p in grid.P_MIN)
        )


def _float(value: Any) -> float:
    return 0.0 if value is None else float(value)


def level_seconds(record: TrialRecord) -> dict[int, float]:
    """Benchmark seconds per level: each level's share of the BENCHMARKING phase (warm-up
    included), split in proportion to the levels' measured durations."""
    total = sum(
        (s.ended_at or s.started_at) - s.started_at
        for s in record.phases
        if s.phase.value == "benchmarking"
    )
    durations = {lv.concurrency: _float(lv.duration_s) for lv in record.levels}
    measured = sum(durations.values())
    if measured <= 0:
        return {c: total / max(1, len(durations)) for c in durations}
    return {c: total * d / measured for c, d in durations.items()}


def load(path: Path | None = None) -> Grid:
    path = path or grid.DATA
    points: dict[Key, list[Run]] = defaultdict(list)
    refs: dict[str, list[Run]] = defaultdict(list)
    conditions: dict[str, Any] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        record = record_from_dict(row["record"])
        run = Run(record, level_seconds(record))
        conditions = row["conditions"]
        p = row["point"]
        if p["spec_type"] == "draft-simple":
            key = (p["draft"], int(p["spec_draft_n_max"]), float(p["spec_draft_p_min"]))
            points[key].append(run)
        else:
            refs[p["spec_type"]].append(run)
    return Grid(dict(points), dict(refs), conditions)


# ------------------------------------------------------------------------------ the space


def plan_document(
    build: Any,
    strategy: str,
    objective: str,
    seed: int,
    prune_on: bool,
    space: tuple[str, ...] = grid.DRAFTS,
) -> dict:
    """The searched space as a plan: the base is llama-server's default point."""
    drafts = [str(grid.draft_path(build, d)) for d in space]
    base = grid.slice_plan(build, grid.Slice(1, grid.DEFAULT_POINT["draft"], 0.0), Path("run"))
    server = base["server"] | {
        "spec_draft_n_max": grid.DEFAULT_POINT["spec_draft_n_max"],
        "spec_draft_p_min": grid.DEFAULT_POINT["spec_draft_p_min"],
        "speculative_draft_model_path": str(
            grid.draft_path(build, str(grid.DEFAULT_POINT["draft"]))
        ),
    }
    return base | {
        "name": f"real-search {strategy}",
        "server": server,
        "sweep": base["sweep"]
        | {
            "strategy": strategy,
            "objective": objective,
            "seed": seed,
            "prune": prune_on,
            "max_trials": grid_size(space),
            **({"axis": "spec_draft_n_max"} if strategy == "boundary" else {}),
            "axes": {
                "speculative_draft_model_path": drafts,
                "spec_draft_n_max": list(grid.N_MAX),
                "spec_draft_p_min": list(grid.P_MIN),
            },
        },
    }


def grid_size(space: tuple[str, ...] = grid.DRAFTS) -> int:
    return len(space) * len(grid.N_MAX) * len(grid.P_MIN)


def key_of(build: Any, config: Any) -> Key:
    names = {str(grid.draft_path(build, d)): d for d in grid.DRAFTS}
    return (
        names[str(config.speculative_draft_model_path)],
        int(config.spec_draft_n_max),
        float(config.spec_draft_p_min),
    )


# ------------------------------------------------------------------------------ the truth


def true_scores(plan: SweepPlan, points: dict[Key, list[Run]]) -> dict[Key, float]:
    """Each point's mean objective over its runs (``ok`` runs; none: absent)."""
    out: dict[Key, float] = {}
    for key, runs in points.items():
        got = [
            score
            for r in runs
            if not _crashed(r) and (score := plan.goal.objective.score(r.record)) is not None
        ]
        if got:
            out[key] = statistics.fmean(got)
    return out


def noise_band(plan: SweepPlan, points: dict[Key, list[Run]]) -> NoiseBand | None:
    """The grid's measured noise for the objective: each point's runs (passes at different
    times) pooled by ``core.measure.noise`` — the band within which two single runs of one
    configuration fall 95 % of the time (None: no point measured twice)."""
    samples = [
        Sample.of(got)
        for runs in points.values()
        if len(
            got := [
                v
                for r in runs
                if not _crashed(r) and (v := plan.goal.objective.score(r.record)) is not None
            ]
        )
        >= 2
    ]
    return pool(samples)


def noise_line(band: NoiseBand | None) -> str:
    if band is None:
        return "noise: no point measured twice (the band target is not measured)"
    return (
        f"noise (runs of one point, {band.source}, {band.dof} dof): σ {band.rel_std:.1%} of "
        f"the figure; two single runs tie within ±{band.pct:.1f} % — the band target"
    )


def predictions_line(g: Grid) -> str:
    """The product's predictions against what ran, over every measured trial (each trial
    recorded its forecast before its deploy: ``core.measure.forecast``)."""
    records = [r.record for runs in (*g.points.values(), *g.references.values()) for r in runs]
    document = prediction_document(records)
    if document is None:
        return "predictions: none recorded"
    rows = document["trials"]
    judged = [r for r in rows if r["load_right"] is not None]
    right = sum(1 for r in judged if r["load_right"])
    mape = document["mape_pct"]
    return (
        f"predictions against what ran ({len(rows)} of {len(records)} trials forecast): "
        f"loads {right} of {len(judged)} right; mean absolute error "
        f"{'—' if mape is None else f'{mape:.1f} %'} over the predicted figures "
        f"({sum(r['capacity_predicted'] is not None for r in rows)} capacities, "
        f"{sum(len(r['level_errors']) for r in rows)} throughputs); "
        f"{sum(len(r['misses']) for r in rows)} beyond their band"
    )


def _crashed(run: Run) -> bool:
    return run.record.status is not TrialStatus.OK


# ------------------------------------------------------------------------------ the replay


@dataclass
class Outcome:
    trials_to: int | None
    seconds_to: float | None
    band_trials_to: int | None
    """Trials until a recorded point inside the noise band of the best (None: never, or no
    band measured)."""
    band_seconds_to: float | None
    trials: int
    seconds: float
    pruned: int
    final: Key | None
    keys: list[Key]


def answer(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    config: Any,
    runs: list[Run],
    rng: random.Random,
) -> tuple[TrialRecord, float]:
    """The record the real loop would have made of this proposal, and its benchmark
    seconds: ``repeats`` distinct runs drawn by the seed, pruned at the lead level when
    the first run lost there beyond the noise."""
    k = min(plan.bench.repeats, len(runs))
    chosen = rng.sample(runs, k)
    first = chosen[0]
    index = len(trials)
    if first.record.status is not TrialStatus.OK:
        return replace(first.record, index=index, config=config, normalized=None), sum(
            first.seconds.values()
        )
    lead = prune.lead_level(plan, trials) if plan.pruning else None
    if lead is not None:
        level = next((lv for lv in first.record.levels if lv.concurrency == lead), None)
        info = None if level is None else prune.verdict(plan, trials, level)
        if info is not None and level is not None:
            record = replace(
                first.record,
                index=index,
                config=config,
                normalized=None,
                status=TrialStatus.PRUNED,
                levels=(level,),
                accept_length=level.accept_length,
                prune=info,
            )
            return record, first.seconds.get(lead, 0.0)
    levels = _combined([r.record.levels for r in chosen])
    record = replace(
        first.record,
        index=index,
        config=config,
        normalized=None,
        levels=levels,
        accept_length=mean_accept_length(levels),
    )
    return record, sum(sum(r.seconds.values()) for r in chosen)


def _combined(runs: Sequence[Sequence[LevelSummary]]) -> tuple[LevelSummary, ...]:
    if len(runs) == 1:
        return tuple(runs[0])
    by_c: dict[int, list[LevelSummary]] = defaultdict(list)
    for levels in runs:
        for lv in levels:
            by_c[lv.concurrency].append(lv)
    return tuple(combine_runs(by_c[c]) for c in sorted(by_c))


def replay(
    build: Any,
    plan: SweepPlan,
    points: dict[Key, list[Run]],
    truth: dict[Key, float],
    seed: int,
    band: NoiseBand | None = None,
) -> Outcome:
    target = TARGET * max(truth.values())
    inside = None if band is None else (1 - band.pct / 100) * max(truth.values())
    in_band: tuple[int, float] | None = None
    rng = random.Random(seed)
    trials: list[TrialRecord] = []
    keys: list[Key] = []
    spent = 0.0
    reached: tuple[int, float] | None = None
    cap = plan.max_trials or grid_size()
    while len(trials) < cap:
        proposal = next_trial(plan, trials)
        if proposal is None:
            break
        key = key_of(build, proposal.config)
        record, seconds = answer(plan, trials, proposal.config, points[key], rng)
        trials.append(record)
        keys.append(key)
        spent += seconds
        if (
            reached is None
            and record.status is TrialStatus.OK
            and truth.get(key, float("-inf")) >= target
        ):
            reached = (len(trials), spent)
        if (
            in_band is None
            and inside is not None
            and record.status is TrialStatus.OK
            and truth.get(key, float("-inf")) >= inside
        ):
            in_band = (len(trials), spent)
    top = best(trials, plan.goal)
    return Outcome(
        trials_to=None if reached is None else reached[0],
        seconds_to=None if reached is None else reached[1],
        band_trials_to=None if in_band is None else in_band[0],
        band_seconds_to=None if in_band is None else in_band[1],
        trials=len(trials),
        seconds=spent,
        pruned=sum(t.status is TrialStatus.PRUNED for t in trials),
        final=None if top is None else key_of(build, top.config),
        keys=keys,
    )


def make_plan(
    build: Any,
    strategy: str,
    objective: str,
    seed: int,
    prune_on: bool,
    space: tuple[str, ...] = grid.DRAFTS,
) -> SweepPlan:
    return parse_plan(plan_document(build, strategy, objective, seed, prune_on, space))


# ------------------------------------------------------------------------------ printing


def _median(values: Sequence[float | None], cap: float) -> str:
    got = [cap if v is None else v for v in values]
    m = statistics.median(got)
    return f">{cap:g}" if m >= cap and any(v is None for v in values) else f"{m:.0f}"


def label(key: Key | None) -> str:
    if key is None:
        return "-"
    draft, n_max, p_min = key
    return f"{draft} n_max={n_max} p_min={p_min:g}"


def strategy_table(
    build: Any, g: Grid, objective: str, seeds: int, space: tuple[str, ...]
) -> tuple[list[str], dict[str, Any]]:
    rows = [
        "| strategy | prune | trials to 2 % | bench s to 2 % | reached | trials to the band | "
        "bench s to the band | trials run | bench s run | pruned | final pick's gap |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    summary: dict[str, Any] = {}
    points = {k: runs for k, runs in g.points.items() if k[0] in space}
    probe = make_plan(build, "grid", objective, 0, False, space)
    truth = true_scores(probe, points)
    band = noise_band(probe, points)
    top = max(truth.values())
    grid_seconds = statistics.fmean(
        sum(sum(r.seconds.values()) for r in runs) / len(runs) for runs in points.values()
    ) * len(points)
    for strategy in STRATEGIES:
        for prune_on in (False, True):
            outs = [
                replay(
                    build,
                    make_plan(build, strategy, objective, s, prune_on, space),
                    points,
                    truth,
                    s,
                    band,
                )
                for s in range(seeds)
            ]
            gaps = [
                (1 - truth[o.final] / top) * 100 if o.final in truth else float("nan") for o in outs
            ]
            n = grid_size(space)
            rows.append(
                f"| {strategy} | {'on' if prune_on else 'off'} | "
                f"{_median([o.trials_to for o in outs], n + 1)} | "
                f"{_median([o.seconds_to for o in outs], grid_seconds)} | "
                f"{sum(o.trials_to is not None for o in outs)}/{seeds} | "
                + (
                    f"{_median([o.band_trials_to for o in outs], n + 1)} | "
                    f"{_median([o.band_seconds_to for o in outs], grid_seconds)} | "
                    if band is not None
                    else "— | — | "
                )
                + f"{statistics.median(o.trials for o in outs):.0f} | "
                f"{statistics.median(o.seconds for o in outs):.0f} | "
                f"{statistics.median(o.pruned for o in outs):.0f} | "
                f"{statistics.median(gaps):.1f} % |"
            )
            summary[f"{strategy}/{prune_on}"] = outs
    return rows, {
        "truth": truth,
        "outcomes": summary,
        "grid_seconds": grid_seconds,
        "band": band,
    }


def main(seeds: int = 5, partial: bool = False) -> int:
    from tests.fixtures.llamacpp import find_build

    build = find_build()
    g = load()
    print(f"measured points: {len(g.points)}, runs: {sum(len(r) for r in g.points.values())}")
    print(predictions_line(g))
    space = g.drafts
    if space != grid.DRAFTS:
        print(
            f"the grid is incomplete ({len(g.points)} of {grid_size()} points; complete drafts: "
            f"{', '.join(space) or 'none'}): measure the rest (benchmarks/real_search.py "
            "measure)" + ("; replaying the complete drafts' sub-grid" if partial else "")
        )
        if not partial or not space:
            return 2
    for objective in OBJECTIVES:
        rows, facts = strategy_table(build, g, objective, seeds, space)
        truth = facts["truth"]
        ranked = sorted(truth, key=truth.__getitem__, reverse=True)
        default = (
            str(grid.DEFAULT_POINT["draft"]),
            int(grid.DEFAULT_POINT["spec_draft_n_max"]),
            float(grid.DEFAULT_POINT["spec_draft_p_min"]),
        )
        print(
            f"\n## objective {objective}: best {label(ranked[0])} {truth[ranked[0]]:.2f}; "
            f"default {label(default)} {truth.get(default, float('nan')):.2f}; "
            f"within 2 %: {sum(v >= TARGET * truth[ranked[0]] for v in truth.values())} points; "
            f"the whole grid: {grid_size(space)} trials, {facts['grid_seconds']:.0f} bench s\n"
        )
        probe = make_plan(build, "grid", objective, 0, False, space)
        print(noise_line(facts["band"]))
        refs = true_scores(probe, {(name, 0, 0.0): runs for name, runs in g.references.items()})
        print(
            "references (outside the searched space): "
            + ", ".join(f"{name} {value:.2f}" for (name, _n, _p), value in refs.items())
        )
        print()
        print("\n".join(rows))
        outs = facts["outcomes"]["optimize/True"]
        got = [o.trials_to for o in outs]
        median = statistics.median(grid_size(space) + 1 if t is None else t for t in got)
        share = median / grid_size(space)
        print(
            f"\noptimize with pruning: within 2 % in {median:g} trials (median of {seeds} seeds: "
            f"{', '.join('—' if t is None else str(t) for t in got)}) = {share:.0%} of the "
            f"grid's {grid_size(space)} trials (target ≤ 25 %: "
            f"{'met' if share <= 0.25 else 'not met'})"
        )
        if facts["band"] is not None:
            got = [o.band_trials_to for o in outs]
            median = statistics.median(grid_size(space) + 1 if t is None else t for t in got)
            print(
                f"optimize with pruning: inside the noise band (±{facts['band'].pct:.1f} %) in "
                f"{median:g} trials (seeds: {', '.join('—' if t is None else str(t) for t in got)})"
                f" = {median / grid_size(space):.0%} of the grid's trials"
            )
    return 0


LIVE = grid.DATA.with_name("llamacpp-live-optimize.jsonl")
"""The live run's trial records, kept so the comparison can be printed again offline."""
LIVE_TRIALS = 15
"""The live run's budget: a quarter of the grid, the target's own bound."""
LIVE_MINUTES = 8
"""And its wall-clock bound (the sweep's own ``max_wall_minutes``): one chunk of the lock."""


def live(build: Any, seed: int, again: bool) -> int:
    """One live ``optimize`` run with pruning on the real server (kept in ``LIVE``; run again
    only with ``again``), next to the replay of the same plan and seed."""
    g = load()
    objective = OBJECTIVES[0]
    document = plan_document(build, "optimize", objective, seed, True)
    document["sweep"] |= {"max_trials": LIVE_TRIALS, "max_wall_minutes": LIVE_MINUTES}
    if again or not LIVE.exists():
        with tempfile.TemporaryDirectory(prefix="real-search-live-") as tmp:
            folder = Path(tmp)
            document["service"]["run_dir"] = str(folder / "run")
            (folder / "plan.toml").write_text(tomli_w.dumps(document))
            cmd = [sys.executable, "-m", "specconsole", "sweep", str(folder / "plan.toml")]
            env = {**os.environ, "PYTHONPATH": str(grid.ROOT / "src")}
            done = subprocess.run(
                [*cmd, "--headless", "--session", str(folder / "s")],
                capture_output=True,
                text=True,
                timeout=(LIVE_MINUTES + 3) * 60,
                env=env,
                check=False,
            )
            print(done.stdout[-1500:])
            (session,) = list((folder / "s").iterdir())
            LIVE.write_text((session / "trials.jsonl").read_text())
    trials = [record_from_dict(json.loads(line)) for line in LIVE.read_text().splitlines()]
    if len(g.points) < grid_size():
        print(f"kept {len(trials)} live trials; the grid has {len(g.points)} of {grid_size()}")
        return 0
    plan = parse_plan(document)
    truth = true_scores(plan, g.points)
    target = TARGET * max(truth.values())
    reached = next(
        (
            i
            for i, t in enumerate(trials, 1)
            if t.status is TrialStatus.OK and truth.get(key_of(build, t.config), 0) >= target
        ),
        None,
    )
    top = best(trials, plan.goal)
    offline = replay(build, plan, g.points, truth, seed)
    ranked = sorted(truth, key=truth.__getitem__, reverse=True)
    print(f"objective {objective}; the grid's best: {label(ranked[0])} {truth[ranked[0]]:.2f}")
    print(
        f"live:   {len(trials)} trials ({sum(t.status is TrialStatus.PRUNED for t in trials)} "
        f"pruned), within 2 % at trial {reached}, final pick "
        f"{label(None if top is None else key_of(build, top.config))}"
    )
    print(
        f"replay: {offline.trials} trials ({offline.pruned} pruned), within 2 % at trial "
        f"{offline.trials_to}, final pick {label(offline.final)}"
    )
    print("live proposals:   " + "; ".join(_short(key_of(build, t.config)) for t in trials))
    print("replay proposals: " + "; ".join(_short(k) for k in offline.keys))
    return 0


def _short(key: Key) -> str:
    return f"{key[0]}/{key[1]}/{key[2]:g}"
