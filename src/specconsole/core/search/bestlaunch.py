"""The sweep's answer and its exact launch, as ``specconsole best``, ``finally = "best"`` and
the end of a sweep print it.

Why apart from :mod:`.answer`: the answer is drawn from the console's first frame on (the
header's ★, the trials table's mark) and needs only the records; its launch renders the
unit or command (``core.plans.launch``), which loads with the first launch printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specconsole.core.config.model import ServerConfig
from specconsole.core.config.secrets import unredact_config
from specconsole.core.measure.trials import TrialRecord
from specconsole.core.plans.launch import LaunchForm, launch_text
from specconsole.core.plans.objective import Goal
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.search.answer import Answer, answer

__all__ = ["BestLaunch", "best_launch"]


@dataclass(frozen=True, slots=True)
class BestLaunch:
    """The answer and its exact launch."""

    trial: TrialRecord
    config: ServerConfig
    """What the trial ran (``TrialRecord.effective``: normalized, in the box's release),
    with the plan's public environment values back (records keep only names)."""
    text: str
    answer: Answer


def best_launch(
    trials: Sequence[TrialRecord],
    plan: SweepPlan,
    form: LaunchForm | str = LaunchForm.COMMAND,
    goal: Goal | None = None,
) -> BestLaunch | None:
    """The sweep's answer by ``goal`` (default the plan's) and its launch in ``form`` on the
    box that ran it; None without a feasible trial. Secrets stay references (a session's plan
    copy holds only their names)."""
    found = answer(trials, goal or plan.goal, plan.noise_pct)
    if found is None:
        return None
    config = unredact_config(found.trial.effective, plan.base.env)
    box = next((b.profile for b in plan.boxes if b.name == found.trial.box), plan.profile)
    text = launch_text(config, form, box.service, name=plan.name or None, host=box.host)
    return BestLaunch(found.trial, config, text, found)
