"""The simulated box's GPUs for a plan that runs the simulator on this machine (the demo).

Why: a real GPU box has ``nvidia-smi`` on its PATH and the console samples it while each
trial loads and runs; the demo's "box" is this machine running the simulator, which has no
GPU. So before such a plan runs, this gives the box the simulator's own ``nvidia-smi``
(:mod:`specconsole.sim.gpu.nvidia_smi`, reading what the simulator writes as it loads and
serves): a ``bin`` folder with it first on this process's PATH and a state folder of this
server's own (per port, so two demos are two boxes), both inherited by every command the
local transport runs — the simulator and the console's sampling alike. A machine with a
real ``nvidia-smi``, a plan for another box, or a server that is not the simulator is left
alone.
"""

from __future__ import annotations

import os
import shutil
import sys

from specconsole.core.config.model import runs_simulator
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.plans.profile import TransportKind
from specconsole.paths import data_dir

__all__ = ["provide_simulated_gpus"]


def provide_simulated_gpus(plan: SweepPlan) -> str | None:
    """Give this machine, as the plan's simulated box, its GPUs; the ``bin`` folder put on
    the PATH, or None when the plan needs none."""
    base = plan.base
    if plan.profile.host.transport is not TransportKind.LOCAL or plan.boxes:
        return None
    if not runs_simulator(base) or shutil.which("nvidia-smi"):
        return None
    from specconsole.sim.forecast import profile_for
    from specconsole.sim.gpu import nvidia_smi
    from specconsole.sim.gpu.gpustate import write_box

    folder = data_dir() / f"sim-gpus-{base.port}"
    try:
        write_box(profile_for(base), folder / "state")  # the box's GPUs, idle
        nvidia_smi.install(folder / "bin", python=sys.executable, state=folder / "state")
    except (OSError, ValueError):
        return None  # no GPU telemetry: the box is said to have none
    os.environ[nvidia_smi.STATE_ENV] = str(folder / "state")
    os.environ["PATH"] = f"{folder / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    return str(folder / "bin")
