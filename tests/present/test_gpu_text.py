"""How the GPUs read (present.figures.gpu): the live line at each width, the memory at a crash,
a trial's GPU figures."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specconsole.core.machine.state import CrashInfo, LevelSummary, Phase, TrialRecord
from specconsole.core.measure.gpu import GpuSample, GpuSpan, TrialGpu, fold
from specconsole.present.figures.gpu import bar, crash_memory, gpu_line, hot, trial_gpu_lines
from tests.controller.helpers import plan

GPUS = tuple(GpuSample(i, 44125.0, 49152.0, 100.0, 287.4, 68.0) for i in range(4))


@pytest.mark.parametrize(
    ("width", "starts"),
    [
        (200, "GPU0 ▕█████████░▏ 43.1/48.0 GiB 100% 287 W 68°C  GPU1"),
        (160, "GPU0 ▕█████▍▏43.1/48.0 GiB 100% 287W  GPU1"),
        (118, "0▕███▋▏43.1/48.0 100% 287W  1▕"),
        (78, "GPUs ▕██▊▏43.1 ▕██▊▏43.1 ▕██▊▏43.1 ▕██▊▏43.1 /48.0 GiB · 100% · 1,150 W · 68°C"),
        (50, "GPUs ████ 43.1/48.0 GiB · 100% · 1,150 W · 68°C"),
        (40, "GPUs ████ 43.1/48.0 GiB · 100% · 1,150 W"),
    ],
)
def test_the_line_fits_its_width(width: int, starts: str) -> None:
    text = gpu_line(GPUS, width)
    assert text.startswith(starts) and len(text) <= width


def test_bars_and_limits() -> None:
    assert bar(0.5, 4) == "██░░" and bar(1.0, 3) == "███" and bar(0.0, 2) == "░░"
    assert not hot(GPUS) and hot([GpuSample(0, 47000.0, 48000.0)])
    assert gpu_line((), 80) == ""


def test_crash_memory_groups_gpus_holding_the_same() -> None:
    same = [GpuSample(i, 43568.0, 49152.0) for i in range(4)]
    assert crash_memory(same) == "GPU 0-3: 42.5 / 48.0 GiB at the fatal line"
    mixed = [GpuSample(0, 43568.0, 49152.0), GpuSample(2, 48742.4, 49152.0)]
    assert crash_memory(mixed) == (
        "GPU 0: 42.5 / 48.0 GiB · GPU 2: 47.6 / 48.0 GiB at the fatal line"
    )
    assert crash_memory(()) == ""


def test_trial_lines() -> None:
    span = GpuSpan(fold((), [GpuSample(i, 44200.0, 49152.0, 100.0, 287.0) for i in range(4)]))
    level = LevelSummary(64, 1947.0, 30.4, 64, gpu=span)
    gpu = TrialGpu().with_load([GPUS[0]]).with_ready([GPUS[0]])
    crash = CrashInfo("kv_cache_no_memory", "Not enough memory", Phase.LOADING, gpu_memory=GPUS)
    record = TrialRecord(0, plan().base, levels=(level,), gpu=gpu)
    assert trial_gpu_lines(record) == [
        "GPU memory: 43.1 at ready, peak 43.1 while loading (of 48.0 GiB)",
        "c=64 GPUs: 1.70 tok/J · 1,148 W · 100% · peak 43.2 GiB",
    ]
    crashed = replace(record, crash=crash, levels=(), gpu=None)
    assert trial_gpu_lines(crashed) == ["GPU memory: GPU 0-3: 43.1 / 48.0 GiB at the fatal line"]
