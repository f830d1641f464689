"""GPU telemetry's cost on the console's side, and how fast a sample reaches the screen.

Over the real sshd (tests/fixtures/gpubox.py: its sessions see the simulated box's
``nvidia-smi``), with the simulator serving and a benchmark loading it from a process of its
own (``specconsole bench``, c = 16, so the GPUs' load and power move while sampled):

* **CPU**: this process runs only the telemetry — the one streamed ``nvidia-smi`` command
  over asyncssh, its lines parsed and batched (``controller.telemetry``), each sample of
  every GPU stepped through the machine (``core.machine.step``: the live view and the
  trial's figures) — and its CPU time over the wall time is the cost (target < 1 % of a
  core), against the same SSH connection held open without telemetry;
* **in the console**: the real app at 120×40 (headless) and the real controller in a trial,
  its GPU line drawn from the same stream, with and without telemetry: the console's own
  share (a sample redraws only the GPU line, not every pane);
* **sample to screen**: each new sample's age when the console's GPU line shows it — now less
  the stamp ``nvidia-smi`` printed (the box is this machine, so one clock) — is its latency
  (target ≤ 1 s).

Run: ``.venv/bin/python benchmarks/telemetry.py [--seconds 30] [--interval-ms 500]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.controller.helpers import plan  # noqa: E402
from tests.fixtures.gpubox import gpu_sshd  # noqa: E402
from tests.fixtures.sim import running_simulator  # noqa: E402
from tests.remote.helpers import ssh_profile  # noqa: E402

from specconsole.controller.runtime import Controller  # noqa: E402
from specconsole.controller.telemetry import INTERVAL_MS, GpuTelemetry  # noqa: E402
from specconsole.core.machine import effects as fx  # noqa: E402
from specconsole.core.machine import events as ev  # noqa: E402
from specconsole.core.machine.state import ControllerState, Phase, TrialRecord  # noqa: E402
from specconsole.core.machine.table import step  # noqa: E402
from specconsole.remote.transport.ssh import SshTransport  # noqa: E402
from specconsole.sim.gpu import nvidia_smi  # noqa: E402

BACKEND = object()
"""Not a batch job's backend: the GPUs are on the box the transport reaches."""


def trial_state() -> ControllerState:
    """The machine in a trial, benchmarking (where every sample counts)."""
    p = plan()
    trial = TrialRecord(index=0, config=p.base)
    return ControllerState(plan=p, phase=Phase.BENCHMARKING, trial=trial, phase_since=time.time())


def stamp_age(stamp: str) -> float:
    """Seconds since ``nvidia-smi``'s own timestamp (this machine's clock and zone)."""
    whole, _, millis = stamp.partition(".")
    at = time.mktime(time.strptime(whole, "%Y/%m/%d %H:%M:%S")) + int(millis or 0) / 1000
    return time.time() - at


async def cpu_share(sshd, seconds: float, interval_ms: int, telemetry: bool) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    """(CPU seconds per wall second, samples stepped) of this process over ``seconds``."""
    transport = SshTransport(ssh_profile(sshd))
    await transport.run("true")  # connected
    state = trial_state()
    stepped = 0

    def post(event: ev.Event) -> None:
        nonlocal state, stepped
        state, _ = step(state, event)
        stepped += isinstance(event, ev.GpuSampled)

    sampler = GpuTelemetry(transport, BACKEND, post, interval_ms=interval_ms)  # type: ignore[arg-type]
    await asyncio.sleep(1.0)  # settled
    cpu0, wall0 = time.process_time(), time.monotonic()
    if telemetry:
        sampler.perform(fx.StartTelemetry(trial_index=0))
    await asyncio.sleep(seconds)
    cpu = time.process_time() - cpu0
    wall = time.monotonic() - wall0
    sampler.perform(fx.StopTelemetry())
    await transport.close()
    return cpu / wall, stepped


