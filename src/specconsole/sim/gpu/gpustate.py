"""The simulated GPUs' state, as the box's ``nvidia-smi`` reads it.

Why: a tuner asks "how close to the memory limit did this load come?" and watches power and
utilisation follow the load. The simulated box answers through its own ``nvidia-smi``
(:mod:`specconsole.sim.gpu.nvidia_smi`), which reads what each simulator process writes here:
the memory it holds on each of its GPUs — the CUDA context, the target's and the draft's
weights, the speculative workspace and the KV pool, the CUDA graphs, each added as its load
phase advances (:meth:`GpuBoard.ramp`), all from the memory plan the face printed in its log
(:func:`specconsole.sim.physics.model.plan_memory`) — and, while serving, how busy the scheduler
keeps them (:meth:`GpuBoard.follow`), averaged over a sample period as NVML reports it. A
load that fails for memory rises to where it failed and holds there for :data:`HOLD_S` before
the engine reports it, so a sampler running at once a second sees the memory at the fatal
line (a real allocator's failure is not instantaneous either: SGLang profiles the memory
before it refuses).

Files: ``box.json`` (the GPUs: names, memory, power range) and ``<pid>.json`` (this process's
share), each replaced atomically; this process's file is removed when it exits cleanly and
ignored once it is dead (SIGKILL leaves it behind; the driver frees a killed process's
memory). Writing never fails the simulator: a folder it cannot write is telemetry lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections import deque
from pathlib import Path
from typing import Any

from specconsole.sim.gpu.nvidia_smi import BOX_FILE, state_dir
from specconsole.sim.gpu.smifaults import SmiFaults
from specconsole.sim.profile import Profile

__all__ = ["HOLD_S", "UTILIZATION_PERIOD_S", "GpuBoard", "write_box"]

GIB_MIB = 1024.0
HOLD_S = 1.2
"""How long a failing allocation is held before the engine reports it (longer than the
console's sampling interval, one second)."""
RAMP_STEP_S = 0.1
"""Memory that grows during a load phase is written at most this often."""
FOLLOW_S = 0.2
"""While serving, how often the load is looked at (and written when it changed)."""
UTILIZATION_PERIOD_S = 1.0
"""What ``busy`` and ``batch`` average over. NVML's ``utilization.gpu`` is "percent of time
over the past sample period during which one or more kernels was executing" (a period of 1/6
to 1 s), so the instant between two requests at c = 1 does not read 0 %; a point sample
would, once in a while."""


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        tmp.write_text(json.dumps(data))
        tmp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def write_box(profile: Profile, directory: Path | None = None) -> None:
    """The box's GPUs as ``nvidia-smi`` lists them, idle (a box has its GPUs before any
    server runs; every simulator writes them again as it starts)."""
    folder = directory or state_dir()
    gpu = profile.gpu
    gpus = [
        {
            "index": i,
            "name": gpu.name,
            "memory_total_mib": round(gpu.memory_gb * GIB_MIB),
            "uuid": f"GPU-5e1c0000-0000-4000-8000-{i:012d}",
            "bus_id": f"00000000:{0x18 + 0x10 * i:02X}:00.0",
            "power_idle_w": gpu.power_idle_w,
            "power_max_w": gpu.power_max_w,
        }
        for i in range(gpu.count)
    ]
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            folder.chmod(0o1777)  # one box, whoever runs its servers
    _write(folder / BOX_FILE, {"gpus": gpus})


class GpuBoard:
    """This process's GPUs: the first ``tp`` of the profile's, each holding the same."""

    def __init__(
        self,
        profile: Profile,
        tp_size: int,
        directory: Path | None = None,
        *,
        faults: SmiFaults | None = None,
    ) -> None:
        self.directory = directory or state_dir()
        self.faults = faults or SmiFaults()
        """What the box's ``nvidia-smi`` gets wrong while this process lives (its file
        carries it: a dead process's faults end with it)."""
        self.ready_at: float | None = None
        """When the server became ready (wall clock): the faults timed from it start."""
        self.gpu = profile.gpu
        self.tp = max(1, min(int(tp_size), profile.gpu.count))
        self.used_gb = 0.0
        self.busy = 0.0
        self.batch = 0.0
        self._recent: deque[tuple[float, float]] = deque(
            maxlen=max(1, round(UTILIZATION_PERIOD_S / FOLLOW_S))
        )
        """(busy, batch) at each of the last looks, one sample period's worth."""
        self._file = self.directory / f"{os.getpid()}.json"
        write_box(profile, self.directory)
        self._write()

    @property
    def total_gb(self) -> float:
        return self.gpu.memory_gb

    def _write(self) -> None:
        share = {
            "used_mib": round(self.used_gb * GIB_MIB, 1),
            "busy": round(self.busy, 3),
            "batch": round(self.batch, 3),
        }
        gpus = {str(i): share for i in range(self.tp)}
        state: dict[str, Any] = {"pid": os.getpid(), "gpus": gpus}
        if faults := self.faults.state(self.ready_at):
            state["faults"] = faults
        _write(self._file, state)

    def hold(self, used_gb: float) -> None:
        """Hold ``used_gb`` per GPU from now on (never more than the GPU has)."""
        self.used_gb = max(0.0, min(used_gb, self.total_gb))
        self._write()

    async def ramp(self, add_gb: float, seconds: float) -> None:
        """Allocate ``add_gb`` more per GPU over ``seconds`` (a load phase)."""
        start = self.used_gb
        steps = max(1, min(20, int(seconds / RAMP_STEP_S)))
        for k in range(1, steps + 1):
            if seconds > 0:
                await asyncio.sleep(seconds / steps)
            self.hold(start + add_gb * k / steps)

    async def fail_at(self, used_gb: float) -> None:
        """A failing allocation: rise to ``used_gb`` and hold it for :data:`HOLD_S`."""
        await self.ramp(used_gb - self.used_gb, 0.2)
        await asyncio.sleep(HOLD_S)

    def load(self, running: int, most: int) -> None:
        """``running`` requests of at most ``most`` now: how busy the GPUs are, averaged over
        the last :data:`UTILIZATION_PERIOD_S` of looks (written when it changed)."""
        now_busy = 0.0 if running <= 0 else 0.6 + 0.4 * min(1.0, running / 8.0)
        now_batch = 0.0 if most <= 0 else min(1.0, running / most)
        self._recent.append((now_busy, now_batch))
        busy = round(sum(b for b, _ in self._recent) / len(self._recent), 3)
        batch = round(sum(b for _, b in self._recent) / len(self._recent), 3)
        if (busy, batch) != (self.busy, self.batch):
            self.busy, self.batch = busy, batch
            self._write()

    async def follow(self, scheduler: Any) -> None:
        """While serving: the scheduler's running batch, every :data:`FOLLOW_S`."""
        most = max(1, int(getattr(scheduler.args, "max_running_requests", 1) or 1))
        self.ready_at = time.time()
        self._write()
        while True:
            self.load(len(scheduler.running), most)
            await asyncio.sleep(FOLLOW_S)

    def close(self) -> None:
        """This process's share is gone (a clean exit)."""
        with contextlib.suppress(OSError):
            self._file.unlink()
