"""What the machine makes of the GPUs' samples: the live view, and where each sample counts
in the trial's record.

Why its own module: sampling is observation, not a step of the trial — it never changes the
phase — but its figures belong to the trial: a sample taken while the server loads counts
towards the load's peak, the first once it is ready is the memory at ready, one taken while a
ladder level is measured counts towards that level (its peak, means and, with its tok/s,
tokens per joule), and the latest when a crash is seen is the memory at the fatal line
(``core.machine.handlers.crash`` copies :attr:`ControllerState.gpus`). The trial's sampling starts
with
its server (:func:`start`) and stops with the trial (:func:`stop`, in ``_finish_trial``); a
box without GPUs is said once (:func:`on_absent`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.common import Result, _notice
from specconsole.core.machine.state import ControllerState, Phase, TrialRecord
from specconsole.core.measure.gpu import GpuSample, TrialGpu
from specconsole.core.measure.trials import LevelSummary

__all__ = ["attach_levels", "on_absent", "on_lost", "on_sampled", "start", "stop"]

_LOADING = frozenset({Phase.DEPLOYING, Phase.RESTARTING, Phase.LOADING})
_SERVING = frozenset({Phase.READY, Phase.FLUSHING, Phase.BENCHMARKING})


def start(state: ControllerState, trial: TrialRecord) -> tuple[fx.Effect, ...]:
    """The effect that samples the GPUs for ``trial`` (none once the box is known to have
    none to sample)."""
    if state.gpu_absent:
        return ()
    return (fx.StartTelemetry(epoch=state.epoch, trial_index=trial.index),)


def stop(state: ControllerState) -> tuple[fx.Effect, ...]:
    return () if state.gpu_absent else (fx.StopTelemetry(epoch=state.epoch),)


def _latest(shown: Sequence[GpuSample], samples: Sequence[GpuSample]) -> tuple[GpuSample, ...]:
    by_index = {s.index: s for s in shown}
    by_index.update({s.index: s for s in samples})
    return tuple(by_index[i] for i in sorted(by_index))


def _measured_level(state: ControllerState) -> int | None:
    """The concurrency of the ladder level being measured now (not its warm-up), if any."""
    for level in state.bench:
        if level.done:
            continue
        started = level.running or level.completed or level.failed or level.elapsed_s > 0
        return level.concurrency if started and not level.warmup else None
    return None


def on_sampled(state: ControllerState, event: ev.Event) -> Result:
    """A sample of every GPU: the live view, and the trial's figures for the phase it was
    taken in. A sample for another trial (a late one of the last) changes nothing."""
    assert isinstance(event, ev.GpuSampled)
    trial = state.trial
    if trial is None or event.trial_index != trial.index or not event.samples:
        return state, ()
    new = replace(state, gpus=_latest(state.gpus, event.samples), gpu_lost="")
    gpu = trial.gpu or TrialGpu()
    if state.phase in _LOADING:
        gpu = gpu.with_load(event.samples)
    elif state.phase in _SERVING:
        gpu = gpu.with_ready(event.samples)
        concurrency = _measured_level(state) if state.phase is Phase.BENCHMARKING else None
        if concurrency is not None:
            gpu = gpu.with_level(concurrency, event.samples)
    else:  # crashed, recording: the view follows, the record is settled
        return new, ()
    return replace(new, trial=replace(trial, gpu=gpu)), ()


def on_lost(state: ControllerState, event: ev.Event) -> Result:
    """The samples stopped: the live view drops the last one (it would read as now), the
    trial's record says why its GPU figures end there, and a notice says it once."""
    assert isinstance(event, ev.GpuTelemetryLost)
    if state.gpu_lost == event.reason:
        return state, ()
    text = f"GPU telemetry lost ({event.reason}): the GPU figures stop here, they are not 0"
    new = _notice(replace(state, gpus=(), gpu_lost=event.reason), "warning", text, event.at)
    trial = new.trial
    if trial is not None and event.trial_index == trial.index:
        gpu = trial.gpu or TrialGpu()
        new = replace(new, trial=replace(trial, gpu=replace(gpu, lost=event.reason)))
    return new, (fx.Notify(epoch=state.epoch, level="warning", text=text),)


def on_absent(state: ControllerState, event: ev.Event) -> Result:
    """The box has no GPU to sample: said once, never asked again."""
    assert isinstance(event, ev.GpuTelemetryAbsent)
    if state.gpu_absent:
        return state, ()
    text = f"no GPUs on this box ({event.reason}): no GPU telemetry"
    new = _notice(replace(state, gpu_absent=event.reason or "none"), "info", text, event.at)
    return new, (fx.Notify(epoch=state.epoch, level="info", text=text),)


def attach_levels(levels: Sequence[LevelSummary], gpu: TrialGpu | None) -> tuple[LevelSummary, ...]:
    """Each level with what the GPUs did while it was measured (by concurrency)."""
    if gpu is None or not gpu.levels:
        return tuple(levels)
    return tuple(replace(lv, gpu=gpu.level(lv.concurrency) or lv.gpu) for lv in levels)
