"""The box's last session: what its trials cost, for the ETA before this session measured one.

Why apart from listing: the ETA's first guess (``core.search.eta``) is better from the same
box's previous session — its loads took as long as this one's will — than from the plan's
``load_timeout``. Reading it is I/O over many folders that must survive every damaged one, so
it lives here and hands the core a :class:`~specconsole.core.search.eta.Costs` (or None).
"""

from __future__ import annotations

from specconsole.core.plans.plan import SweepPlan
from specconsole.core.search.eta import Costs, learn
from specconsole.session.files import SessionError
from specconsole.session.listing import list_sessions
from specconsole.session.store import Session

LOOK_BACK = 10
"""Sessions read at most (newest first) to find the box's last one."""


def _same_box(a: SweepPlan, b: SweepPlan) -> bool:
    """Same host and the same way of running the server there."""
    return (
        a.profile.host.target() == b.profile.host.target()
        and a.profile.host.transport == b.profile.host.transport
        and a.profile.service.kind == b.profile.service.kind
        and a.base.model_path == b.base.model_path
    )


def last_session_costs(session: Session, plan: SweepPlan) -> Costs | None:
    """Trial costs of the newest other session on ``plan``'s box (same host, service kind
    and model) that finished a trial; None when there is none."""
    for summary in list_sessions(session.path.parent)[:LOOK_BACK]:
        if summary.path.resolve() == session.path.resolve() or summary.trials == 0:
            continue
        try:
            other = Session(summary.path)
            if not _same_box(other.raw_plan(), plan):
                continue
            costs = learn(other.load_trials(), source="the box's last session")
        except (SessionError, ValueError, OSError):
            continue  # a damaged or foreign folder is no basis for a guess
        if costs is not None:
            return costs
    return None


__all__ = ["last_session_costs"]
