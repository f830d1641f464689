"""What each deploy changes on the box, as the console shows it: the diff pane's entries,
the kind of every diff line, and which configuration an intent would deploy.

Why here: the console's diff pane (``v``) and its first-deploy confirmation show the same
unified diffs the headless driver prints and the trial records keep (``deploy_diff``,
already redacted). Picking the entries (the deploy in progress, or before any the next one,
then every recorded trial)
and classifying lines (added, removed, hunk, file header) is presentation, not Textual, so
it is tested without an app. ``deploying_config`` asks the pure state machine which
configuration an intent would deploy next (a sweep's first trial, ``d``, a retry), and
``as_deployed`` puts a configuration through the machine's own validation, so the
confirmation previews exactly what the controller is about to do. Both load the machine when
first asked (a key's target, a confirmation, the editor's prediction), not with this module:
the console's first frame draws before any question, and the controller, which starts right
after it, loads the machine anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from specconsole.core.machine.intents import DeployConfig, Intent, StartSweep
from specconsole.present.labels import config_label, record_label

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig
    from specconsole.core.machine.state import ControllerState, TrialRecord

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


def deploying_config(state: ControllerState, intent: Intent) -> ServerConfig | None:
    """The configuration ``intent`` would deploy as its next step in ``state``, or None when
    it deploys nothing now (a benchmark, a pause, a reattach, or an intent the controller
    would refuse or queue)."""
    from specconsole.core.machine import effects as fx  # the machine: with the first question
    from specconsole.core.machine.common import IllegalTransition
    from specconsole.core.machine.table import step

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
    config = deploying_config(state, StartSweep(at=at))
    if config is not None:
        return f"next deploy (s starts the sweep with it): {config_label(config, base)}", config
    target = deploy_target(state)
    if target is None:
        return None
    config = deploying_config(state, DeployConfig(config=target, at=at))
    if config is None:
        return None
    return f"next deploy (d): {config_label(config, base)}", config


def as_deployed(config: ServerConfig) -> ServerConfig:
    """``config`` as the controller will deploy it: normalized by the same validation
    (``core.machine.results.validate_config``), e.g. SGLang's draft tokens = steps + 1."""
    from specconsole.core.machine.events import ConfigValidated  # with the first question
    from specconsole.core.machine.results import validate_config

    outcome = validate_config(config)
    return outcome.config if isinstance(outcome, ConfigValidated) else config
