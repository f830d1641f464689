"""How many trials ``strategy = "optimize"`` needs, against random search and the optimum.

For each simulator profile (the seed box and the second profile in ``examples/sim/``) the
space is steps 1-10 x topk 1/2/4/8 x draft tokens (the valid ones for each tree) x
``mem_fraction_static`` 0.80-0.92 x ``cuda_graph_max_bs`` 32/64/128. The exhaustive optimum
of the objective comes from the pure model (``sim.physics.model.predict`` over the ladder, no
servers). Each search then runs offline: a proposal from the real strategy code
(``core.search.strategy.next_trial``, rebuilt from the records each time as in a session), its
outcome from the model (a load failure becomes a crashed record; capacities are recorded as
the server logs them), until a trial lands within 2% of the optimum or the cap is reached.

Prints, per profile and objective, over SEEDS seeds: the median (and quartiles) of trials to
within 2% (crashed loads included, capped runs shown with ``>``), the median crashed loads
spent until then, the same for ``start_at_base = false`` (the search's first point random,
not the plan's base: the benchmark's base, steps 3 / topk 1 / draft 4 at the reference
launch, is itself the seed box's peak-aggregate optimum, so that row's default figure
measures the start, the random-start one the search), and random search's figures
(uniform over the valid configurations, without replacement; over RANDOM_SEEDS seeds, 1000
by default, since it costs nothing).
Targets: optimize within 2% in <= 20 trials for the median seed, <= 3 crashes, >= 3x fewer
trials than random.

``--real-loop N`` then runs N seeds of the real loop: headless ``specconsole sweep`` with
``strategy = "optimize"`` against simulator processes on this machine (the seed box, the
same space, a short workload so a trial costs seconds; each run bounded by ``--real-trials``
and ``--real-timeout``), and prints the trials until a recorded configuration is within 2%
of the model's optimum for that workload, next to the offline loop on the same plan.

``--pruning N`` runs N seeds of the real loop twice, with and without ``[sweep] prune``, on
the seed's ladder with a short steady window, and prints trials and benchmark seconds to
reach 2% of the optimum, the pruned trials and the final best of each
(``benchmarks/pruning_loop.py``).

Run: ``.venv/bin/python benchmarks/search_efficiency.py [--seeds 20] [--cap 80]
[--profile llama] [--real-loop 3 [--real-only]] [--pruning 2]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.fixtures.plans import sim_plan_text  # noqa: E402

from specconsole.core.config import validation  # noqa: E402
from specconsole.core.config.model import ServerConfig  # noqa: E402
from specconsole.core.machine.state import LevelSummary, TrialRecord, TrialStatus  # noqa: E402
from specconsole.core.plans.parse import loads_plan  # noqa: E402
from specconsole.core.plans.plan import SweepPlan  # noqa: E402
from specconsole.core.search.contenders import identity  # noqa: E402
from specconsole.core.search.optimize import project  # noqa: E402
from specconsole.core.search.strategy import next_trial  # noqa: E402
from specconsole.session.store import Session  # noqa: E402
from specconsole.sim.forecast import predict  # noqa: E402
from specconsole.sim.profile import Profile, default_profile_path, load_profile  # noqa: E402

PROFILES = {
    "seed box (Qwen3.5-122B, 4x48GB)": default_profile_path(),
    "llama3.1-8b (1xH100)": ROOT / "examples/sim/llama3.1-8b-eagle-1xh100.toml",
}
LADDER = (1, 4, 16, 32, 64)
INPUT_LEN, OUTPUT_LEN = 1024, 512
DRAFTS = [2, 4, 6, 8, 12, 16, 24, 32, 48, 64]
OBJECTIVES = ("peak_aggregate", "single_request")


AXES = f"""
[sweep.axes]
speculative_num_steps = {{ min = 1, max = 10 }}
speculative_eagle_topk = [1, 2, 4, 8]
speculative_num_draft_tokens = {DRAFTS}
mem_fraction_static = {{ min = 0.80, max = 0.92, step = 0.02 }}
cuda_graph_max_bs = [32, 64, 128]
"""
REAL_LADDER = (1, 16)
REAL_LENGTHS = (128, 32)
"""The real loop's workload: short requests, so a trial costs seconds, not minutes."""


