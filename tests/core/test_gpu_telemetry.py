"""GPU telemetry, pure: ``nvidia-smi``'s CSV read, samples folded, and where the machine
counts each sample (load peak, memory at ready, per level, the memory at the fatal line),
tokens per joule, and a box without GPUs said once."""

from __future__ import annotations

import pytest

from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import Phase
from specconsole.core.measure.gpu import (
    QUERY_FIELDS,
    GpuSample,
    GpuSpan,
    GpuStats,
    TrialGpu,
    fold,
    parse_sample,
    query_args,
)
from specconsole.core.ports import BenchProgress
from specconsole.session.records import record_from_dict, record_to_dict
from tests.controller.helpers import Driver, levels

LINE = "2026/12/06 02:32:06.123, 2, 47600, 49140, 98, 312.45, 71"


def test_query_is_the_real_tools() -> None:
    args = query_args(500)
    assert args[:3] == (
        "nvidia-smi",
        "--query-gpu=" + ",".join(QUERY_FIELDS),
        "--format=csv,noheader,nounits",
    )
    assert args[3:] == ("-lms", "500")


def test_parse_a_sample() -> None:
    s = parse_sample(LINE)
    assert s == GpuSample(2, 47600.0, 49140.0, 98.0, 312.45, 71.0, "2026/12/06 02:32:06.123")
    assert s.memory_share == pytest.approx(47600 / 49140)


@pytest.mark.parametrize(
    "line",
    [
        "2026/12/06 02:32:06.123, 0, 47600 MiB, 49140 MiB, 98 %, 312.45 W, 71",  # units kept
        "2026/12/06 02:32:06.123, 0, 47600, 49140, [N/A], [Not Supported], 71",
    ],
)
def test_units_and_missing_figures(line: str) -> None:
    s = parse_sample(line)
    assert s is not None and s.memory_used_mib == 47600.0
    if "N/A" in line:
        assert s.utilization_pct is None and s.power_w is None


@pytest.mark.parametrize(
    "line",
    [
        "timestamp, index, memory.used [MiB], memory.total [MiB], utilization.gpu [%], "
        "power.draw [W], temperature.gpu",
        "No devices were found",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
        "2026/12/06 02:32:06.123, 0, [N/A], [N/A], 0, 30, 40",  # no memory figures
        "2026/12/06 02:32:06.123, x, 1, 2, 3, 4, 5",
        "1, 2, 3",
        "a," * 5000,
    ],
)
def test_what_is_not_a_sample(line: str) -> None:
    assert parse_sample(line) is None


def _s(index: int, used: float, util: float | None = 90.0, power: float | None = 200.0):
    return GpuSample(index, used, 49140.0, util, power, 60.0)


def test_stats_fold_and_means_skip_missing() -> None:
    stats = fold((), [_s(0, 100), _s(1, 300), _s(0, 200, util=None, power=None)])
    by = {g.index: g for g in stats}
    assert by[0].samples == 2 and by[0].memory_peak_mib == 200 and by[0].memory_mean_mib == 150
    assert by[0].utilization_pct == 90.0 and by[0].power_w == 200.0  # [N/A] left out
    span = GpuSpan(stats)
    assert span.power_w == 400.0  # every GPU's mean, summed
    assert span.memory_peak_mib == 300
    assert span.tokens_per_joule(2000.0) == pytest.approx(5.0)
    assert GpuSpan((GpuStats(0),)).tokens_per_joule(10.0) is None


def test_trial_gpu_round_trips() -> None:
    gpu = TrialGpu().with_load([_s(0, 40000)]).with_ready([_s(0, 44000)])
    gpu = gpu.with_level(64, [_s(0, 44100)]).with_ready([_s(0, 1)])  # ready: the first only
    assert gpu.ready_mib == 44000 and gpu.load_peak_mib == 44000  # ready counts
    assert TrialGpu.from_dict(gpu.to_dict()) == gpu


def _bench_progress(d: Driver, index: int, c: int, *, warmup: bool = False) -> None:
    d.send(
        ev.BenchProgressed(
            progress=BenchProgress(
                level_index=index,
                concurrency=c,
                completed=0,
                failed=0,
                total=4,
                running=c,
                output_tokens=0,
                current_tok_s=0.0,
                elapsed_s=0.5,
                warmup=warmup,
                level_count=2,
            )
        )
    )


