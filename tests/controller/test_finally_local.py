"""``[sweep] finally`` on the local transport, end to end: ``stop`` leaves no server behind
while the run that started it is still alive (so the simulator's parent watch is not what
stops it), and ``last`` leaves the last trial serving (the contrast that makes the first
assertion mean something). The simulator is a real process on loopback."""

from __future__ import annotations

import asyncio
import io
import socket
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.headless.pool import sweep_headless
from specconsole.remote.process import ProcessBackend
from specconsole.remote.transport.local import LocalTransport
from specconsole.session.store import Session
from tests.fixtures.sshd import free_port
from tests.session.sim_sessions import finally_plan_text


def _serves(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("action", ["stop", "last"])
async def test_finally_stop_leaves_no_server_and_last_leaves_it_serving(
    tmp_path: Path, action: str
) -> None:
    port = free_port()
    text = finally_plan_text(tmp_path / "run", port, action, name=f"finally {action}")
    plan = resolve_placeholders(loads_plan(text), {"python": sys.executable})
    plan = replace(plan, source=text)
    assert plan.finally_action == action
    out = io.StringIO()
    session = Session.create(tmp_path / "sessions", plan)
    backend = ProcessBackend(LocalTransport(), plan.profile.service)
    try:
        code = await asyncio.wait_for(sweep_headless(plan, session, out=out), 120)
        assert code == 0, out.getvalue()[-3000:]
        assert len(session.load_trials()) == 2
        if action == "stop":
            assert "finally = stop: the service is stopped" in out.getvalue()
            assert not _serves(port), "the simulator outlived finally = stop"
        else:
            assert "finally = last" in out.getvalue()
            assert _serves(port), "finally = last stopped the server"
    finally:
        await backend.stop()  # the server this test's sweep started, if it still runs
