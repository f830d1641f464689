"""The GPU telemetry's stream (``controller.telemetry``) against the simulated box's
``nvidia-smi`` through the local transport: one command streamed (not one per sample), a
sample of every GPU per tick while the simulator loads and serves, memory rising as it
loads, stopped with the trial; a box without ``nvidia-smi`` said once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from specconsole.controller.telemetry import Batcher, GpuTelemetry, absent_reason, command
from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.measure.gpu import GpuSample
from specconsole.remote.transport.local import LocalTransport
from tests.fixtures.gpubox import local_gpus
from tests.fixtures.sim import async_running_simulator

_BACKEND = object()  # type: ignore[var-annotated]
"""Any backend that is not a batch job's (its GPUs are on the box the transport reaches)."""


def _s(index: int) -> GpuSample:
    return GpuSample(index, 1.0, 2.0)


def test_a_tick_is_one_sample_of_every_gpu() -> None:
    b = Batcher()
    # the first tick: each line at once (how many GPUs there are is not known yet)
    assert [s.index for s in b.add(_s(0))] == [0] and [s.index for s in b.add(_s(1))] == [1]
    assert b.add(_s(0)) == ()  # index 0 again: two GPUs; a tick now goes out whole
    assert [s.index for s in b.add(_s(1))] == [0, 1]
    assert b.add(_s(0)) == ()
    assert [s.index for s in b.add(_s(0))] == [0]  # GPU 1 gone: the incomplete tick goes


def test_the_command_is_bounded_and_says_when_there_is_no_tool() -> None:
    text = command(250)
    assert "nvidia-smi --query-gpu=timestamp,index,memory.used" in text
    assert "-lms 250" in text and "timeout -k 5" in text
    assert absent_reason(["__specconsole_no_nvidia_smi__"]) == "no nvidia-smi"
    assert absent_reason(["No devices were found"]) == "nvidia-smi found no device"


async def _collect(telemetry_of: GpuTelemetry, seconds: float) -> None:
    telemetry_of.perform(fx.StartTelemetry(trial_index=3, epoch=5))
    await asyncio.sleep(seconds)
    task = telemetry_of.task
    telemetry_of.perform(fx.StopTelemetry())
    if task is not None:
        await asyncio.gather(task, return_exceptions=True)


async def test_samples_follow_the_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with local_gpus(tmp_path, monkeypatch):
        posted: list[ev.Event] = []
        transport = LocalTransport()
        telemetry = GpuTelemetry(transport, _BACKEND, posted.append, interval_ms=200)
        collecting = asyncio.ensure_future(_collect(telemetry, 4.0))
        await asyncio.sleep(0.5)
        async with async_running_simulator(load_seconds=2.0, wait_ready=False) as sim:
            await collecting
            assert sim.popen.poll() is None
        samples = [e for e in posted if isinstance(e, ev.GpuSampled)]
        assert len(samples) >= 10, posted
        assert all(e.trial_index == 3 and e.epoch == 5 for e in samples)
        assert all(len(e.samples) == 4 for e in samples[4:])  # 4 GPUs, one tick each
        used = [e.samples[0].memory_used_mib for e in samples]
        assert used[0] < 100  # before the simulator: the box's GPUs, idle
        assert max(used) > 40_000 and used == sorted(used)  # rising as it loads
        stamp = time.strptime(samples[-1].samples[0].stamp.split(".")[0], "%Y/%m/%d %H:%M:%S")
        assert abs(time.mktime(stamp) - time.time()) < 10


async def test_no_nvidia_smi_is_said_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    posted: list[ev.Event] = []
    transport = LocalTransport()
    telemetry = GpuTelemetry(transport, _BACKEND, posted.append)
    await _collect(telemetry, 1.0)
    assert posted == [ev.GpuTelemetryAbsent(reason="no nvidia-smi", epoch=5, at=0.0)]
    telemetry.perform(fx.StartTelemetry(trial_index=4, epoch=6))
    assert telemetry.task is None  # not asked again
