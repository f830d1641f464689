"""From the controller's state to the crash banner's view: what happened, what each key
would deploy, and the fixes with the sweep's own axis first.

Why apart from ``ui.adapt``: the banner is where a user decides, and its content draws on
three sources that are not the other panes' — the decisions the machine offers (with the
configuration each would deploy, ``present.keyboard.actions``), the cause in words and the fix on
the
swept axis from the controller's recorded prediction (``present.crashtext``), and the trial
that failed without a crash. Pure functions, no Textual.
"""

from __future__ import annotations

from specconsole.core.machine.intents import Resume
from specconsole.core.machine.state import ControllerState, CrashInfo, Phase
from specconsole.present.crashtext import axis_fix, cause_text
from specconsole.present.figures.gpu import crash_memory
from specconsole.present.formats import DASH
from specconsole.present.keyboard.actions import choice_label
from specconsole.present.keyboard.keys import COMMAND_CHOICES, choice_hints
from specconsole.present.labels import load_stage_label
from specconsole.present.status import status_word
from specconsole.ui.adapt import all_trials
from specconsole.ui.viewmodels import CrashView


def _crash_of(state: ControllerState) -> tuple[int | None, CrashInfo | None]:
    if state.pending is not None and state.pending.crash is not None:
        return state.pending.trial_index, state.pending.crash
    if state.phase is Phase.CRASHED and state.trial is not None and state.trial.crash is not None:
        return state.trial.index, state.trial.crash
    return None, None


def crash_view(state: ControllerState) -> CrashView | None:
    """The banner's content: a crash, or a trial that could not run, awaiting a decision.

    None when there is nothing to decide.
    """
    index, crash = _crash_of(state)
    if crash is None:
        return _failure_view(state)
    where = crash.phase.value.replace("_", " ")
    if crash.load_stage is not None:
        where += f" ({load_stage_label(crash.load_stage)})"
    trial = f"Trial {index + 1}" if index is not None else "The server"
    details = [crash_memory(crash.gpu_memory)] if crash.gpu_memory else []
    details += [crash.message] if crash.message else []
    if crash.exit_status is not None:
        details.append(f"exit status {crash.exit_status}")
    if crash.signal is not None:
        details.append(f"signal {crash.signal}")
    if crash.capacity is not None:
        details.append(f"capacity seen: {crash.capacity:,} tokens")
    record = next((r for r in all_trials(state) if r.index == index), None)
    lead = axis_fix(state, record) if record is not None else None
    engine = record.config.engine if record is not None else None
    return CrashView(
        title=f"{trial} crashed while {where}: {cause_text(crash.cause, engine)}",
        cause=" · ".join(details) if details else DASH,
        excerpt=crash.excerpt,
        fixes=((lead,) if lead else ()) + crash.fixes,
        choices=_choices(state),
        previews=_choices(state, targets=True),
    )


def _choices(state: ControllerState, *, targets: bool = False) -> tuple[tuple[str, str], ...]:
    """The banner's choices (``targets``: each naming what it would deploy); a decision
    already pressed (kept until the crash is recorded, ``core.machine.handlers.deferral``) says it
    is
    queued."""
    queued = {i.choice for i in state.deferred if isinstance(i, Resume)}
    out = []
    for c in choice_hints(state):
        if COMMAND_CHOICES.get(c.id) in queued:
            out.append((c.key, f"{c.label} (queued)"))
        elif targets:
            out.append((c.key, choice_label(state, c.id, c.label)))
        else:
            out.append((c.key, c.label))
    return tuple(out)


def _failure_view(state: ControllerState) -> CrashView | None:
    """A decision pending after a trial that failed without a crash (invalid, deploy error)."""
    pending = state.pending
    if pending is None:
        return None
    record = next((r for r in all_trials(state) if r.index == pending.trial_index), None)
    status = "stopped" if record is None else status_word(record.status)
    errors = () if record is None else record.errors
    return CrashView(
        title=f"Trial {pending.trial_index + 1} could not run: {status}",
        cause=errors[0] if errors else "see the trial's details",
        excerpt=(),
        fixes=tuple(errors[1:]),
        choices=_choices(state),
        previews=_choices(state, targets=True),
    )
