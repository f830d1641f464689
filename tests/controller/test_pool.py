"""A pool of two boxes over the real test sshd: the seed's steps sweep in parallel.

Each box is a plain-process run folder reached through the real OpenSSH server
(tests/fixtures/sshd.py), serving the simulator on its own port; one shared plan, one
session. The pool must run trials on both boxes at the same time (their trials' intervals
overlap), record every trial once (each saying which box ran it), run exactly the trials one
box would, detect the crash at steps 10 within 2 s of the fatal line, and still find by
bisection that 9 is the largest value that loads.

How much faster the pool is than one box is a speed figure, measured by
``benchmarks/pool.py`` (one, two and four boxes side by side in one run), not asserted here:
a wall-clock bound in a test fails on a busy machine without saying anything about the code.
"""

from __future__ import annotations

import asyncio
import io
import time
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.controller.pool.run import box_plan
from specconsole.core.machine.state import TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.search.strategy import boundary_result
from specconsole.headless.pool import sweep_headless as run_headless
from specconsole.remote.process import ProcessBackend
from specconsole.remote.transport.ssh import SshTransport
from specconsole.session.store import Session
from tests.controller.test_e2e import FATAL_TEXT, FatalLinePoller
from tests.fixtures.plans import sim_plan_text, ssh_keys
from tests.fixtures.sshd import SshdServer, free_port
from tests.remote.helpers import ssh_profile

pytestmark = [pytest.mark.ssh, pytest.mark.slow]

SWEEP = """[sweep]
strategy = "boundary"
on_crash = "auto"
load_timeout = 60
[sweep.axes]
speculative_num_steps = [1, 2, 3, 4, 5, 10]
"""
BENCH = """[bench]
ladder = [1, 4]
requests_per_level = 4
input_len = 64
output_len = 16
warmup_requests = 0
"""


def sweep_plan(sshd: SshdServer, run_dir: Path, boxes: int) -> SweepPlan:
    """The seed's sweep on a pool of ``boxes`` boxes, each a run folder behind the sshd."""
    host = "".join(
        f'[[hosts]]\nname = "box-{chr(97 + i)}"\nserver_port = {free_port()}\n' + ssh_keys(sshd)
        for i in range(boxes)
    )
    text = sim_plan_text(
        run_dir,
        host=host,
        port=free_port(),
        extra_args=["--sim-load-seconds", "2.0"],
        sweep=SWEEP,
        bench=BENCH,
        name=f"pool-{boxes}",
    )
    plan = resolve_placeholders(loads_plan(text), {"python": __import__("sys").executable})
    return replace(plan, source=text)


async def timed_sweep(plan: SweepPlan, session: Session, out: io.StringIO) -> float:
    started = time.monotonic()
    code = await asyncio.wait_for(run_headless(plan, session, out=out), 240)
    assert code == 0, out.getvalue()[-3000:]
    return time.monotonic() - started


async def stop_servers(sshd: SshdServer, plan: SweepPlan) -> None:
    transport = SshTransport(ssh_profile(sshd))
    try:
        for each in [box_plan(plan, box) for box in plan.boxes] or [plan]:
            await ProcessBackend(transport, each.profile.service).stop()
    finally:
        await transport.close()


async def test_two_boxes_sweep_the_seed_plan_in_parallel(sshd: SshdServer, tmp_path: Path) -> None:
    pool = sweep_plan(sshd, tmp_path / "pool", 2)
    assert [b.name for b in pool.boxes] == ["box-a", "box-b"]
    session = Session.create(tmp_path / "s2", pool)
    detected: list[float] = []

    class Tap(io.StringIO):
        def write(self, s: str) -> int:
            if "CRASH detected" in s and not detected:
                detected.append(time.time())
            return super().write(s)

    out = Tap()
    try:
        with FatalLinePoller(tmp_path / "pool") as poller:
            wall = await timed_sweep(pool, session, out)
    finally:
        await stop_servers(sshd, pool)
    text = out.getvalue()

    trials = session.load_trials()
    steps = [t.config.speculative_num_steps for t in trials]
    assert sorted(t.index for t in trials) == list(range(len(trials)))  # each once
    assert sorted(steps) == [1, 2, 3, 4, 5, 7, 8, 9, 10], steps  # as one box would run
    assert {t.box for t in trials} == {"box-a", "box-b"}
    # in parallel: some trial of box-a ran while one of box-b did
    spans = {
        box: [(t.started_at, t.finished_at or 0.0) for t in trials if t.box == box]
        for box in ("box-a", "box-b")
    }
    assert any(a0 < b1 and b0 < a1 for a0, a1 in spans["box-a"] for b0, b1 in spans["box-b"]), spans
    assert all(line.startswith("[") for line in text.splitlines()[:3])
    assert "] [box-a] trial" in text and "] [box-b] trial" in text  # lines say the box
    by_steps = {t.config.speculative_num_steps: t for t in trials}
    crashed = by_steps[10]
    assert crashed.status is TrialStatus.CRASHED and crashed.crash is not None
    assert crashed.crash.cause == "kv_cache_no_memory"
    assert all(t.status is TrialStatus.OK for s, t in by_steps.items() if s != 10)
    assert poller.seen_at is not None and detected, text[-2000:]
    latency = detected[0] - poller.seen_at
    print(f"crash detected {latency:.3f} s after the fatal line was written ({FATAL_TEXT!r})")
    assert latency < 2.0
    assert boundary_result(pool, trials) == (9, 10)
    assert "the largest value that loads is 9 (10 fails)" in text
    print(f"two boxes {wall:.1f} s (the speed-up over one box: benchmarks/pool.py)")
