"""A benchmark level that loses its SSH connection is re-run once after the reconnect, and a
trial is never ``ok`` with failed requests (issue 19), over the real sshd with the simulator
as a real HTTP process behind the SSH port forward.

The SSH session is killed (its sshd process, by PID) while the only level runs: requests in
flight through the forward fail as lost connections, the transport reconnects and restores
the forward, the level is re-run once, and the trial is ``ok`` with a note saying so — or
``degraded`` with the counts and the reason when the re-run still failed.
"""

from __future__ import annotations

import asyncio
import io
import sys
import tomllib
from pathlib import Path

import pytest
import tomli_w

from specconsole.core.machine.state import TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.session.store import Session
from tests.controller.background import headless_in_background
from tests.controller.test_e2e import plan_text
from tests.fixtures.sshd import SshdServer

pytestmark = [pytest.mark.ssh, pytest.mark.slow]


async def test_a_level_that_loses_its_ssh_session_is_rerun_or_degraded_never_ok_with_failures(
    sshd: SshdServer, tmp_path: Path
) -> None:
    document = tomllib.loads(plan_text(sshd, tmp_path / "run", steps=[1], ladder=[4], requests=2))
    del document["bench"]["requests_per_level"]
    document["bench"]["duration_s"] = 4.0  # long enough to be cut in the middle
    document["sweep"]["finally"] = "last"
    plan = resolve_placeholders(loads_plan(tomli_w.dumps(document)), {"python": sys.executable})
    session = Session.create(tmp_path / "s", plan)
    out = io.StringIO()
    async with headless_in_background(plan, session, out) as run:
        async with asyncio.timeout(120):
            while ": benchmarking" not in out.getvalue():
                assert not run.done(), out.getvalue()
                await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # the level is measuring now
        assert sshd.cut_connections() > 0
        code = await asyncio.wait_for(run, 180)
    printed = out.getvalue()
    assert code == 0, printed
    (record,) = session.load_trials()
    failed = sum(level.failed for level in record.levels)
    assert "re-run: c=4: " in record.note and "the connection was lost" in record.note, (
        record.note,
        printed,
    )  # the cut hit the level: its requests failed as a lost connection
    assert not (record.status is TrialStatus.OK and failed), (record.note, printed)
    if record.status is TrialStatus.OK:
        assert "re-run once after the reconnect: clean" in record.note, record.note
    else:
        assert record.status is TrialStatus.DEGRADED, (record.status, printed)
        assert failed and f"degraded: c=4: {failed} of" in record.note, record.note
    assert record.levels and record.levels[0].completed > 0
