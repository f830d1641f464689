"""What each deploy changes on the box, as the console shows it: the diff pane's entries,
the kind of every diff line, and which configuration an intent would deploy.

Why here: the console's diff pane (``v``) and its first-deploy confirmation show the same
unified diffs the headless driver prints and the trial records keep (``deploy_diff``,
already redacted). Picking the entries (the deploy in progress, or before any the next one,
then every recorded trial)
and classifying lines (added, removed, hunk, file header) is presentation, not Textual, so
it is tested without an app. ``deploying_config`` asks the pure state machine which
configuration an intent would deploy next (a sweep's first trial, ``d``, a retry), so the
confirmation previews exactly what the controller is about to do.
"""

from __future__ import annotations

from dataclasses import dataclass

from specconsole.core.config.model import ServerConfig
from specconsole.core.machine import IllegalTransition, step
from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import ControllerState, TrialRecord
from specconsole.present.labels import config_label, record_label

PENDING_KEY = "pending"
"""The entry key of the deploy in progress (trial entries are keyed by their row key)."""
NEXT_KEY = "next"
"""The entry key of the preview of the next deploy (``s`` or ``d``), before it happens."""

NO_CHANGE = "(no change: the box already has exactly this)"
"""Shown for an empty diff."""


@dataclass(frozen=True, slots=True)
class DiffEntry:
    """One diff the pane can show."""

    key: str
    """``PENDING_KEY`` or the trial's row key (its index)."""
    title: str
    diff: str
    """Unified diff, values of environment variables already redacted ("" = no change)."""


def line_kind(line: str) -> str:
    """``header`` (---/+++), ``hunk`` (@@), ``add``, ``remove`` or ``context``."""
    if line.startswith(("--- ", "+++ ")):
        return "header"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "remove"
    return "context"


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """``(kind, line)`` for every line of ``diff`` (one ``NO_CHANGE`` line when empty). The
    ``+``/``-`` prefixes stay, so the diff reads the same without colour."""
    if not diff.strip():
        return [("context", NO_CHANGE)]
    return [(line_kind(line), line) for line in diff.rstrip("\n").splitlines()]


def _title(record: TrialRecord, state: ControllerState, *, pending: bool) -> str:
    base = state.plan.base if state.plan is not None else None
    label = record_label(record, base)
    what = "deploying now" if pending else record.status.value
    return f"trial {record.index + 1}: {label} ({what})"


def diff_entries(state: ControllerState) -> list[DiffEntry]:
    """The deploy in progress (once its diff is known), then every recorded trial that
    deployed, newest first."""
    out: list[DiffEntry] = []
    recorded = {t.index for t in state.trials}
    trial = state.trial
    if trial is not None and trial.index not in recorded and trial.deploy_diff:
        out.append(DiffEntry(PENDING_KEY, _title(trial, state, pending=True), trial.deploy_diff))
    for record in reversed(state.trials):
        if record.deploy_diff or record.artifact_hash:
            title = _title(record, state, pending=False)
            out.append(DiffEntry(str(record.index), title, record.deploy_diff))
    return out


def deploying_config(state: ControllerState, intent: ev.Intent) -> ServerConfig | None:
    """The configuration ``intent`` would deploy as its next step in ``state``, or None when
    it deploys nothing now (a benchmark, a pause, a reattach, or an intent the controller
    would refuse or queue)."""
    try:
        _new, effects = step(state, intent)
    except IllegalTransition:
        return None
    for effect in effects:
        if isinstance(effect, fx.Validate | fx.Deploy):
            return effect.config
    return None


def deploy_target(state: ControllerState) -> ServerConfig | None:
    """What ``d`` deploys: the configuration being tried or deployed, else (nothing tried
    yet) the plan's first configuration (its base alone may leave the swept fields unset)."""
    config = state.current_config
    if config is None and state.plan is not None:
        grid = state.plan.grid()
        config = grid[0] if grid else state.plan.base
    return config


def next_deploy(state: ControllerState, at: float) -> tuple[str, ServerConfig] | None:
    """What the next deploy would be while none is in progress: the sweep's first trial
    (``s``), else ``d``'s configuration; ``(title, config)`` or None."""
    base = state.plan.base if state.plan is not None else None
    config = deploying_config(state, ev.StartSweep(at=at))
    if config is not None:
        return f"next deploy (s starts the sweep with it): {config_label(config, base)}", config
    target = deploy_target(state)
    if target is None:
        return None
    config = deploying_config(state, ev.DeployConfig(config=target, at=at))
    if config is None:
        return None
    return f"next deploy (d): {config_label(config, base)}", config
