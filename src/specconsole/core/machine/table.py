"""The transition table and the entry point: ``step(state, event)`` looks up (phase, event
type) in ``TRANSITIONS`` (or ``ANYWHERE``), drops stale answers of an earlier epoch and
raises ``IllegalTransition`` for everything else. The intents' rows are the phases
``core.machine.intents.ACCEPTED`` names (which the key hints read), each given its handler
here. The observation handlers (log tail, connection, benign races, what a
resting controller learns about the server) live here with the table that names them.
"""

from __future__ import annotations

from dataclasses import replace

from specconsole.core.machine import events as ev
from specconsole.core.machine.common import (
    LOG_TAIL_LINES,
    WATCHED_PHASES,
    Handler,
    IllegalTransition,
    Result,
    _notice,
)
from specconsole.core.machine.handlers import measuring
from specconsole.core.machine.handlers.crash import (
    _observe_down,
    _on_crashed_exit_seen,
    _on_crashed_server_down,
    _on_exited,
    _on_fatal,
    _on_timer,
)
from specconsole.core.machine.handlers.deferral import defer, deferrable, release
from specconsole.core.machine.handlers.intents import (
    _on_benchmark_only,
    _on_cancel_busy,
    _on_cancel_recording,
    _on_cancel_resting,
    _on_deploy_config,
    _on_pause,
    _on_quit,
    _on_resume,
    _on_set_policy,
    _on_start_sweep,
)
from specconsole.core.machine.handlers.pipeline import (
    _on_bench_finished,
    _on_bench_level_finished,
    _on_bench_progress,
    _on_capacity,
    _on_deploy_previewed,
    _on_deployed,
    _on_flushed,
    _on_invalid,
    _on_load_stage,
    _on_operation_failed_busy,
    _on_ready,
    _on_reattach_checked,
    _on_record_failed,
    _on_recorded,
    _on_restarted,
    _on_server_info,
    _on_validated,
    _trial_bench_spec,
)
from specconsole.core.machine.handlers.preflight import on_preflight
from specconsole.core.machine.handlers.speculation import on_speculation_off
from specconsole.core.machine.handlers.telemetry import on_absent, on_lost, on_sampled
from specconsole.core.machine.intents import ACCEPTED, ACTIVE, DECIDING, FINISHING
from specconsole.core.machine.state import (
    BUSY_PHASES,
    RESTING_PHASES,
    ConnectionState,
    ControllerState,
    Phase,
)

_ANY_EPOCH = (
    ev.ConnectionChanged,
    ev.PoolChanged,
    ev.BoxProbed,
    ev.EngineVersionKnown,
    ev.PreflightChecked,
    ev.GpuSampled,
    ev.GpuTelemetryLost,
    ev.GpuTelemetryAbsent,
)
"""Outcomes about the box or the pool, not a trial: they hold in every epoch (a GPU sample
names the trial it was taken for)."""


def step(state: ControllerState, event: ev.Event) -> Result:
    """Apply one event; return the new state and the effects the runtime must perform."""
    etype = type(event)
    if (
        isinstance(event, ev.Outcome)
        and event.epoch != state.epoch
        and etype not in _ANY_EPOCH
        and not _current_trials_log(state, event)
    ):
        return state, ()  # an answer for an earlier trial, or a stage the trial has left
    handler = TRANSITIONS.get((state.phase, etype)) or ANYWHERE.get(etype)
    if handler is None:
        if state.phase in RESTING_PHASES and isinstance(event, ev.Outcome):
            return state, ()  # a late answer of a cancelled trial
        if isinstance(event, ev.Intent) and deferrable(state, event):
            return defer(state, event)  # applied once the trial is recorded
        raise IllegalTransition(state.phase, event)
    return release(handler(state, event), step)


def _current_trials_log(state: ControllerState, event: ev.Event) -> bool:
    """Log lines of the trial in progress stay wanted after its crash began a new epoch."""
    return (
        isinstance(event, ev.LogLines)
        and state.trial is not None
        and event.trial_index == state.trial.index
    )


def _on_log_lines(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.LogLines)
    if not event.lines:
        return state, ()
    tail = (*state.log_tail, *event.lines)[-LOG_TAIL_LINES:]
    return replace(state, log_tail=tail), ()


