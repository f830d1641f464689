"""When a crash is a crash, and what follows it: a fatal log line, the server's exit or the
load timeout while a trial is LOADING..BENCHMARKING stops everything, stops the server
(never a restart loop) and records the crash once the server is down. What counts as a
fatal line or an exit is decided before, in ``core.machine.handlers.watch``. A remedy is
kept only where it can change the outcome for the configuration that crashed (#39): one whose
every change is already so, or whose ``only_when`` the configuration is not, is not offered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import ServerConfig, parse_value
from specconsole.core.logs.events import SuggestedFix
from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.common import Result, _enter, _load_timeout, _notice, _require_trial
from specconsole.core.machine.handlers.trial import _finish_trial
from specconsole.core.machine.state import (
    ControllerState,
    CrashInfo,
    Phase,
    TrialStatus,
)
from specconsole.core.ports import ServiceState, ServiceStatus


def _crash(
    state: ControllerState,
    at: float,
    *,
    cause: str,
    message: str,
    excerpt: tuple[str, ...] = (),
    fixes: tuple[str, ...] = (),
    exit_status: int | None = None,
    signal: int | None = None,
    source_time: float | None = None,
    status: TrialStatus = TrialStatus.CRASHED,
) -> Result:
    """A crash was detected: stop everything, stop the server, record once it is down."""
    trial = state.trial
    assert trial is not None
    info = CrashInfo(
        cause=cause,
        message=message,
        phase=state.phase,
        load_stage=state.load_stage if state.phase is Phase.LOADING else None,
        excerpt=excerpt or state.log_tail[-20:],
        fixes=fixes,
        exit_status=exit_status,
        signal=signal,
        capacity=trial.capacity,
        detected_at=at,
        source_time=source_time,
        gpu_memory=state.gpus,  # as last sampled: the memory at the fatal line
    )
    was_benchmarking = state.phase is Phase.BENCHMARKING
    new = _enter(replace(state, trial=replace(trial, crash=info, status=status)), Phase.CRASHED, at)
    # The trial has left its pipeline: a new epoch, so the answers still on their way for it
    # (a flush, server info, the benchmark, the old watch) are dropped as stale.
    new = replace(new, epoch=state.epoch + 1)
    deployed = state.deployed
    if deployed is not None:
        new = replace(new, deployed=replace(deployed, serving=False))
    new = _notice(new, "error", f"trial {trial.index + 1} crashed: {message}", at)
    effects: list[fx.Effect] = [fx.CancelTimer(epoch=new.epoch, key=fx.LOAD_TIMER)]
    if was_benchmarking:
        effects.append(fx.CancelBenchmark(epoch=new.epoch))
    effects += [
        fx.Notify(epoch=new.epoch, level="error", text=new.notice.text if new.notice else message),
        fx.StopServer(epoch=new.epoch),
    ]
    return new, tuple(effects)


def _is(config: ServerConfig, key: str, text: str | None) -> bool:
    """Whether ``config``'s ``key`` is the value ``text`` stands for (``None``: unset)."""
    value = getattr(config, key, None)
    if text is None or value is None:
        return text is None and value is None
    try:
        return bool(value == parse_value(config.engine, key, text))
    except (ConfigError, KeyError):
        return False


def useful_fixes(config: ServerConfig | None, fixes: Sequence[SuggestedFix]) -> tuple[str, ...]:
    """The texts of the ``fixes`` that can change the outcome for ``config`` (all of them
    when it is not known)."""
    if config is None:
        return tuple(f.text for f in fixes)
    return tuple(
        fix.text
        for fix in fixes
        if not (fix.changes and all(_is(config, k, v) for k, v in fix.changes))
        and all(any(_is(config, k, v) for v in values) for k, values in fix.only_when)
    )


def _on_fatal(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.FatalSeen)
    trial = state.trial
    config = (trial.normalized or trial.config) if trial is not None else None
    return _crash(
        state,
        event.at,
        cause=event.cause,
        message=event.message,
        excerpt=event.excerpt,
        fixes=useful_fixes(config, event.fixes),
        source_time=event.source_time,
    )


def _on_exited(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.ServerExited)
    st = event.status
    detail = st.detail or st.result or st.state.value
    parts = [f"the server {'exited' if st.state is ServiceState.EXITED else st.state.value}"]
    if st.exit_status is not None:
        parts.append(f"with status {st.exit_status}")
    if st.signal is not None:
        parts.append(f"by signal {st.signal}")
    if st.oom_killed:
        parts.append("(killed by the OOM killer)")
    message = " ".join(parts) + (f": {detail}" if detail and detail not in parts[0] else "")
    return _crash(
        state,
        event.at,
        cause=st.cause or ("oom_killed" if st.oom_killed else "exited"),
        message=message,
        exit_status=st.exit_status,
        signal=st.signal,
    )


def _on_timer(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.TimerFired)
    if event.key != fx.LOAD_TIMER:
        return state, ()
    timeout = _load_timeout(state)
    stage = state.load_stage.value if state.load_stage is not None else "starting"
    return _crash(
        state,
        event.at,
        cause="load_timeout",
        message=f"not ready after {timeout:g} s (stuck in {stage})",
        fixes=("raise [sweep] load_timeout if this model really loads this slowly",),
        status=TrialStatus.LOAD_TIMEOUT,
    )


def _with_exit(crash: CrashInfo, status: ServiceStatus) -> CrashInfo:
    """The crash with the manager's exit status and signal where the crash had none."""
    return replace(
        crash,
        exit_status=crash.exit_status if crash.exit_status is not None else status.exit_status,
        signal=crash.signal if crash.signal is not None else status.signal,
    )


def _on_crashed_server_down(state: ControllerState, event: ev.Event) -> Result:
    """After a crash the server is down (stopped, or its exit seen): record the crash."""
    trial = _require_trial(state, event)
    crash = trial.crash
    status = getattr(event, "status", None)
    if crash is not None and status is not None:
        crash = _with_exit(crash, status)
    new = replace(state, trial=replace(trial, crash=crash))
    errors: tuple[str, ...] = ()
    if isinstance(event, ev.OperationFailed):
        errors = (f"{event.operation}: {event.message}",)
    return _finish_trial(new, trial.status, event.at, errors=errors)


def _on_crashed_exit_seen(state: ControllerState, event: ev.Event) -> Result:
    """The watch saw the exit before StopServer answered: keep its status for the record."""
    assert isinstance(event, ev.ServerExited)
    trial = _require_trial(state, event)
    if trial.crash is None:
        return state, ()
    return replace(state, trial=replace(trial, crash=_with_exit(trial.crash, event.status))), ()


def _observe_down(state: ControllerState, event: ev.Event) -> Result:
    if state.deployed is None or not state.deployed.serving:
        return state, ()
    text = "the server stopped while idle"
    if isinstance(event, ev.FatalSeen):
        text = f"the server logged a fatal error while idle: {event.message}"
    new = replace(state, deployed=replace(state.deployed, serving=False))
    new = _notice(new, "error", text, event.at)
    return new, (fx.Notify(epoch=state.epoch, level="error", text=text),)
