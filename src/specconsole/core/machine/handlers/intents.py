"""The user's intents: start, pause, cancel, deploy, benchmark only, resume (the decision
after a crash), the crash policy and quit. Each either starts or ends a trial, or changes
what happens after the current one.
"""

from __future__ import annotations

from dataclasses import replace

from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.common import (
    IllegalTransition,
    Result,
    _enter,
    _notice,
    _require_trial,
    _rest,
)
from specconsole.core.machine.handlers import telemetry
from specconsole.core.machine.handlers.trial import (
    _available_choices,
    _begin_trial,
    _continue_sweep,
    _finish_trial,
    _peek_next,
)
from specconsole.core.machine.state import (
    ControllerState,
    Phase,
    ResumeChoice,
    TrialKind,
    TrialStatus,
)


def _on_start_sweep(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.StartSweep)
    plan = event.plan or state.plan
    if plan is None:
        raise IllegalTransition(state.phase, event, "no plan loaded")
    policy = event.policy or plan.on_crash
    last_good = state.last_good
    if last_good is None:  # a resumed session: the rollback target is in the records
        good = [
            t.config
            for t in state.trials
            if t.status is TrialStatus.OK and t.kind is not TrialKind.BENCH_ONLY
        ]
        last_good = good[-1] if good else None
    new = replace(
        state,
        last_good=last_good,
        plan=plan,
        policy=policy,
        sweep_active=True,
        pause_requested=False,
        pending=None,
        finished_reason="",
        sweep_started_at=state.sweep_started_at if state.sweep_started_at is not None else event.at,
        reattach_allowed=event.resume,
    )
    return _continue_sweep(new, event.at)


def _on_pause(state: ControllerState, event: ev.Event) -> Result:
    if not state.sweep_active:
        raise IllegalTransition(state.phase, event, "no sweep is running")
    flag = not state.pause_requested
    text = "the sweep pauses after this trial" if flag else "pause withdrawn"
    new = _notice(replace(state, pause_requested=flag), "info", text, event.at)
    return new, (fx.Notify(epoch=state.epoch, level="info", text=text),)


def _on_cancel_busy(state: ControllerState, event: ev.Event) -> Result:
    trial = _require_trial(state, event)
    effects: list[fx.Effect] = [fx.AbortOperations(epoch=state.epoch)]
    if state.phase is Phase.LOADING:
        effects.append(fx.CancelTimer(epoch=state.epoch, key=fx.LOAD_TIMER))
    if state.phase is Phase.BENCHMARKING:
        effects.append(fx.CancelBenchmark(epoch=state.epoch))
    text = f"trial {trial.index + 1} cancelled in {state.phase.value}"
    new = _notice(state, "warning", text, event.at)
    effects.append(fx.Notify(epoch=state.epoch, level="warning", text=text))
    return _finish_trial(
        new,
        TrialStatus.CANCELLED,
        event.at,
        note=f"cancelled in {state.phase.value}",
        extra=tuple(effects),
    )


def _on_cancel_recording(state: ControllerState, event: ev.Event) -> Result:
    """The trial is already finished: cancelling means "stop after recording it"."""
    if not state.sweep_active:
        return state, ()
    return _notice(
        replace(state, pause_requested=True),
        "info",
        "the sweep stops after this trial is recorded",
        event.at,
    ), ()


def _on_cancel_resting(state: ControllerState, event: ev.Event) -> Result:
    """Cancel while paused or awaiting a decision abandons the sweep."""
    if not state.sweep_active:
        raise IllegalTransition(state.phase, event, "nothing to cancel")
    new = replace(
        _rest(state, Phase.CANCELLED, event.at),
        sweep_active=False,
        pending=None,
        pause_requested=False,
    )
    new = _notice(new, "warning", "sweep abandoned", event.at)
    return new, (fx.SaveSession(epoch=new.epoch),)


