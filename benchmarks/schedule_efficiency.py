"""How many trials ``strategy = "per_level"`` spends to reach the per-level bests a full grid finds.

The question of issue 30: for every concurrency of the ladder, which speculation is best — and
then one configuration that runs each level's best. A full grid answers the first half by
measuring every configuration of the space; ``strategy = "per_level"`` measures only the draft
lengths (at the plan's base capacity settings), the baseline without speculation, and then
the schedule it derives, and proves it on the same ladder.

The space, on the seed box (the simulator's calibrated profile; SGLang, adaptive mode from
0.5.13) and on the same box through the vLLM face (0.34, ``--gpu-memory-utilization`` over
the grid): draft length 1-10 at topk 1 (SGLang's adaptive mode and vLLM draft chains) x the
memory fraction 0.80-0.92 x the largest captured CUDA-graph batch 32/64/128 (SGLang) or the
running-request cap 64/128 (vLLM), plus the baseline. Offline, as
``benchmarks/search_efficiency.py``: each proposal comes from the real strategy code
(``core.search.strategy.next_trial``, rebuilt from the records each time as in a session),
each outcome from the pure model (``sim.physics.model.predict`` over the ladder; a load failure is a
crashed record). The per-level bests are ``core.search.levels``' (the reports' table).

Prints, per box: the trials each spends; per level the grid's best configuration and figure,
the per_level strategy's best static, the schedule's own figure and how it compares with the
grid's best; and whether the schedule reaches the grid's per-level bests (within 2 % at every
level), with the ratio of trials.

Run: ``.venv/bin/python benchmarks/schedule_efficiency.py [--ladder 1,4,16,32,64]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from specconsole.core.config.model import ServerConfig  # noqa: E402
from specconsole.core.engine.registry import engine_for  # noqa: E402
from specconsole.core.machine.state import LevelSummary, TrialRecord, TrialStatus  # noqa: E402
from specconsole.core.plans.parse import loads_plan  # noqa: E402
from specconsole.core.plans.plan import SweepPlan  # noqa: E402
from specconsole.core.search.levels import LevelTable, level_table  # noqa: E402
from specconsole.core.search.strategy import next_trial  # noqa: E402
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


def measured(index: int, config: ServerConfig, ladder: tuple[int, ...]) -> TrialRecord:
    """The trial the model says this configuration makes (crashed when it does not load)."""
    preds = [predict(config, c, INPUT_LEN, OUTPUT_LEN) for c in ladder]
    if not all(p.ok for p in preds):
        return TrialRecord(index=index, config=config, status=TrialStatus.CRASHED)
    levels = tuple(
        LevelSummary(p.concurrency, p.aggregate_tok_s, p.per_request_tok_s, 1) for p in preds
    )
    return TrialRecord(index=index, config=config, status=TrialStatus.OK, levels=levels)


def run(plan: SweepPlan, ladder: tuple[int, ...], cap: int = 500) -> list[TrialRecord]:
    """The strategy's trials, each proposed from the records so far, as a session runs them."""
    trials: list[TrialRecord] = []
    while len(trials) < cap:
        proposal = next_trial(plan, trials)
        if proposal is None:
            return trials
        trials.append(measured(len(trials), proposal.config, ladder))
    raise RuntimeError(f"the strategy proposed more than {cap} trials")


def label(trial: TrialRecord, base: ServerConfig) -> str:
    return config_label(trial.effective, base)


def report(name: str, server: str, axes: str, ladder: tuple[int, ...]) -> bool:
    grid_plan = loads_plan(plan_text(server, "grid", axes, ladder))
    schedule_plan = loads_plan(plan_text(server, "schedule", axes.splitlines()[0], ladder))
    grid = run(grid_plan, ladder)
    schedule = run(schedule_plan, ladder)
    grid_table: LevelTable = level_table(grid, grid_plan.goal)
    table = level_table(schedule, schedule_plan.goal)
    base = schedule_plan.base
    crashed = sum(t.status is TrialStatus.CRASHED for t in grid)
    print(f"\n{name}: ladder {', '.join(map(str, ladder))}; {INPUT_LEN} in / {OUTPUT_LEN} out")
    print(
        f"  full grid: {len(grid)} trials ({len(grid) - 1} configurations, {crashed} of which "
        "do not load, and the baseline)"
    )
    said = f"{len(schedule)} trials"
    if table.schedule is not None:
        engine = engine_for(base)
        said += f" (10 draft lengths, the baseline, {label(table.schedule, base)})"
        assert engine.scheduled(table.schedule.effective) is not None
    print(f'  strategy = "per_level": {said}')
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
    return reached


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ladder", default="1,4,16,32,64", help="concurrency levels")
    opts = parser.parse_args()
    ladder = tuple(int(c) for c in opts.ladder.split(","))
    ok = [report(name, server, axes, ladder) for name, (server, axes) in BOXES.items()]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    raise SystemExit(main())
