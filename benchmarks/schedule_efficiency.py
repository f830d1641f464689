"""How many trials ``strategy = "per_level"`` spends, what it proves, and how the schedule fares
against the engine's own adaptive mode.

The question of issue 30: for every concurrency of the ladder, which speculation is best — and
then one configuration that runs each level's best. A full grid answers the first half by
measuring every configuration of the space; ``strategy = "per_level"`` measures only the draft
lengths (at the plan's base capacity settings), the baseline without speculation, and then
the schedule it derives, and proves it on the same ladder. Issue 43's proof follows: the
schedule and its statics measured just below and above each edge (a cliff merged away and
re-proven), then the engine's own adaptive mode as two contenders — (a) its defaults, (b) its
EMA over the schedule's lengths.

The space, on the seed box (the simulator's calibrated profile; SGLang, adaptive mode from
0.5.13) and on the same box through the vLLM face (0.34, ``--gpu-memory-utilization`` over
the grid): draft length 1-10 at topk 1 (SGLang's adaptive mode and vLLM draft chains) x the
memory fraction 0.80-0.92 x the largest captured CUDA-graph batch 32/64/128 (SGLang) or the
running-request cap 64/128 (vLLM), plus the baseline. Offline, as
``benchmarks/search_efficiency.py``: each proposal comes from the real strategy code
(``core.search.strategy.next_trial``, rebuilt from the records each time as in a session,
each re-measuring trial at its own concurrencies), each outcome from the pure model
(``sim.physics.model.predict``; a load failure is a crashed record). The per-level bests are
``core.search.levels``' (the reports' table).

Prints, per box: the trials each spends, by role; per level the grid's best configuration and
figure, the per_level strategy's best static, the schedule's own figure and how it compares
with the grid's best; whether the schedule reaches the grid's per-level bests (within 2 % at
every level); the edge proof's rounds; then per level the schedule, the engine's adaptive
contenders (a) and (b), the best static and no speculation with each one's capacity and
break-even concurrency, and the bar: the schedule at least 3 % above each contender at that
contender's weakest level and never more than 1 % below it at any level (or the engine's
own mode wins, and is recommended). Last, the vLLM box again with a cliff planted at its
schedule's 8|9 edge (``--sim-edge-cliff 8 --sim-edge-cliff-at 9``, vllm#49548): the edge
proof's finding and the adjusted schedule.

Run: ``.venv/bin/python benchmarks/schedule_efficiency.py [--ladder 1,4,16,32,64]``.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from specconsole.core.config.model import ServerConfig  # noqa: E402
from specconsole.core.engine.registry import engine_for  # noqa: E402
from specconsole.core.machine.state import LevelSummary, TrialRecord, TrialStatus  # noqa: E402
from specconsole.core.measure.trials import Remeasure  # noqa: E402
from specconsole.core.plans.parse import loads_plan  # noqa: E402
from specconsole.core.plans.plan import SweepPlan  # noqa: E402
from specconsole.core.search.levels import LevelTable, level_table, role_of  # noqa: E402
from specconsole.core.search.per_level import rounds  # noqa: E402
from specconsole.core.search.strategy import next_trial  # noqa: E402
from specconsole.present.figures.proof import edge_lines  # noqa: E402
from specconsole.present.labels import config_label  # noqa: E402
from specconsole.sim.forecast import predict  # noqa: E402

INPUT_LEN, OUTPUT_LEN = 1024, 512
SEED_PROFILE = ROOT / "examples" / "sim" / "qwen3.5-122b-a10b-eagle3.toml"
BOXES: dict[str, tuple[str, str]] = {
    "SGLang on the seed box": (
        """engine_version = "0.5.14"
launcher = "python3 -m specconsole.sim"
speculative_algorithm = "EAGLE3"
speculative_draft_model_path = "specconsole/Qwen3.5-122B-A10B-EAGLE3"
tp_size = 4
speculative_eagle_topk = 1
mem_fraction_static = 0.88
cuda_graph_max_bs = 64
max_running_requests = 64
""",
        """speculative_num_steps = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
mem_fraction_static = [0.80, 0.84, 0.88, 0.92]
cuda_graph_max_bs = [32, 64, 128]
""",
    ),
    "vLLM (its face) on the seed box": (
        f"""engine = "vllm"
engine_version = "0.34.0"
launcher = "python3 -m specconsole.sim vllm serve"
method = "eagle3"
speculative_model = "specconsole/Qwen3.5-122B-A10B-EAGLE3"
tensor_parallel_size = 4
gpu_memory_utilization = 0.92
max_num_seqs = 64
max_model_len = 32768
extra_args = ["--sim-profile", "{SEED_PROFILE}"]
""",
        """num_speculative_tokens = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
