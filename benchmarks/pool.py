"""Speed-up of a pool of boxes over one box, on the demo plan (process backend).

Runs ``examples/demo-sweep.toml`` (the seed's steps sweep on the simulated box: walk 1..5, 10,
then bisect to 9) headless with ``[pool] max_parallel = N`` for N = 1, 2 and 4 — N boxes on
this machine, each its own plain-process run folder and server port — and prints the wall
time, the speed-up over the first count (one box), the trials run and the boundary found
(which must be the same for every N). The servers are stopped afterwards.

Two cores are shared by every box's simulator and load generator, so the speed-up here is a
floor: on real boxes each has its own GPUs.

Run: ``.venv/bin/python benchmarks/pool.py [--boxes 1,2,4] [--plan PLAN]``.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import re
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from specconsole.controller.localplan import resolve_local_placeholders  # noqa: E402
from specconsole.controller.pool.run import box_plan  # noqa: E402
from specconsole.core.plans.parse import loads_plan  # noqa: E402
from specconsole.core.search.strategy import findings  # noqa: E402
from specconsole.headless.pool import sweep_headless as run_headless  # noqa: E402
from specconsole.remote.process import ProcessBackend  # noqa: E402
from specconsole.remote.transport.local import LocalTransport  # noqa: E402
from specconsole.session.store import Session  # noqa: E402


def pool_text(text: str, boxes: int, run_dir: Path) -> str:
    """The plan with its run folder under ``run_dir`` and, for N > 1, N job slots."""
    text = re.sub(r"(?m)^run_dir = .*$", f'run_dir = "{run_dir}/run-{{port}}"', text)
    if boxes > 1:
        text += f"\n[pool]\nmax_parallel = {boxes}\n"
    return text


async def one(text: str, boxes: int, folder: Path, plan_dir: Path) -> tuple[float, int, str]:
    plan = resolve_local_placeholders(loads_plan(pool_text(text, boxes, folder)), plan_dir=plan_dir)
    plan = replace(plan, source=pool_text(text, boxes, folder))
    session = Session.create(folder / "sessions", plan)
    started = time.perf_counter()
    try:
        code = await run_headless(plan, session, out=io.StringIO())
    finally:
        for each in [box_plan(plan, box) for box in plan.boxes] or [plan]:
            await ProcessBackend(LocalTransport(), each.profile.service).stop()
    wall = time.perf_counter() - started
    trials = session.load_trials()
    found = " ".join(findings(plan, trials)) or "-"
    if code != 0:
        found += f" (exit {code})"
    return wall, len(trials), found


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", default=str(ROOT / "examples" / "demo-sweep.toml"))
    parser.add_argument("--boxes", default="1,2,4")
    args = parser.parse_args()
    text = Path(args.plan).read_text()  # noqa: ASYNC240 (once, before anything runs)
    counts = [int(n) for n in args.boxes.split(",")]
    print(f"plan: {args.plan}")
    print(f"{'boxes':>5}  {'wall s':>7}  {'speed-up':>8}  {'trials':>6}  finding")
    base: float | None = None
    for n in counts:
        with tempfile.TemporaryDirectory(prefix="specconsole-pool-") as tmp:
            wall, trials, found = await one(text, n, Path(tmp), Path(args.plan).parent)
        base = wall if base is None else base  # the first count is the reference
        speedup = base / wall
        print(f"{n:>5}  {wall:7.1f}  {speedup:7.2f}x  {trials:>6}  {found}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