def plan_for(profile: Profile, objective: str, seed: int) -> SweepPlan:
    ref = profile.reference_launch
    text = f"""
[server]
model_path = "{profile.model.name}"
speculative_algorithm = "{ref.algorithm}"
speculative_draft_model_path = "{profile.model.draft_name}"
speculative_num_steps = 3
speculative_eagle_topk = 1
speculative_num_draft_tokens = 4
tp_size = {ref.tp_size}
mem_fraction_static = {ref.mem_fraction_static}
cuda_graph_max_bs = {ref.cuda_graph_max_bs}
max_running_requests = {ref.max_running_requests}

[sweep]
strategy = "optimize"
objective = "{objective}"
seed = {seed}
patience = 1000
{AXES}
[bench]
ladder = {list(LADDER)}
input_len = {INPUT_LEN}
output_len = {OUTPUT_LEN}
"""
    return loads_plan(text)


def valid_space(plan: SweepPlan) -> list[ServerConfig]:
    seen: dict[ServerConfig, None] = {}
    for config in plan.grid():
        config = project(plan, config)
        if config not in seen and not validation.errors(validation.validate(config)):
            seen[config] = None
    return list(seen)


@dataclass
class Outcome:
    status: TrialStatus
    levels: tuple[LevelSummary, ...]
    capacity: int | None


def outcome(
    config: ServerConfig,
    profile: Profile,
    ladder: tuple[int, ...] = LADDER,
    lengths: tuple[int, int] = (INPUT_LEN, OUTPUT_LEN),
) -> Outcome:
    levels: list[LevelSummary] = []
    capacity: int | None = None
    for c in ladder:
        p = predict(config, c, lengths[0], lengths[1], profile)
        if p.load_failure is not None or not p.ok:
            cap = p.max_total_num_tokens if p.max_total_num_tokens > 0 else None
            return Outcome(TrialStatus.CRASHED, (), cap)
        capacity = p.max_total_num_tokens
        levels.append(
            LevelSummary(
                concurrency=c,
                output_tok_s=p.aggregate_tok_s,
                per_request_tok_s=p.per_request_tok_s,
                completed=c,
                ttft_p50_ms=p.ttft_s * 1000.0,
            )
        )
    return Outcome(TrialStatus.OK, tuple(levels), capacity)


def record(index: int, config: ServerConfig, out: Outcome) -> TrialRecord:
    return TrialRecord(
        index=index,
        config=config,
        normalized=config,
        status=out.status,
        levels=out.levels,
        capacity=out.capacity,
    )


@dataclass
class Run:
    trials: int
    """Loads until within 2% (cap + 1 when never)."""
    crashes: int
    reached: bool


def run_optimize(plan: SweepPlan, profile: Profile, target: float, cap: int, cache: dict) -> Run:
    trials: list[TrialRecord] = []
    crashes = 0
    while len(trials) < cap:
        proposal = next_trial(plan, trials)
        if proposal is None:
            break
        out = cache.get(proposal.config) or outcome(proposal.config, profile)
        cache[proposal.config] = out
        t = record(len(trials), proposal.config, out)
        trials.append(t)
        crashes += out.status is TrialStatus.CRASHED
        score = plan.goal.objective.score(t)
        if score is not None and score >= target:
            return Run(len(trials), crashes, True)
    return Run(cap + 1, crashes, False)


def run_random(
    plan: SweepPlan, space: list[ServerConfig], scores: dict, target: float, seed: int, cap: int
) -> Run:
    order = list(space)
    random.Random(seed).shuffle(order)
    crashes = 0
    for i, config in enumerate(order[:cap], start=1):
        score = scores[config]
        if score is None:
            crashes += 1
        elif score >= target:
            return Run(i, crashes, True)
    return Run(cap + 1, crashes, False)


def real_sweep_text(
    run_dir: Path,
    objective: str,
    seed: int,
    max_trials: int,
    *,
    sweep_extra: str = "",
    bench: str | None = None,
    name: str = "",
) -> str:
    """The plan of one real-loop search: the seed box simulated by processes on this machine,
    the same space, the short workload (or ``bench``); ``sweep_extra`` adds ``[sweep]`` keys."""
    sweep = f"""[sweep]
strategy = "optimize"
objective = "{objective}"
on_crash = "auto"
seed = {seed}
max_trials = {max_trials}
patience = 1000
load_timeout = 30
{sweep_extra}{AXES}"""
    if bench is None:
        bench = f"""[bench]
ladder = {list(REAL_LADDER)}
input_len = {REAL_LENGTHS[0]}
output_len = {REAL_LENGTHS[1]}
requests_per_level = 4
warmup_requests = 0
"""
    extra = ["--sim-load-seconds", "0.2"]
    return sim_plan_text(
        run_dir, extra_args=extra, sweep=sweep, bench=bench, name=name or f"real-{seed}"
    )


