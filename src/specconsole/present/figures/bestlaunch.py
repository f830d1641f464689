"""The best trial's launch, as the end of a sweep prints it.

Why apart from the glance (:mod:`.progress`): the console and the headless driver print it
once, when the sweep is over, and it renders the winner's full launch (its unit or command,
``core.plans.launch``); the glance is drawn from the console's first frame on and needs
none of that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from specconsole.core.search.bestlaunch import best_launch
from specconsole.present.labels import record_label, schedule_unit

if TYPE_CHECKING:
    from specconsole.core.measure.trials import TrialRecord
    from specconsole.core.plans.plan import SweepPlan

__all__ = ["launch_block"]


def launch_block(
    plan: SweepPlan, trials: Sequence[TrialRecord], session: object
) -> tuple[str, str] | None:
    """(heading, launch text) of the best trial for the end of a sweep (headless and the
    console's exit print it; ``specconsole best SESSION`` prints the same text); None without
    a feasible trial."""
    picked = best_launch(trials, plan)
    if picked is None:
        return None
    top = picked.trial
    label = record_label(top, plan.base)
    if picked.answer.scheduled:  # the sweep's answer is the schedule it proved
        what = f"the result, trial {top.index + 1}, {label} ({schedule_unit(top.effective)})"
    else:
        what = f"the best, trial {top.index + 1}, {label}"
    return f"launch of {what} (specconsole best {session}):", picked.text