def _on_deploy_config(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.DeployConfig)
    if state.phase is Phase.AWAITING_DECISION:
        return _on_resume(
            state,
            ev.Resume(at=event.at, choice=ResumeChoice.EDIT_THEN_DEPLOY, config=event.config),
        )
    return _begin_trial(
        state,
        event.config,
        TrialKind.MANUAL,
        event.at,
        reason="deployed from the editor",
        pause_after=state.sweep_active,
    )


def _on_benchmark_only(state: ControllerState, event: ev.Event) -> Result:
    deployed = state.deployed
    if deployed is None or not deployed.serving:
        raise IllegalTransition(
            state.phase, event, "no server is serving: deploy a configuration first"
        )
    new, begun = _begin_trial(
        state,
        deployed.config,
        TrialKind.BENCH_ONLY,
        event.at,
        reason="benchmark only",
        pause_after=state.sweep_active,
    )
    trial = new.trial
    assert trial is not None
    # nothing to validate or deploy: the trial starts at READY
    new = replace(new, trial=replace(trial, artifact_hash=deployed.artifact_hash, phases=()))
    new = _enter(new, Phase.READY, event.at, "benchmark only")
    return new, (
        *(e for e in begun if isinstance(e, fx.Notify)),
        fx.StartWatch(epoch=new.epoch, trial_index=trial.index, continue_previous=True),
        *telemetry.start(new, trial),
        fx.FetchServerInfo(epoch=new.epoch),
    )


def _on_resume(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.Resume)
    at = event.at
    choice = event.choice
    allowed = _available_choices(state)
    if choice not in allowed:
        raise IllegalTransition(
            state.phase,
            event,
            f"{choice.value} is not available now (choose one of "
            f"{', '.join(c.value for c in allowed)})",
        )
    base = replace(state, pending=None, pause_requested=False)
    if choice is ResumeChoice.RESUME_NEXT:
        new = replace(base, sweep_active=True)
        return _continue_sweep(new, at)
    if choice is ResumeChoice.RETRY_SAME:
        last = state.trials[-1]
        return _begin_trial(
            base,
            last.config,
            TrialKind.RETRY,
            at,
            reason=f"retry of trial {last.index + 1}",
            pause_after=state.phase is not Phase.AWAITING_DECISION and state.sweep_active,
        )
    if choice is ResumeChoice.EDIT_THEN_DEPLOY:
        if event.config is None:
            raise IllegalTransition(state.phase, event, "edit_then_deploy needs a configuration")
        return _begin_trial(
            base,
            event.config,
            TrialKind.MANUAL,
            at,
            reason="edited after a crash",
            pause_after=state.phase is not Phase.AWAITING_DECISION and state.sweep_active,
        )
    if choice is ResumeChoice.SKIP:
        skipped = _peek_next(state)
        assert skipped is not None  # guaranteed by _available_choices
        new = replace(base, skipped_configs=(*state.skipped_configs, skipped), sweep_active=True)
        text = "skipping the next planned configuration"
        new = _notice(new, "info", text, at, skipped)
        nxt, effects = _continue_sweep(new, at)
        return nxt, (fx.Notify(epoch=state.epoch, level="info", text=text), *effects)
    # ROLLBACK
    assert state.last_good is not None
    return _begin_trial(
        base, state.last_good, TrialKind.ROLLBACK, at, reason="roll back to the last good config"
    )


def _on_set_policy(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.SetPolicy)
    return replace(state, policy=event.policy), ()


def _on_quit(state: ControllerState, event: ev.Event) -> Result:
    assert isinstance(event, ev.Quit)
    effects: list[fx.Effect] = []
    if state.phase is Phase.BENCHMARKING:
        effects.append(fx.CancelBenchmark(epoch=state.epoch))
    if state.busy:
        effects.append(fx.AbortOperations(epoch=state.epoch))
    effects += [
        fx.SaveSession(epoch=state.epoch),
        fx.Shutdown(epoch=state.epoch, stop_server=event.stop_server),
    ]
    return replace(state, quitting=True), tuple(effects)
