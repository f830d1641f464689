"""Opening the parameter editor and what its ``ctrl+s`` does in the phase it lands in.

Why apart from the app: the editor is opened on the configuration being tried (or the
queued edit, or the plan's base), in the names and rules of the box's release, with the
controller's own capacity prediction and the session's history of the candidate; and its
result is deployed as the next trial, taken as the crash decision *edit then deploy*, or —
while a trial runs — queued (``ui.asking.EditQueue``) instead of being thrown away. The
phase is read again when the editor closes: it may have changed while the form was open.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from specconsole.core.machine.intents import DeployConfig, Intent, Resume
from specconsole.core.machine.state import CapacityPrediction, ControllerState, ResumeChoice
from specconsole.present.charts.series import swept_axis
from specconsole.present.crashtext import seen_before
from specconsole.present.editor_fields import (
    editing_release,
    editor_fields,
    release_line,
    with_release,
)
from specconsole.present.keyboard.actions import apply_block, label
from specconsole.ui.screens.editor import EditorScreen

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig
    from specconsole.ui.asking import EditQueue
    from specconsole.ui.form import Problem, Validator


def _after_crash(state: ControllerState) -> bool:
    pending = state.pending
    return pending is not None and ResumeChoice.EDIT_THEN_DEPLOY in pending.choices


def make_editor(
    state: Callable[[], ControllerState],
    queue: EditQueue,
    *,
    validate: Validator,
    predict: Callable[[ServerConfig], CapacityPrediction | None],
    suggest: Callable[[], tuple[ServerConfig, str] | None],
    withdraw: Callable[[], None],
) -> EditorScreen | None:
    """The editor on the queued edit, else the configuration being tried or deployed, else
    the plan's base (None: nothing to edit)."""
    now = state()
    queued = queue.config
    base = queued or now.current_config
    if base is None and now.plan is not None:
        base = now.plan.base
    if base is None:
        return None
    title = "Edit, then deploy (after crash)" if _after_crash(now) else "Parameters"
    if queued is not None:
        title = f"Queued edit: {label(now, queued)}"
    release, source = editing_release(base, now.engine_version, now.engine_version_source)

    def validate_for_release(config: ServerConfig) -> Sequence[Problem]:
        return validate(with_release(config, release))

    return EditorScreen(
        base,
        now.deployed_config,
        validate=validate_for_release,
        predict=predict,
        suggest=suggest,
        title=title,
        fields=editor_fields(base.engine, release),
        release=release_line(base.engine, release, source),
        history=lambda config: seen_before(state().trials, config),
        apply_note=apply_block(now),
        on_withdraw=withdraw if queued is not None else None,
        axis=swept_axis(now.plan, now.trials),
    )


def apply_edit(
    state: ControllerState,
    config: ServerConfig,
    queue: EditQueue,
    send: Callable[[Intent], None],
) -> None:
    """``ctrl+s``'s configuration in the phase it lands in: queued while a trial runs, the
    crash decision after a crash, else deployed as the next trial."""
    if apply_block(state) is not None:
        queue.put(state, config)
        return
    queue.withdraw_silently()  # a newer edit replaces a queued one
    if _after_crash(state):
        send(Resume(choice=ResumeChoice.EDIT_THEN_DEPLOY, config=config))
    else:
        send(DeployConfig(config=config))