def first_within(trials: list[TrialRecord], scores: dict, target: float) -> Run:
    """Loads until a trial's configuration is within 2% by the model (cap + 1 when none)."""
    crashes = 0
    for i, t in enumerate(trials, start=1):
        crashes += t.status is TrialStatus.CRASHED
        score = scores.get(project_identity(t.config))
        if t.status is TrialStatus.OK and score is not None and score >= target:
            return Run(i, crashes, True)
    return Run(len(trials) + 1, crashes, False)


def project_identity(config: ServerConfig) -> ServerConfig:
    """Where a recorded configuration ran, dropped: the key of the model's scores."""
    return replace(identity(config), extra_args=())


def real_loop(seeds: int, objective: str, max_trials: int, timeout_s: float) -> None:
    """``seeds`` headless ``optimize`` sweeps against simulator processes (each bounded by
    ``max_trials`` and ``timeout_s``), next to the offline loop on the same plan."""
    profile = load_profile(default_profile_path())
    with tempfile.TemporaryDirectory(prefix="search-eff-") as tmp:
        plan = loads_plan(real_sweep_text(Path(tmp) / "run", objective, 0, max_trials))
        space = valid_space(plan)
        cache = {c: outcome(c, profile, REAL_LADDER, REAL_LENGTHS) for c in space}
        scores = {
            project_identity(c): plan.goal.objective.score(record(0, c, o))
            if o.status is TrialStatus.OK
            else None
            for c, o in cache.items()
        }
        top = max(v for v in scores.values() if v is not None)
        target = 0.98 * top
        real: list[Run] = []
        offline: list[Run] = []
        for seed in range(seeds):
            run_dir, sessions = Path(tmp) / f"run-{seed}", Path(tmp) / f"sessions-{seed}"
            text = real_sweep_text(run_dir, objective, seed, max_trials)
            plan_path = Path(tmp) / f"plan-{seed}.toml"
            plan_path.write_text(text)
            cmd = [sys.executable, "-m", "specconsole", "sweep", str(plan_path), "--headless"]
            t0 = time.monotonic()
            try:
                subprocess.run(
                    [*cmd, "--session", str(sessions)],
                    capture_output=True,
                    timeout=timeout_s,
                    env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                    check=False,
                )
            except subprocess.TimeoutExpired:
                print(f"<!-- seed {seed}: stopped at {timeout_s:g} s -->", file=sys.stderr)
            (session_dir,) = list(sessions.iterdir())
            trials = Session.open(session_dir).load_trials()
            real.append(first_within(list(trials), scores, target))
            off_plan = loads_plan(text)
            offline.append(run_optimize(off_plan, profile, target, max_trials, cache))
            print(
                f"<!-- real seed {seed}: {len(trials)} trials in {time.monotonic() - t0:.0f} s,"
                f" within 2% at {real[-1].trials} -->",
                file=sys.stderr,
            )
        print(
            f"\nreal loop (seed box, {objective}, ladder {list(REAL_LADDER)}, "
            f"{REAL_LENGTHS[0]}/{REAL_LENGTHS[1]} tokens, opt {top:,.0f}, {seeds} seeds, "
            f"max {max_trials} trials):"
        )
        print("| loop | trials to 2% (median, IQR) | crashes | reached |")
        print("|---|---|---|---|")
        for name, runs in (("real (simulator processes)", real), ("offline (model)", offline)):
            med, crashes = fmt(runs, max_trials)
            print(f"| {name} | {med} | {crashes} | {sum(r.reached for r in runs)}/{seeds} |")


def model_scores(objective: str, ladder: tuple[int, ...], lengths: tuple[int, int]):  # type: ignore[no-untyped-def]
    """(scores by configuration, the optimum, the key of a recorded configuration) of the
    seed box's space for a workload, from the simulator's model (the pruning loop's yardstick)."""
    profile = load_profile(default_profile_path())
    with tempfile.TemporaryDirectory(prefix="search-eff-") as tmp:
        plan = loads_plan(real_sweep_text(Path(tmp) / "run", objective, 0, 1))
    scores = {}
    for c in valid_space(plan):
        o = outcome(c, profile, ladder, lengths)
        ok = o.status is TrialStatus.OK
        scores[project_identity(c)] = plan.goal.objective.score(record(0, c, o)) if ok else None
    return scores, max(v for v in scores.values() if v is not None), project_identity