gpu_memory_utilization = [0.88, 0.90, 0.92, 0.95]
max_num_seqs = [64, 128]
""",
    ),
}


def plan_text(server: str, strategy: str, axes: str, ladder: tuple[int, ...]) -> str:
    return f"""
[server]
model_path = "Qwen/Qwen3.5-122B-A10B-FP8"
{server}
[sweep]
strategy = "{strategy}"
baseline = true
[sweep.axes]
{axes}
[bench]
ladder = {list(ladder)}
input_len = {INPUT_LEN}
output_len = {OUTPUT_LEN}
"""


def measured(
    index: int, config: ServerConfig, ladder: tuple[int, ...], remeasure: Remeasure | None = None
) -> TrialRecord:
    """The trial the model says this configuration makes (crashed when it does not load), at
    a re-measuring trial's own concurrencies."""
    levels_at = remeasure.ladder if remeasure is not None and remeasure.ladder else ladder
    preds = [predict(config, c, INPUT_LEN, OUTPUT_LEN) for c in levels_at]
    if not all(p.ok for p in preds):
        return TrialRecord(
            index=index, config=config, status=TrialStatus.CRASHED, remeasure=remeasure
        )
    levels = tuple(
        LevelSummary(p.concurrency, p.aggregate_tok_s, p.per_request_tok_s, 1) for p in preds
    )
    return TrialRecord(
        index=index,
        config=config,
        status=TrialStatus.OK,
        levels=levels,
        capacity=preds[0].max_total_num_tokens,
        remeasure=remeasure,
    )


def run(plan: SweepPlan, ladder: tuple[int, ...], cap: int = 500) -> list[TrialRecord]:
    """The strategy's trials, each proposed from the records so far, as a session runs them."""
    trials: list[TrialRecord] = []
    while len(trials) < cap:
        proposal = next_trial(plan, trials)
        if proposal is None:
            return trials
        trials.append(measured(len(trials), proposal.config, ladder, proposal.remeasure))
    raise RuntimeError(f"the strategy proposed more than {cap} trials")


def label(trial: TrialRecord, base: ServerConfig) -> str:
    return config_label(trial.effective, base)


def _spent(trials: list[TrialRecord]) -> str:
    roles = Counter(role_of(t).value for t in trials)
    order = ("static", "baseline", "schedule", "remeasure", "adaptive")
    said = {"remeasure": "edge trials"}
    return ", ".join(f"{roles[r]} {said.get(r, r)}" for r in order if roles[r])


def report(name: str, server: str, axes: str, ladder: tuple[int, ...]) -> bool:
    grid_plan = loads_plan(plan_text(server, "grid", axes, ladder))
    schedule_plan = loads_plan(plan_text(server, "per_level", axes.splitlines()[0], ladder))
    grid = run(grid_plan, ladder)
    schedule = run(schedule_plan, ladder)
    grid_table: LevelTable = level_table(grid, grid_plan.goal)
    table = level_table(schedule, schedule_plan.goal, schedule_plan.noise_pct)
    base = schedule_plan.base
    crashed = sum(t.status is TrialStatus.CRASHED for t in grid)
    print(f"\n{name}: ladder {', '.join(map(str, ladder))}; {INPUT_LEN} in / {OUTPUT_LEN} out")
    print(
        f"  full grid: {len(grid)} trials ({len(grid) - 1} configurations, {crashed} of which "
        "do not load, and the baseline)"
    )
    assert table.schedule is not None
    assert engine_for(base).scheduled(table.schedule.effective) is not None
    print(f'  strategy = "per_level": {len(schedule)} trials ({_spent(schedule)}); the schedule '
          f"#{table.schedule.index + 1} {label(table.schedule, base)}")  # fmt: skip
    print(f"  {'c':>4}  {'grid best':<34} {'tok/s':>8}  {'schedule sweep best':<20} {'tok/s':>8}"
          f"  {'schedule':>8}  {'vs grid':>8}")  # fmt: skip
    reached = True
    for g, s in zip(grid_table.rows, table.rows, strict=True):
        assert g.best is not None and s.best is not None
        ran = s.schedule.value if s.schedule is not None else 0.0
        gap = (ran / g.best.value - 1.0) * 100.0
        reached = reached and gap >= -2.0
        print(
            f"  {g.concurrency:>4}  {label(g.best.trial, base):<34} {g.best.value:>8,.1f}  "
            f"{label(s.best.trial, base):<20} {s.best.value:>8,.1f}  {ran:>8,.1f}  {gap:>+7.1f}%"
        )
    ratio = len(grid) / len(schedule)
    verdict = "reaches" if reached else "does NOT reach"
    print(
        f"  the schedule {verdict} the grid's per-level bests (within 2 % at every level) with "
        f"{len(schedule)} trials against {len(grid)}: {ratio:.1f}x fewer, and one "
        "configuration runs them all"
    )
    for line in edge_lines(rounds(schedule_plan, schedule), base, schedule):
        print(f"  {line}")
    return contenders_table(table, base) and reached


