"""The box's last session (``session.history``): its trial costs are the ETA's first guess,
from the newest other session on the same box that finished a trial."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from specconsole.core.plans.profile import HostProfile
from specconsole.session.history import last_session_costs
from specconsole.session.store import Session
from tests.controller.helpers import PLAN_TEXT, plan
from tests.session.sim_sessions import unit_session


def test_the_last_session_on_the_same_box_gives_the_costs(tmp_path: Path) -> None:
    unit_session(tmp_path, trials=2)
    fresh = Session.create(tmp_path, replace(plan(), source=PLAN_TEXT), name="fresh")
    costs = last_session_costs(fresh, plan())
    assert costs is not None and costs.source == "the box's last session"
    assert costs.load_s > 0 and costs.bench_s > 0


def test_another_box_or_nothing_recorded_is_no_basis(tmp_path: Path) -> None:
    fresh = Session.create(tmp_path, replace(plan(), source=PLAN_TEXT), name="fresh")
    assert last_session_costs(fresh, plan()) is None
    unit_session(tmp_path, trials=2)
    elsewhere = plan()
    elsewhere = replace(
        elsewhere, profile=replace(elsewhere.profile, host=HostProfile(hostname="other-box"))
    )
    assert last_session_costs(fresh, elsewhere) is None
