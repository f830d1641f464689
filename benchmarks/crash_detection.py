"""Crash-detection latency and state-machine throughput.

Prints:

* the time from the simulator writing its fatal line ("Not enough memory", steps 10 on the
  seed profile; with ``--engine vllm`` its vLLM face's "... larger than the available KV cache
  memory", gpu_memory_utilization 0.35 on the Llama-3.1-8B profile) to the controller
  publishing CRASHED, over the local transport and the plain-process backend (target: < 2 s,
  0.5 s for vLLM; the fatal line is spotted by polling the run's log file every 5 ms,
  independently of the controller);
* how many ``step()`` calls per second the pure machine handles (LogLines batches and
  benchmark progress ticks are the hot events).

Run: ``.venv/bin/python benchmarks/crash_detection.py [--engine vllm]``.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.controller.helpers import Driver  # noqa: E402
from tests.fixtures.plans import VLLM_LAUNCHER, VLLM_SERVER, sim_plan_text  # noqa: E402

from specconsole.controller.localplan import resolve_local_placeholders  # noqa: E402
from specconsole.controller.wiring import open_ports  # noqa: E402
from specconsole.core.machine import events as ev  # noqa: E402
from specconsole.core.machine.state import ControllerState, Phase  # noqa: E402
from specconsole.core.machine.table import step  # noqa: E402
from specconsole.core.plans.parse import loads_plan  # noqa: E402
from specconsole.core.plans.plan import SweepPlan  # noqa: E402
from specconsole.core.ports import BenchProgress  # noqa: E402

RUNS = 3
FATAL = {"sglang": b"Not enough memory", "vllm": b"larger than the available KV cache memory"}
"""Each face's fatal line of the crash the benchmark provokes."""


def plan_for(run_dir: Path, engine: str) -> SweepPlan:
    if engine == "vllm":  # the simulator's vLLM face: a KV cache too small for the context
        axes = "num_speculative_tokens = [2]\ngpu_memory_utilization = [0.35]\n"
        faces = {"server": VLLM_SERVER, "launcher": VLLM_LAUNCHER}
    else:
        axes, faces = "speculative_num_steps = [10]\n", {}
    sweep = f'[sweep]\non_crash = "pause"\n[sweep.axes]\n{axes}'
    text = sim_plan_text(run_dir, extra_args=["--sim-load-seconds", "1.0"], sweep=sweep, **faces)
    return resolve_local_placeholders(loads_plan(text))


def watch_file(run_dir: Path, seen: list[float], stop: threading.Event, fatal: bytes) -> None:
    while not stop.is_set() and not seen:
        for log in run_dir.glob("**/log"):
            try:
                if fatal in log.read_bytes():
                    seen.append(time.time())
                    return
            except OSError:
                pass
        time.sleep(0.005)


async def one_run(engine: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        plan = plan_for(run_dir, engine)
        state = ControllerState(plan=plan, policy=plan.on_crash)
        controller = open_ports(plan.profile).controller(state)
        detected: list[float] = []

        def on(state: ControllerState, event: ev.Event) -> None:
            if state.phase is Phase.CRASHED and not detected:
                detected.append(time.time())
            if state.phase is Phase.AWAITING_DECISION:
                controller.send(ev.Quit(stop_server=True))

        controller.subscribe(on)
        seen: list[float] = []
        stop = threading.Event()
        poller = threading.Thread(
            target=watch_file, args=(run_dir, seen, stop, FATAL[engine]), daemon=True
        )
        poller.start()
        controller.send(ev.StartSweep())
        await asyncio.wait_for(controller.run(), 60)
        stop.set()
        poller.join(2)
        if not (seen and detected):
            raise SystemExit("the crash was not observed")
        return detected[0] - seen[0]


def machine_throughput() -> tuple[float, float]:
    d = Driver()
    d.to_phase(Phase.BENCHMARKING)
    state = d.state
    lines = ev.LogLines(lines=tuple(f"line {i}" for i in range(50)), epoch=state.epoch, at=1.0)
    tick = ev.BenchProgressed(
        progress=BenchProgress(
            level_index=1,
            concurrency=4,
            completed=2,
            failed=0,
            total=16,
            running=4,
            output_tokens=64,
            current_tok_s=100.0,
            elapsed_s=1.0,
        ),
        epoch=state.epoch,
        at=1.0,
    )
    out = []
    for event in (lines, tick):
        n = 20_000
        t0 = time.perf_counter()
        s = state
        for i in range(n):
            s, _ = step(s, replace(event, at=float(i)))
        out.append(n / (time.perf_counter() - t0))
    return out[0], out[1]


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", choices=sorted(FATAL), default="sglang")
    engine = ap.parse_args().engine
    target = 500 if engine == "vllm" else 2000
    # Negative values mean the controller saw the line before the 5 ms file poll did.
    latencies = [max(0.0, asyncio.run(one_run(engine))) for _ in range(RUNS)]
    print(
        f"{engine}: crash detection latency (fatal line written -> CRASHED published), "
        f"{RUNS} runs: median {statistics.median(latencies) * 1000:.0f} ms, "
        f"max {max(latencies) * 1000:.0f} ms (resolution 5 ms; target < {target} ms)"
    )
    per_lines, per_tick = machine_throughput()
    print(
        f"step() throughput: {per_lines:,.0f} LogLines batches/s (50 lines each), "
        f"{per_tick:,.0f} benchmark progress ticks/s"
    )


if __name__ == "__main__":
    main()
