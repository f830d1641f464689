"""``[server] port = "auto"``: a free loopback port chosen once per session, recorded in the
session folder and reused by ``resume``; only for the local transport."""

from __future__ import annotations

import socket
from dataclasses import replace
from pathlib import Path

import pytest
import tomli_w

from specconsole.controller.localplan import resolve_local_placeholders
from specconsole.controller.wiring import wire_controller
from specconsole.core.machine.state import ControllerState
from specconsole.core.plans.parse import loads_plan, plan_document
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.core.plans.plan import PlanError
from specconsole.session.store import Session
from tests.controller.helpers import PLAN_TEXT

AUTO_TEXT = PLAN_TEXT.replace(
    "[server]\n",
    '[host]\ntransport = "local"\n[service]\nkind = "process"\n'
    'run_dir = "/tmp/specconsole-test-run-{port}"\n[server]\nport = "auto"\n',
    1,
)


def test_auto_port_waits_for_resolution() -> None:
    p = loads_plan(AUTO_TEXT)
    assert p.auto_port
    assert p.profile.service.run_dir == "/tmp/specconsole-test-run-{port}"
    again = loads_plan(tomli_w.dumps(plan_document(p)))  # written back as "auto"
    assert replace(again, source="") == replace(p, source="")
    resolved = resolve_placeholders(p, {"python": "py", "port": "41234"})
    assert not resolved.auto_port and resolved.base.port == 41234
    assert all(c.port == 41234 for c in resolved.grid())
    assert resolved.profile.service.run_dir == "/tmp/specconsole-test-run-41234"
    # a port already chosen is kept
    assert resolve_placeholders(resolved, {"port": "5"}).base.port == 41234


def test_run_dir_port_of_a_fixed_port() -> None:
    p = loads_plan(AUTO_TEXT.replace('port = "auto"', "port = 31000"))
    assert not p.auto_port and p.profile.service.run_dir == "/tmp/specconsole-test-run-31000"


def test_auto_port_needs_the_local_transport() -> None:
    text = AUTO_TEXT.replace('transport = "local"', 'transport = "ssh"\nalias = "gpu-box"')
    message = r'\[server\] port = "auto" .* \[host\] transport = "local"'
    with pytest.raises(PlanError, match=message):
        loads_plan(text)


def test_auto_port_is_free_and_chosen_once_per_session(tmp_path: Path) -> None:
    plan = resolve_local_placeholders(replace(loads_plan(AUTO_TEXT), source=AUTO_TEXT))
    port = plan.base.port
    with socket.socket() as sock:  # free: a server can bind it
        sock.bind(("127.0.0.1", port))
    assert resolve_local_placeholders(plan).base.port == port  # not chosen again
    session = Session.create(tmp_path, plan)
    assert session.read_meta()["session"]["server_port"] == port
    # `specconsole resume` = resolve_local_placeholders(Session.open(...).load_plan())
    resumed = resolve_local_placeholders(Session.open(session.path).load_plan())
    assert resumed.base.port == port
    assert resumed.profile.service.run_dir == f"/tmp/specconsole-test-run-{port}"
    assert resumed.grid() == plan.grid()


def test_an_unresolved_auto_port_is_not_wired(tmp_path: Path) -> None:
    plan = loads_plan(AUTO_TEXT)
    with pytest.raises(PlanError, match="not resolved"):
        wire_controller(plan, Session.create(tmp_path, plan), ControllerState(plan=plan))


def test_the_demo_plan_gets_its_own_port_and_run_folder() -> None:
    from specconsole.commands.tui import demo_plan

    plan = demo_plan()  # `specconsole demo`: the example plan, resolved for this machine
    assert not plan.auto_port and plan.base.port != 30123
    assert plan.profile.service.run_dir.endswith(f"demo-run-{plan.base.port}")
    assert demo_plan(port=40123).base.port == 40123  # --port still wins
