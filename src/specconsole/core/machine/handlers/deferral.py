"""Intents that arrive a moment too early: kept, then applied or refused — never lost.

Why: a crash is shown the instant it is detected, while the controller is still stopping
the server and recording the trial (``CRASHED``, then ``RECORDING``); the decision it asks
for (``Resume``) is legal only once the record is durable (``AWAITING_DECISION``). An
operator presses ``r`` as soon as the banner appears. Instead of refusing that intent, the
machine keeps it in ``ControllerState.deferred`` and, as soon as it leaves those phases,
replays it through ``step``: applied if it is legal then, otherwise refused with a warning
notice that says why (for instance: under ``on_crash = "auto"`` the sweep went on by itself).

Only the short, self-ending phases defer (``intents.DEFERRING_PHASES``); in the long ones (loading,
benchmarking) an intent that is not legal is refused at once, as before. At most one intent
of each type is kept (the latest), so a key held down cannot pile up work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.common import IllegalTransition
from specconsole.core.machine.intents import DEFERRABLE, DEFERRING_PHASES
from specconsole.core.machine.state import ControllerState, Notice

Result = tuple[ControllerState, tuple[fx.Effect, ...]]
Step = Callable[[ControllerState, ev.Event], Result]

_VERBS: dict[type[ev.Intent], str] = {
    ev.Resume: "resume",
    ev.DeployConfig: "deploy",
    ev.StartSweep: "start sweep",
    ev.BenchmarkOnly: "benchmark",
}


def deferrable(state: ControllerState, event: ev.Event) -> bool:
    """``event`` is an intent to keep rather than refuse in ``state``."""
    return state.phase in DEFERRING_PHASES and isinstance(event, DEFERRABLE)


def defer(state: ControllerState, intent: ev.Intent) -> Result:
    """Keep ``intent`` (replacing a kept one of the same type) and say so."""
    kept = tuple(i for i in state.deferred if type(i) is not type(intent))
    verb = _VERBS.get(type(intent), type(intent).__name__)
    text = f"{verb}: queued until the {state.phase.value} trial is recorded"
    notice = Notice("info", text, intent.at)
    return replace(state, deferred=(*kept, intent), notice=notice), ()


def release(result: Result, step: Step) -> Result:
    """Once the state has left the deferring phases, replay the kept intents in order;
    an intent that is not legal then is refused with a warning notice naming why."""
    state, effects = result
    if not state.deferred or state.phase in DEFERRING_PHASES:
        return result
    kept, state = state.deferred, replace(state, deferred=())
    out = list(effects)
    for intent in kept:
        try:
            state, more = step(state, intent)
        except IllegalTransition as exc:
            verb = _VERBS.get(type(intent), type(intent).__name__)
            text = f"{verb} (pressed while the trial was recorded) refused: {exc}"
            state = replace(state, notice=Notice("warning", text, intent.at))
            more = (fx.Notify(epoch=state.epoch, level="warning", text=text),)
        out.extend(more)
    return state, tuple(out)