def _sampled(d: Driver, *samples: GpuSample) -> None:
    assert d.state.trial is not None
    d.send(ev.GpuSampled(samples=samples, trial_index=d.state.trial.index))


def test_samples_count_where_they_were_taken() -> None:
    d = Driver()
    d.to_phase(Phase.RESTARTING)
    d.send(ev.Restarted())
    start = d.find(fx.StartTelemetry)
    assert isinstance(start, fx.StartTelemetry) and start.trial_index == 0
    _sampled(d, _s(0, 20000), _s(1, 20000))
    _sampled(d, _s(0, 43000), _s(1, 42000))  # the load's peak
    assert [s.memory_used_mib for s in d.state.gpus] == [43000, 42000]
    d.to_phase(Phase.BENCHMARKING)
    _sampled(d, _s(0, 44000, power=100), _s(1, 44000, power=100))  # ready, no level yet
    _bench_progress(d, 0, 1, warmup=True)
    _sampled(d, _s(0, 44000, power=999), _s(1, 44000, power=999))  # a warm-up: no level
    _bench_progress(d, 0, 1)
    _sampled(d, _s(0, 44100, power=150), _s(1, 44100, power=150))
    _bench_progress(d, 1, 4)
    _sampled(d, _s(0, 44200, power=250), _s(1, 44300, power=250))
    d.send(ev.BenchFinished(levels=levels(single=100.0, agg=1000.0)))
    assert fx.StopTelemetry in d.effect_types()
    assert d.state.gpus == ()  # the view ends with the trial
    record = d.find(fx.RecordTrial).record  # type: ignore[attr-defined]
    gpu = record.gpu
    assert gpu.load_peak_mib == 44000 and gpu.ready_mib == 44000
    by_c = {lv.concurrency: lv for lv in record.levels}
    assert by_c[1].gpu.power_w == 300.0 and by_c[1].tokens_per_joule == pytest.approx(100 / 300)
    assert by_c[4].gpu.memory_peak_mib == 44300
    assert by_c[4].tokens_per_joule == pytest.approx(1000 / 500)
    assert record_from_dict(record_to_dict(record)) == record


def test_the_crash_keeps_the_memory_at_the_fatal_line() -> None:
    d = Driver()
    d.to_phase(Phase.LOADING)
    _sampled(d, _s(0, 47600), _s(2, 47700))
    d.send(ev.FatalSeen(cause="kv_cache_no_memory", message="Not enough memory"))
    assert d.state.phase is Phase.CRASHED
    crash = d.state.trial.crash  # type: ignore[union-attr]
    assert [s.memory_used_mib for s in crash.gpu_memory] == [47600, 47700]
    _sampled(d, _s(0, 1), _s(2, 1))  # the process is gone: the view follows, the crash not
    assert d.state.trial.crash.gpu_memory == crash.gpu_memory  # type: ignore[union-attr]
    assert d.state.gpus[0].memory_used_mib == 1


def test_a_late_sample_of_another_trial_changes_nothing() -> None:
    d = Driver()
    d.to_phase(Phase.LOADING)
    before = d.state
    d.send(ev.GpuSampled(samples=(_s(0, 1),), trial_index=7))
    assert d.state == before


def test_a_box_without_gpus_is_said_once_and_not_asked_again() -> None:
    d = Driver()
    d.to_phase(Phase.LOADING)
    d.send(ev.GpuTelemetryAbsent(reason="no nvidia-smi"))
    assert d.state.notice is not None and "no GPUs on this box" in d.state.notice.text
    assert d.effect_types() == [fx.Notify]
    notice = d.state.notice
    d.send(ev.GpuTelemetryAbsent(reason="no nvidia-smi"))
    assert d.effects == () and d.state.notice is notice
    d.finish_trial()
    assert d.state.trial is not None  # the sweep's next trial
    d.to_phase(Phase.LOADING)
    assert fx.StartTelemetry not in d.effect_types()