async def console_run(sshd, seconds: float, telemetry: bool) -> tuple[float, list[float]]:  # type: ignore[no-untyped-def]
    """The console (the real app at 120×40, headless, the real controller in a trial) for
    ``seconds``: (its process's CPU per wall second, each new sample's age when its GPU line
    drew it)."""
    from specconsole.ui.app import make_app
    from specconsole.ui.widgets.gpus import GpuLine

    transport = SshTransport(ssh_profile(sshd))
    await transport.run("true")  # connected
    controller = Controller(
        transport=transport,
        backend=BACKEND,
        runner=None,
        state=trial_state(),  # type: ignore[arg-type]
    )
    ages: list[float] = []
    shown = GpuLine.show

    def timed(self: GpuLine, samples) -> None:  # type: ignore[no-untyped-def]
        if samples and tuple(samples) != self.samples:
            ages.append(stamp_age(samples[0].stamp))
        shown(self, samples)

    GpuLine.show = timed  # type: ignore[method-assign]
    app = make_app(controller, run_controller=controller.run, tick_interval=None)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(1.0)  # drawn and settled
            cpu0, wall0 = time.process_time(), time.monotonic()
            if telemetry:
                controller._perform(fx.StartTelemetry(trial_index=0))  # as a trial's start
            await pilot.pause(seconds)
            share = (time.process_time() - cpu0) / (time.monotonic() - wall0)
            controller._perform(fx.StopTelemetry())
            await pilot.press("q")
    finally:
        GpuLine.show = shown  # type: ignore[method-assign]
        await transport.close()
    return share, ages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--interval-ms", type=int, default=INTERVAL_MS)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp, gpu_sshd(Path(tmp)) as (sshd, box):
        env = {nvidia_smi.STATE_ENV: str(box.state_dir)}
        with running_simulator(load_seconds=0.5, env=env) as sim:
            bench = subprocess.Popen(  # the GPUs' load: a benchmark in a process of its own
                [sys.executable, "-m", "specconsole", "bench", sim.base_url, "--ladder", "16",
                 "--duration", str(4 * args.seconds + 30), "--output-len", "256"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            try:
                time.sleep(3.0)
                rounds, screens, ages = [], [], []
                for _ in range(2):  # alternating: telemetry on, then the connection alone
                    on = asyncio.run(cpu_share(sshd, args.seconds, args.interval_ms, True))
                    off = asyncio.run(cpu_share(sshd, args.seconds, args.interval_ms, False))
                    rounds.append((on, off))
                    shown_on, seen = asyncio.run(console_run(sshd, args.seconds, True))
                    shown_off, _ = asyncio.run(console_run(sshd, args.seconds, False))
                    screens.append((shown_on, shown_off))
                    ages += seen
            finally:
                bench.terminate()
                bench.wait(30)
    print(f"GPU telemetry over the real sshd: nvidia-smi every {args.interval_ms} ms, 4 GPUs, "
          f"a c=16 benchmark loading the box; load average {load:.1f}")  # fmt: skip
    for n, ((on, samples), (off, _)) in enumerate(rounds, 1):
        print(
            f"  round {n}: {on * 100:.2f} % of a core with telemetry ({samples} samples of every "
            f"GPU stepped), {off * 100:.2f} % with the connection alone: telemetry "
            f"{(on - off) * 100:.2f} %"
        )
    cost = statistics.mean((on - off) for (on, _s), (off, _o) in rounds)
    verdict = "met" if cost < 0.01 else "MISSED"
    print(f"CPU cost of telemetry: {cost * 100:.2f} % of a core (target < 1 %: {verdict})")
    for n, (on, off) in enumerate(screens, 1):
        print(
            f"  console round {n}: {on * 100:.2f} % of a core with its GPU line live, "
            f"{off * 100:.2f} % without: telemetry {(on - off) * 100:.2f} %"
        )
    cost = statistics.mean(on - off for on, off in screens)
    verdict = "met" if cost < 0.01 else "MISSED"
    print(f"in the console (stream, machine, GPU line drawn): {cost * 100:.2f} % of a core "
          f"(target < 1 %: {verdict})")  # fmt: skip
    if ages:
        ordered = sorted(ages)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        verdict = "met" if max(ages) <= 1.0 else "MISSED"
        print(
            f"sample to screen (the console's GPU line at 120x40): median "
            f"{statistics.median(ages) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max "
            f"{max(ages) * 1000:.0f} ms over {len(ages)} samples (target <= 1 s: {verdict})"
        )
    else:
        print("sample to screen: no sample reached the screen")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
