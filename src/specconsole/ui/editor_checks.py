"""The editor's checks: the core's validation rules, its capacity prediction and the
optimiser's next suggestion, as the parameter editor asks for them.

Why its own module: each is the core's own answer (the rules the controller validates with,
the predictor it fits to the session's trials, the strategy it runs), and together they
bring the engine's rules, the search and the machine's budget. The console loads this module
when the editor first asks (``ui.app``), not with its first frame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from specconsole.core.config.validation import validate
from specconsole.core.machine.common import _minimum_capacity as minimum_capacity
from specconsole.core.search.capacity import predict_capacity as core_predict_capacity
from specconsole.core.search.strategy import Proposal
from specconsole.core.search.strategy import suggest_next as core_suggest_next
from specconsole.present.deploys.diffs import as_deployed
from specconsole.ui.adapt import all_trials
from specconsole.ui.form import Problem

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig
    from specconsole.core.machine.state import CapacityPrediction, ControllerState


def predict_capacity(config: ServerConfig, state: ControllerState) -> CapacityPrediction:
    """The controller's own KV-capacity prediction for ``config`` (as the pipeline makes it
    when the trial validates): the configuration normalized by validation, the recorded
    trials, the controller's minimum — so the editor never contradicts the controller."""
    minimum = minimum_capacity(state)
    return core_predict_capacity(state.trials, as_deployed(config), minimum_tokens=minimum)


def suggest_next(state: ControllerState) -> Proposal | None:
    """The optimiser's next proposal over the plan's axes, with its one-line reason (the
    editor's "suggest next")."""
    if state.plan is None:
        return None
    return core_suggest_next(state.plan, all_trials(state), state.skipped_configs)


def validate_config(config: ServerConfig) -> list[Problem]:
    """The core's validation rules (SGLang's and ours) as editor problems; each message
    names the field and the fix."""
    return [
        Problem(
            field=issue.field,
            message=f"{issue.field or 'configuration'}: {issue.message} Fix: {issue.fix}",
            severity=issue.severity.value,
        )
        for issue in validate(config)
    ]
