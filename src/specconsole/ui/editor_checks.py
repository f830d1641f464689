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
from specconsole.core.machine.state import Phase, ResumeChoice
from specconsole.core.search.capacity import predict_capacity as core_predict_capacity
from specconsole.core.search.strategy import Proposal, next_trial
from specconsole.core.search.strategy import suggest_next as core_suggest_next
from specconsole.present.deploys.diffs import as_deployed
from specconsole.present.keyboard.actions import NOT_KNOWN_YET, choice_target
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


class NotKnownYet(Exception):
    """The plan's next step is not known yet (a crash still being recorded)."""


def suggest_next(state: ControllerState) -> Proposal | None:
    """The editor's "suggest next", agreeing with the banner (issue 42 #8: it proposed the
    optimiser's point while the crash banner's ``r`` named another): the plan's own next
    trial — at a crash exactly what ``r`` resumes with — and only when the plan has nothing
    left, the optimiser's proposal over the plan's axes, each with its reason. Raises
    :class:`NotKnownYet` while a crash is being recorded (the banner says the same)."""
    plan = state.plan
    if plan is None:
        return None
    if state.phase is Phase.CRASHED and state.pending is None:
        raise NotKnownYet(NOT_KNOWN_YET)
    own = next_trial(plan, all_trials(state), state.skipped_configs)
    if state.pending is not None:  # the crash banner: r resumes with the plan's next
        target = choice_target(state, ResumeChoice.RESUME_NEXT)
        if target is not None:
            why = own.reason if own is not None and own.config == target else ""
            return Proposal(
                target, "the plan's next trial (what r resumes with)" + (f": {why}" if why else "")
            )
    elif own is not None:
        return Proposal(own.config, f"the plan's next trial: {own.reason}")
    beyond = core_suggest_next(plan, all_trials(state), state.skipped_configs)
    if beyond is None:
        return None
    return Proposal(beyond.config, f"nothing left in the plan; the optimiser: {beyond.reason}")


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
