"""Incumbent pruning in the real loop: ``optimize`` with and without ``[sweep] prune``.

Imported by ``benchmarks/search_efficiency.py --pruning N``. For each seed and objective it
runs two headless ``specconsole sweep`` processes against simulator processes on this
machine (the seed box, the search space of search_efficiency.py, the seed's ladder
[1, 4, 16, 32, 64] measured over a short steady window so a trial costs seconds), identical
but for ``prune``, and prints per run:

* trials and **benchmark seconds** (the BENCHMARKING phase stamps of the records) until a
  recorded configuration is within 2 % of the optimum (the simulator model's, for this
  workload) — the loads spent are the same kind of cost with or without pruning, the
  benchmark seconds are what pruning saves;
* the benchmark seconds of the whole run, the pruned trials, and the final best (its
  configuration, its measured figure and the model's score of it): pruning must end on the
  same best.

The search starts at random points (``start_at_base = false``): the seed box's base is
itself near the peak-aggregate optimum, which would leave nothing to search (and nothing to
prune) before 2 % is reached.

Bounded: each run by ``max_trials`` and a timeout; the simulator processes are the
process backend's, stopped at the end of each sweep (``finally = "stop"``).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from specconsole.core.machine.state import Phase, TrialRecord, TrialStatus
from specconsole.core.plans.objective import best
from specconsole.core.plans.parse import loads_plan
from specconsole.session.store import Session

LADDER = (1, 4, 16, 32, 64)
LENGTHS = (128, 32)
WINDOW_S = 0.5


@dataclass
class PruneRun:
    trials_to_2pct: int | None
    bench_s_to_2pct: float | None
    bench_s: float
    trials: int
    pruned: int
    best_label: str
    best_score: float | None
    best_model: float | None
    """The model's score of the final best's configuration (the yardstick of 2 %)."""


def bench_seconds(record: TrialRecord) -> float:
    return sum(
        (s.ended_at or s.started_at) - s.started_at
        for s in record.phases
        if s.phase is Phase.BENCHMARKING
    )


BENCH = f"""[bench]
ladder = {list(LADDER)}
input_len = {LENGTHS[0]}
output_len = {LENGTHS[1]}
window = "steady"
window_s = {WINDOW_S}
warmup_requests = 0
"""
"""The seed's ladder over a short steady window: a trial costs seconds."""


def sweep_text(
    plan_text: Callable[..., str],
    run_dir: Path,
    objective: str,
    seed: int,
    max_trials: int,
    prune: bool,
) -> str:
    """search_efficiency.py's real-loop plan, from a random start, with or without pruning."""
    extra = f'start_at_base = false\nprune = {str(prune).lower()}\nfinally = "stop"\n'
    name = f"prune-{prune}-{seed}"
    return plan_text(
        run_dir, objective, seed, max_trials, sweep_extra=extra, bench=BENCH, name=name
    )


def run_once(
    folder: Path,
    text: str,
    scores: dict,
    target: float,
    key: Callable,
    timeout_s: float,
) -> PruneRun:
    plan_path = folder / "plan.toml"
    plan_path.write_text(text)
    sessions = folder / "sessions"
    cmd = [sys.executable, "-m", "specconsole", "sweep", str(plan_path), "--headless"]
    try:
        subprocess.run(
            [*cmd, "--session", str(sessions)],
            capture_output=True,
            timeout=timeout_s,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent / "src")},
            check=False,
        )
    except subprocess.TimeoutExpired:
        print(f"<!-- {folder.name}: stopped at {timeout_s:g} s -->", file=sys.stderr)
    (session_dir,) = list(sessions.iterdir())
    trials = Session.open(session_dir).load_trials()
    plan = loads_plan(text)
    reached: int | None = None
    spent = 0.0
    for i, t in enumerate(trials, start=1):
        spent += bench_seconds(t)
        score = scores.get(key(t.config))
        if t.status is TrialStatus.OK and score is not None and score >= target:
            reached = i
            break
    top = best(trials, plan.goal)
    return PruneRun(
        trials_to_2pct=reached,
        bench_s_to_2pct=spent if reached is not None else None,
        bench_s=sum(bench_seconds(t) for t in trials),
        trials=len(trials),
        pruned=sum(1 for t in trials if t.status is TrialStatus.PRUNED),
        best_label="-"
        if top is None
        else " ".join(f"{n.split('_')[-1]}={getattr(top.config, n)}" for n, _v in plan.axes),
        best_score=None if top is None else plan.goal.objective.score(top),
        best_model=None if top is None else scores.get(key(top.config)),
    )