def fmt(runs: list[Run], cap: int) -> tuple[str, str]:
    values = sorted(r.trials for r in runs)
    med = statistics.median(values)
    q1, q3 = values[len(values) // 4], values[(3 * len(values)) // 4]

    def show(v: float) -> str:
        return f">{cap}" if v > cap else f"{v:g}"

    crashes = statistics.median(r.crashes for r in runs)
    return f"{show(med)} ({show(q1)}-{show(q3)})", f"{crashes:g}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--cap", type=int, default=80, help="loads per optimize run at most")
    parser.add_argument("--random-cap", type=int, default=5000)
    parser.add_argument(
        "--random-seeds", type=int, default=1000, help="random search is cheap: more seeds"
    )
    parser.add_argument("--objective", choices=OBJECTIVES, action="append")
    parser.add_argument("--profile", default="", help="only profiles whose label contains this")
    parser.add_argument(
        "--real-loop",
        type=int,
        default=0,
        metavar="N",
        help="also run N headless optimize sweeps against simulator processes (seed box)",
    )
    parser.add_argument("--real-trials", type=int, default=20, help="max_trials per real run")
    parser.add_argument("--real-timeout", type=float, default=600.0, help="seconds per real run")
    parser.add_argument("--real-only", action="store_true", help="skip the offline table")
    parser.add_argument(
        "--pruning",
        type=int,
        default=0,
        metavar="N",
        help="also run N seeds of optimize with and without [sweep] prune (real loop)",
    )
    args = parser.parse_args()
    objectives = args.objective or list(OBJECTIVES)
    if args.pruning:
        from benchmarks.pruning_loop import pruning_loop

        pruning_loop(
            args.pruning,
            objectives,
            args.real_trials,
            args.real_timeout,
            plan_text=real_sweep_text,
            model_scores=model_scores,
        )
    if args.real_only or args.pruning:
        for objective in objectives if args.real_loop else ():
            real_loop(args.real_loop, objective, args.real_trials, args.real_timeout)
        return 0
    print(
        "| profile | objective | space (valid) | crash share | within 2% | optimize: trials "
        "to 2% (median, IQR) | crashes | optimize from a random start | crashes | "
        "random: trials | crashes | random / optimize | random / random-start optimize |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, path in PROFILES.items():
        if args.profile not in label:
            continue
        profile = load_profile(path)
        for objective in objectives:
            t0 = time.monotonic()
            plan0 = plan_for(profile, objective, 0)
            space = valid_space(plan0)
            cache: dict = {c: outcome(c, profile) for c in space}
            scores = {
                c: plan0.goal.objective.score(record(0, c, o))
                if o.status is TrialStatus.OK
                else None
                for c, o in cache.items()
            }
            best = max(v for v in scores.values() if v is not None)
            target = 0.98 * best
            near = sum(1 for v in scores.values() if v is not None and v >= target)
            crash_share = sum(1 for v in scores.values() if v is None) / len(space)
            opt = [
                run_optimize(plan_for(profile, objective, s), profile, target, args.cap, cache)
                for s in range(args.seeds)
            ]
            cold = [
                run_optimize(
                    replace(plan_for(profile, objective, s), start_at_base=False),
                    profile,
                    target,
                    args.cap,
                    cache,
                )
                for s in range(args.seeds)
            ]
            rnd = [
                run_random(plan0, space, scores, target, 10_000 + s, args.random_cap)
                for s in range(args.random_seeds)
            ]
            o_med, o_cr = fmt(opt, args.cap)
            c_med, c_cr = fmt(cold, args.cap)
            r_med, r_cr = fmt(rnd, args.random_cap)
            r_median = statistics.median(r.trials for r in rnd)
            ratio = r_median / statistics.median(r.trials for r in opt)
            cold_ratio = r_median / statistics.median(r.trials for r in cold)
            print(
                f"| {label} | {objective} (opt {best:,.0f}) | {len(space)} | "
                f"{crash_share:.0%} | {near} | {o_med} | {o_cr} | {c_med} | {c_cr} | {r_med} | "
                f"{r_cr} | {ratio:.1f}x | {cold_ratio:.1f}x |",
                flush=True,
            )
            print(f"<!-- {label} {objective}: {time.monotonic() - t0:.0f} s -->", file=sys.stderr)
    if args.real_loop:
        for objective in objectives:
            real_loop(args.real_loop, objective, args.real_trials, args.real_timeout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