def _on_pool_changed(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.PoolChanged)
    return replace(state, pool=event.view), ()


def _on_engine_version(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.EngineVersionKnown)
    new = replace(state, engine_version=event.version, engine_version_source=event.source)
    if event.note:
        new = _notice(new, "warning" if event.version is None else "info", event.note, event.at)
    return new, ()


def _on_focus_box(state: ControllerState, event: ev.Event) -> Result:
    """The pool's console handle switches its view; a box's own machine has nothing to do."""
    assert isinstance(event, ev.FocusBox)
    return state, ()


def _on_connection(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.ConnectionChanged)
    new = replace(state, connection=event.state)
    if event.state in (ConnectionState.LOST, ConnectionState.RECONNECTING) and event.detail:
        new = _notice(new, "warning", f"connection {event.state.value}: {event.detail}", event.at)
    return new, ()


def _on_box_probed(state: ControllerState, event: ev.Event) -> Result:
    """The box as the probe found it; an unreachable box is shown at once (a notice and the
    connection state), not on the first deploy."""
    assert isinstance(event, ev.BoxProbed)
    probe = event.probe
    new = replace(state, box=probe)
    if probe.reachable:
        if state.connection is ConnectionState.UNKNOWN:
            new = replace(new, connection=ConnectionState.CONNECTED)
        return new, ()
    new = replace(new, connection=ConnectionState.LOST)
    word = "box not usable" if probe.error_kind == "sudo" else "box unreachable"
    return _notice(new, "error", f"{word}: {probe.error}", event.at), ()


def _on_level_finished(state: ControllerState, event: ev.Event) -> Result:
    """A level's figures (the pipeline's), then pruning's verdict on them (measuring)."""
    assert isinstance(event, ev.BenchLevelFinished)
    return measuring.after_level(state, event, _on_bench_level_finished(state, event))


def _on_benchmark_done(state: ControllerState, event: ev.Event) -> Result:
    """A rate probe's outcome goes to the rate search (measuring); any other benchmark's,
    or one that measured nothing, to the pipeline."""
    assert isinstance(event, ev.BenchFinished)
    probed = measuring.after_probe(state, event, _trial_bench_spec(state))
    return probed if probed is not None else _on_bench_finished(state, event)


def _ignore(state: ControllerState, event: ev.Event) -> Result:
    return state, ()


def _observe_ready(state: ControllerState, event: ev.Event) -> Result:
    if state.deployed is None:
        return state, ()
    return replace(state, deployed=replace(state.deployed, serving=True)), ()


def _observe_capacity(state: ControllerState, event: ev.Event) -> Result:
    """Replayed load lines after a reattach: keep the capacity for the record."""
    assert isinstance(event, ev.CapacitySeen)
    if state.trial is None or state.trial.capacity is not None:
        return state, ()
    return _on_capacity(state, event)


# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------

TRANSITIONS: dict[tuple[Phase, type[ev.Event]], Handler] = {}
"""(phase, event type) → handler. Everything not here (or in ANYWHERE) is illegal."""


def _on(
    phases: frozenset[Phase] | set[Phase] | tuple[Phase, ...],
    etype: type[ev.Event],
    handler: Handler,
) -> None:
    for phase in phases:
        TRANSITIONS[(phase, etype)] = handler


# intents: where each is accepted is core.machine.intents.ACCEPTED; here, how
_on(ACCEPTED[ev.StartSweep], ev.StartSweep, _on_start_sweep)
_on(ACCEPTED[ev.Pause], ev.Pause, _on_pause)
_on(ACTIVE, ev.Cancel, _on_cancel_busy)
_on(FINISHING, ev.Cancel, _on_cancel_recording)
_on(DECIDING, ev.Cancel, _on_cancel_resting)
_on(ACCEPTED[ev.DeployConfig], ev.DeployConfig, _on_deploy_config)
_on(ACCEPTED[ev.BenchmarkOnly], ev.BenchmarkOnly, _on_benchmark_only)
_on(ACCEPTED[ev.Resume], ev.Resume, _on_resume)

