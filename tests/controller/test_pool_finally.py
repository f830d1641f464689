"""``[sweep] finally = "best"`` on a pool of two boxes: once every box finished, each box is
left serving the *pool's* best trial — also the box whose own last trial was another one.

Two boxes on the local transport (each a process-backend run folder serving the real
simulator on its own loopback port); what each box serves at the end is read from its own
``/server_info``.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from specconsole.controller.pool.run import box_plan
from specconsole.core.machine.state import TrialStatus
from specconsole.headless.pool import sweep_headless
from specconsole.remote.process import ProcessBackend
from specconsole.remote.transport.local import LocalTransport
from specconsole.session.store import Session
from tests.fixtures.plans import assert_pool_serves_its_best, local_pool_plan
from tests.session.sim_sessions import BENCH

SWEEP = """[sweep]
strategy = "grid"
on_crash = "auto"
load_timeout = 30
max_wall_minutes = 5
finally = "best"

[sweep.axes]
speculative_num_steps = [1, 2, 3]
"""


async def test_finally_best_leaves_every_box_on_the_pools_best(tmp_path: Path) -> None:
    plan = local_pool_plan(tmp_path, sweep=SWEEP, bench=BENCH, name="pool", load_seconds=0.2)
    session = Session.create(tmp_path / "sessions", plan)
    out = io.StringIO()
    boxes = {box.name: box_plan(plan, box) for box in plan.boxes}
    try:
        code = await asyncio.wait_for(sweep_headless(plan, session, out=out), 180)
        assert code == 0, out.getvalue()[-3000:]
        trials = session.load_trials()
        assert len(trials) == 3 and all(t.status is TrialStatus.OK for t in trials), trials
        ports = {name: each.base.port for name, each in boxes.items()}
        assert_pool_serves_its_best(plan, trials, ports, out.getvalue())
        # every way out says each server's real state, read from its box (issue 33 #9)
        for name, port in ports.items():
            said = f"[{name}] the box now: the server runs and serves (/health 200 on port {port}"
            assert said in out.getvalue(), out.getvalue()[-3000:]
    finally:
        for each in boxes.values():
            await ProcessBackend(LocalTransport(), each.profile.service).stop()
