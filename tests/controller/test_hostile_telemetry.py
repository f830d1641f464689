"""A lying or dying ``nvidia-smi`` (issue 44), streamed by the real telemetry through the local
transport: a box whose power reads ``[N/A]`` keeps the words, never 0 W; one that stalls or
exits after it sampled is said lost (the live line drops the stale sample, the trial's record
says why its figures end) and restarted a bounded number of times; one that stalls before its
first sample is a box without telemetry, with the reason. The fake ``nvidia-smi`` is a shell
script on the PATH (there is no GPU here): its lines are the real tool's CSV."""

from __future__ import annotations

import asyncio
import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.controller import telemetry as telemetry_module
from specconsole.controller.telemetry import GpuTelemetry
from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.handlers.telemetry import on_lost, on_sampled
from specconsole.core.machine.state import ControllerState, Phase, TrialRecord
from specconsole.present.figures.gpu import gpu_line, trial_gpu_lines
from specconsole.remote.transport.local import LocalTransport
from tests.controller.helpers import plan

LINE = "2026/12/06 02:32:06.123, {i}, 43310, 49140, 100, {power}, 67"

SCRIPTS = {
    "na": 'for n in $(seq 1 200); do for i in 0 1; do echo "{na0}"; echo "{ok1}"; done; '
    "sleep 0.1; done",
    "stall": 'echo "{ok0}"; echo "{ok1}"; echo "{ok0}"; echo "{ok1}"; exec sleep 60',
    "exit": 'echo "{ok0}"; echo "{ok1}"; echo "{ok0}"; echo "{ok1}"; exit 9',
    "mute": "exec sleep 60",
}


def _fake_smi(tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    body = SCRIPTS[mode].format(
        na0=LINE.format(i=0, power="[N/A]"),
        ok0=LINE.format(i=0, power="287.41"),
        ok1=LINE.format(i=1, power="[Not Supported]" if mode == "na" else "290.02"),
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\n{body}\n")
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin:/bin")
    # bounds a test can wait for: silent after 0.5 s, restarted after 0.1 s
    monkeypatch.setattr(telemetry_module, "MIN_SILENCE_S", 0.5)
    monkeypatch.setattr(telemetry_module, "RESTART_AFTER_S", 0.1)


async def _run(telemetry: GpuTelemetry, seconds: float) -> None:
    telemetry.perform(fx.StartTelemetry(trial_index=0, epoch=1))
    task = telemetry.task
    assert task is not None
    try:
        await asyncio.wait_for(asyncio.shield(task), seconds)
    except TimeoutError:
        telemetry.perform(fx.StopTelemetry())
        await asyncio.gather(task, return_exceptions=True)


async def test_na_power_is_kept_as_said_and_never_read_as_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_smi(tmp_path, "na", monkeypatch)
    posted: list[ev.Event] = []
    await _run(GpuTelemetry(LocalTransport(), object(), posted.append, interval_ms=100), 1.5)
    ticks = [e.samples for e in posted if isinstance(e, ev.GpuSampled) and len(e.samples) == 2]
    assert ticks, posted
    gpu0, gpu1 = ticks[-1]
    assert gpu0.power_w is None and gpu0.said("power.draw") == "[N/A]"
    assert gpu1.said("power.draw") == "[Not Supported]"
    line = gpu_line(ticks[-1], 120)
    assert "[N/A]" in line and "0 W" not in line


@pytest.mark.parametrize(
    ("mode", "why"),
    [("stall", "nvidia-smi printed nothing for 0.5 s"), ("exit", "the nvidia-smi stream ended")],
)
async def test_a_stalled_or_dead_nvidia_smi_is_said_lost_and_restarted_a_bounded_number_of_times(
    mode: str, why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_smi(tmp_path, mode, monkeypatch)
    posted: list[ev.Event] = []
    telemetry = GpuTelemetry(LocalTransport(), object(), posted.append, interval_ms=100)
    # every run: 0.5 s of silence at most, then 0.1 s before the next (4 runs): bounded
    await _run(telemetry, 20.0)
    assert telemetry.task is None or telemetry.task.done()
    lost = [e for e in posted if isinstance(e, ev.GpuTelemetryLost)]
    assert lost and all(e.reason.startswith(why) for e in lost), posted
    assert lost[-1].reason.endswith(f"not restarted after {telemetry_module.MAX_RESTARTS} restarts")
    assert not any(isinstance(e, ev.GpuTelemetryAbsent) for e in posted)
    # what the machine makes of it: the stale sample leaves the view, the record says why
    state = _benchmarking_state()
    sampled = next(e for e in posted if isinstance(e, ev.GpuSampled) and len(e.samples) == 2)
    state, _ = on_sampled(state, sampled)
    assert state.gpus
    state, effects = on_lost(state, lost[0])
    assert state.gpus == () and state.gpu_lost == lost[0].reason
    assert any(isinstance(f, fx.Notify) and "GPU telemetry lost" in f.text for f in effects)
    assert state.trial is not None and state.trial.gpu is not None
    assert state.trial.gpu.lost == lost[0].reason
    assert any(line.startswith("GPU telemetry lost:") for line in trial_gpu_lines(state.trial))
    state, _ = on_sampled(state, sampled)  # a sample again: back, and no longer lost
    assert state.gpus and state.gpu_lost == ""


async def test_an_nvidia_smi_silent_from_the_start_is_a_box_without_telemetry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_smi(tmp_path, "mute", monkeypatch)
    posted: list[ev.Event] = []
    await _run(GpuTelemetry(LocalTransport(), object(), posted.append, interval_ms=100), 10.0)
    assert posted == [
        ev.GpuTelemetryAbsent(reason="nvidia-smi printed nothing for 0.5 s", epoch=1, at=0.0)
    ]


def _benchmarking_state() -> ControllerState:
    trial = TrialRecord(index=0, config=plan().base)
    return replace(ControllerState(plan=plan()), trial=trial, phase=Phase.LOADING)
