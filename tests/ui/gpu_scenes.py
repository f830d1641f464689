"""Scenes with the GPUs sampled (issue 31): a trial loading close to the memory limit, and
the steps=10 crash with each GPU's memory at the fatal line."""

from __future__ import annotations

import dataclasses

from specconsole.core.machine.state import ControllerState
from specconsole.core.measure.gpu import GpuSample
from tests.ui.doubles import crashed_sweep_state, loading_state

TOTAL_MIB = 49152.0


def _gpus(used_mib: float, util: float, power: float) -> tuple[GpuSample, ...]:
    return tuple(
        GpuSample(i, used_mib + 24 * i, TOTAL_MIB, util, power + 3 * i, 61 + i) for i in range(4)
    )


def gpu_loading_state() -> ControllerState:
    """Loading, the KV pool just allocated: 43.1 of 48 GiB on each GPU."""
    return dataclasses.replace(loading_state(), gpus=_gpus(44125.0, 0.0, 30.0))


def gpu_crash_state() -> ControllerState:
    """The steps=10 crash, with the memory each GPU held at the fatal line."""
    state = crashed_sweep_state()
    crashed = state.trials[-1]
    assert crashed.crash is not None
    memory = tuple(GpuSample(i, 44612.0, TOTAL_MIB, 0.0, 30.0, 32) for i in range(4))
    crash = dataclasses.replace(crashed.crash, gpu_memory=memory)
    trials = (*state.trials[:-1], dataclasses.replace(crashed, crash=crash))
    pending = state.pending
    assert pending is not None
    return dataclasses.replace(
        state, trials=trials, pending=dataclasses.replace(pending, crash=crash)
    )