def contenders_table(table: LevelTable, base: ServerConfig) -> bool:
    """Per level the schedule, the engine's adaptive contenders, the best static and no
    speculation; capacity and break-even per column; the bar against each contender."""
    ran = [c for c in table.contenders if c.trial is not None and c.trial.levels]
    heads = ["schedule", *(f"adaptive ({c.key})" for c in ran), "best static", "none"]
    print("  " + f"{'c':>4}  " + "  ".join(f"{h:>14}" for h in heads))
    for row in table.rows:
        cells = [row.schedule, *(row.contender(c.key) for c in ran), row.best, row.baseline]
        print("  " + f"{row.concurrency:>4}  " + "  ".join(
            f"{'—' if f is None else format(f.value, ',.1f'):>14}" for f in cells))  # fmt: skip
    columns = [table.schedule, *(c.trial for c in ran), table.single, None]
    caps = ["—" if t is None or t.capacity is None else f"{t.capacity:,}" for t in columns]
    print("  " + f"{'KV':>4}  " + "  ".join(f"{c:>14}" for c in caps) + "  (capacity, tokens)")
    evens = []
    for t in columns:
        if t is None:
            evens.append("—")
            continue
        stop = table.breakeven(t)
        evens.append("none" if stop is None else f"c={stop}")
    print("  " + f"{'even':>4}  " + "  ".join(f"{c:>14}" for c in evens) + "  (break-even)")
    ok = True
    for contender in table.contenders:
        if contender.refusal is not None:
            if contender.key == "a":
                print(f"  no adaptive mode to compare: {contender.refusal.message}")
            continue
        rivalry = table.rivalry(contender.key)
        if rivalry is None:
            print(f"  adaptive ({contender.key}): not run")
            ok = False
            continue
        (wc, wg), (xc, xg) = rivalry.at_weakest, rivalry.worst
        holds = wg >= 3.0 and xg >= -1.0
        said = "meets" if holds else "does NOT meet"
        if rivalry.contender_wins:
            said = "loses to the engine's own mode, which the sweep recommends; it does not meet"
        print(
            f"  schedule vs adaptive ({contender.key}) [{contender.mode}]: {wg:+.1f} % at c={wc} "
            f"(its weakest level), {xg:+.1f} % at c={xc} (the schedule's closest): {said} the "
            "bar (>= +3 % at its weakest, never below -1 %)"
        )
        ok = ok and holds
    return ok


def cliff(ladder: tuple[int, ...]) -> bool:
    """The vLLM box with vllm#49548's collapse planted at its schedule's 8|9 edge."""
    server, axes = BOXES["vLLM (its face) on the seed box"]
    planted = server.replace(
        'extra_args = ["--sim-profile"',
        'extra_args = ["--sim-edge-cliff", "8", "--sim-edge-cliff-at", "9", "--sim-profile"',
    )
    plan = loads_plan(plan_text(planted, "per_level", axes.splitlines()[0], ladder))
    trials = run(plan, ladder)
    print("\nvLLM with a cliff planted at its schedule's 8|9 edge (decode steps there 8x slower):")
    print(f'  strategy = "per_level": {len(trials)} trials ({_spent(trials)})')
    done = rounds(plan, trials)
    for line in edge_lines(done, plan.base, trials):
        print(f"  {line}")
    found = bool(done) and any(c.edge.batch == 9 for c in done[0].cliffs)
    healed = len(done) > 1 and not done[-1].cliffs and not done[-1].missing
    print(f"  the cliff is {'found at 8|9' if found else 'NOT found'}; the adjusted schedule "
          f"{'holds at every edge' if healed else 'does NOT hold'}")  # fmt: skip
    return found and healed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ladder", default="1,4,16,32,64", help="concurrency levels")
    opts = parser.parse_args()
    ladder = tuple(int(c) for c in opts.ladder.split(","))
    ok = [report(name, server, axes, ladder) for name, (server, axes) in BOXES.items()]
    ok.append(cliff(ladder))
    return 0 if all(ok) else 1


if __name__ == "__main__":
    raise SystemExit(main())