def pruning_loop(
    seeds: int,
    objectives: Sequence[str],
    max_trials: int,
    timeout_s: float,
    *,
    plan_text: Callable[..., str],
    model_scores: Callable[[str, tuple[int, ...], tuple[int, int]], tuple[dict, float, Callable]],
) -> None:
    """Print the with/without pruning table (see the module docstring)."""
    print(
        f"\npruning (optimize, seed box, ladder {list(LADDER)}, {LENGTHS[0]}/{LENGTHS[1]} "
        f"tokens, steady window {WINDOW_S:g} s, {seeds} seeds, max {max_trials} trials):"
    )
    print(
        "| objective | seed | prune | trials to 2% | benchmark s to 2% | benchmark s (all) "
        "| trials | pruned | final best |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---|")
    for objective in objectives:
        scores, top, key = model_scores(objective, LADDER, LENGTHS)
        target = 0.98 * top
        saved: list[float] = []
        saved_all: list[float] = []
        same_best: list[bool] = []
        for seed in range(seeds):
            runs: dict[bool, PruneRun] = {}
            for prune in (False, True):
                t0 = time.monotonic()
                with tempfile.TemporaryDirectory(prefix="prune-") as tmp:
                    folder = Path(tmp)
                    text = sweep_text(
                        plan_text, folder / "run-{port}", objective, seed, max_trials, prune
                    )
                    runs[prune] = run_once(folder, text, scores, target, key, timeout_s)
                r = runs[prune]
                print(
                    f"| {objective} (opt {top:,.0f}) | {seed} | {'on' if prune else 'off'} | "
                    f"{r.trials_to_2pct or f'>{r.trials}'} | "
                    f"{'—' if r.bench_s_to_2pct is None else f'{r.bench_s_to_2pct:.1f}'} | "
                    f"{r.bench_s:.1f} | {r.trials} | {r.pruned} | {r.best_label} "
                    f"({abs(r.best_score or 0):,.1f}; model {abs(r.best_model or 0):,.1f}) |",
                    flush=True,
                )
                print(f"<!-- {time.monotonic() - t0:.0f} s -->", file=sys.stderr)
            off, on = runs[False], runs[True]
            if off.bench_s_to_2pct and on.bench_s_to_2pct:
                saved.append(1.0 - on.bench_s_to_2pct / off.bench_s_to_2pct)
            if off.bench_s:
                saved_all.append(1.0 - on.bench_s / off.bench_s)
            # the same best: as good by the model, within the 2 % that counts as the optimum
            # (two runs of a noisy benchmark rarely end on one configuration: a capacity
            # axis the objective cannot see, e.g. mem_fraction_static, differs between
            # equally good trials, and so do configurations within the measurement noise)
            same_best.append(
                off.best_model is not None
                and on.best_model is not None
                and abs(on.best_model - off.best_model) <= 0.02 * abs(off.best_model)
            )
        print(f"\n{objective}: {_summary(saved, saved_all, same_best)}")


def _summary(saved: list[float], saved_all: list[float], same_best: list[bool]) -> str:
    def pct(values: list[float]) -> str:
        if not values:
            return "n/a"
        shown = ", ".join(f"{v:.0%}" for v in values)
        return f"{statistics.median(values):.0%} (median; {shown})"

    return (
        f"pruning saved {pct(saved)} of the benchmark seconds to 2 %, {pct(saved_all)} of "
        f"all benchmark seconds; the same final best (the model's scores within 2 %) in "
        f"{sum(same_best)} of {len(same_best)} seeds"
    )