# the trial pipeline
_on((Phase.VALIDATING,), ev.ConfigValidated, _on_validated)
_on((Phase.VALIDATING,), ev.ConfigInvalid, _on_invalid)
_on((Phase.VALIDATING,), ev.ReattachChecked, _on_reattach_checked)
_on((Phase.DEPLOYING,), ev.DeployPreviewed, _on_deploy_previewed)
_on((Phase.DEPLOYING,), ev.DeployDone, _on_deployed)
_on((Phase.RESTARTING,), ev.Restarted, _on_restarted)
_on(ACTIVE, ev.OperationFailed, _on_operation_failed_busy)
_on((Phase.LOADING,), ev.LoadStageSeen, _on_load_stage)
_on((Phase.LOADING,), ev.CapacitySeen, _on_capacity)
_on((Phase.READY, Phase.FLUSHING, Phase.BENCHMARKING), ev.CapacitySeen, _observe_capacity)
_on((Phase.LOADING,), ev.ServerReady, _on_ready)
_on(WATCHED_PHASES, ev.FatalSeen, _on_fatal)
_on(WATCHED_PHASES, ev.SpeculationOffSeen, on_speculation_off)
_on(WATCHED_PHASES, ev.ServerExited, _on_exited)
_on((Phase.LOADING,), ev.TimerFired, _on_timer)
_on((Phase.READY,), ev.ServerInfoFetched, _on_server_info)
_on((Phase.FLUSHING,), ev.CacheFlushed, _on_flushed)
_on((Phase.BENCHMARKING,), ev.BenchProgressed, _on_bench_progress)
_on((Phase.BENCHMARKING,), ev.BenchLevelFinished, _on_level_finished)
_on((Phase.BENCHMARKING,), ev.BenchFinished, _on_benchmark_done)
_on((Phase.RECORDING,), ev.TrialRecorded, _on_recorded)
_on((Phase.RECORDING,), ev.OperationFailed, _on_record_failed)
_on((Phase.CRASHED,), ev.ServerStopped, _on_crashed_server_down)
_on((Phase.CRASHED,), ev.OperationFailed, _on_crashed_server_down)
_on((Phase.CRASHED,), ev.ServerExited, _on_crashed_exit_seen)

# benign races: replayed or duplicated watch events while the trial is past loading
_on((Phase.READY, Phase.FLUSHING, Phase.BENCHMARKING), ev.ServerReady, _ignore)
_on((Phase.READY, Phase.FLUSHING, Phase.BENCHMARKING), ev.LoadStageSeen, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.FatalSeen, _ignore)
_on((Phase.CRASHED, Phase.RECORDING, *RESTING_PHASES), ev.SpeculationOffSeen, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.ServerReady, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.LoadStageSeen, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.CapacitySeen, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.BenchProgressed, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.BenchLevelFinished, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.BenchFinished, _ignore)
_on((Phase.CRASHED, Phase.RECORDING), ev.TimerFired, _ignore)
_on((Phase.RECORDING,), ev.ServerExited, _ignore)
_on((Phase.RECORDING,), ev.ServerStopped, _ignore)
_on(BUSY_PHASES - {Phase.CRASHED}, ev.ServerStopped, _ignore)
_on(WATCHED_PHASES - {Phase.LOADING}, ev.TimerFired, _ignore)

# resting phases: watch events only update what is known about the server
_on(RESTING_PHASES, ev.ServerReady, _observe_ready)
_on(RESTING_PHASES, ev.ServerExited, _observe_down)
_on(RESTING_PHASES, ev.FatalSeen, _observe_down)

ANYWHERE: dict[type[ev.Event], Handler] = {
    ev.LogLines: _on_log_lines,
    ev.ConnectionChanged: _on_connection,
    ev.BoxProbed: _on_box_probed,
    ev.PoolChanged: _on_pool_changed,
    ev.EngineVersionKnown: _on_engine_version,
    ev.PreflightChecked: on_preflight,
    ev.GpuSampled: on_sampled,
    ev.GpuTelemetryAbsent: on_absent,
    ev.GpuTelemetryLost: on_lost,
    ev.FocusBox: _on_focus_box,
    ev.SetPolicy: _on_set_policy,
    ev.Quit: _on_quit,
}
"""Event types handled the same way in every phase."""
