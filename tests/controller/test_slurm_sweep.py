"""A sweep on the real one-node Slurm cluster (tests/fixtures/slurm.py): each trial is a batch
job running the simulator on the node's four fake GPUs, submitted through the "login node"
(this machine, local transport), followed from its output file and benchmarked through the
node's address that the job reports.

Three trials (a grid of tp_size × steps cut at three): steps 3 on four GPUs loads and is
benchmarked; steps 10 cannot load (the job's log says "Not enough memory", the job FAILS) and is
a crash classified from that line; tp_size 8 asks for ``--gres=gpu:8`` on a four-GPU node and is
reported as unschedulable at once. Afterwards no job is left in the queue.
"""

from __future__ import annotations

import asyncio
import io
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.controller.localplan import resolve_local_placeholders
from specconsole.controller.outcome import EXIT_OK
from specconsole.core.machine.state import TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.headless.sweep import run_headless
from specconsole.remote.slurm import SlurmBackend
from specconsole.remote.transport.local import LocalTransport
from specconsole.session.store import Session
from tests.fixtures.plans import sim_plan_text
from tests.fixtures.slurm import SlurmCluster

pytestmark = [pytest.mark.slow, pytest.mark.slurm]


async def test_three_trial_sweep_on_slurm(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    service = f"""kind = "slurm"
partition = "{slurm_cluster.partition}"
time_limit = "00:10:00"
sbatch = ["--cpus-per-task=1"]
slurm_conf = "{slurm_cluster.conf}"
"""
    sweep = """[sweep]
strategy = "grid"
on_crash = "auto"
load_timeout = 60
max_trials = 3
[sweep.axes]
tp_size = [4, 8]
speculative_num_steps = [3, 10]
"""
    bench = """[bench]
ladder = [1, 4]
requests_per_level = 8
input_len = 64
output_len = 16
warmup_requests = 0
"""
    text = sim_plan_text(
        tmp_path / "run",
        extra_args=["--sim-load-seconds", "0.3"],
        sweep=sweep,
        bench=bench,
        name="slurm",
        service=service,
    )
    plan = replace(resolve_local_placeholders(loads_plan(text)), source=text)
    session = Session.create(tmp_path / "sessions", plan)
    out = io.StringIO()
    try:
        code = await asyncio.wait_for(run_headless(plan, session, out=out), 180)
    finally:
        await SlurmBackend(LocalTransport(), plan.profile.service).stop()
    assert code == EXIT_OK, out.getvalue()
    trials = session.load_trials()
    assert [(t.config.tp_size, t.config.speculative_num_steps) for t in trials] == [
        (4, 3),
        (4, 10),
        (8, 3),
    ]
    good, oom, unschedulable = trials
    assert good.status is TrialStatus.OK, good
    assert [lv.concurrency for lv in good.levels] == [1, 4]
    assert all(lv.completed == 8 and lv.output_tok_s > 0 for lv in good.levels)
    assert good.capacity is not None

    assert oom.status is TrialStatus.CRASHED and oom.crash is not None
    assert oom.crash.cause not in ("exited", "unschedulable"), oom.crash  # from the log line
    assert any("Not enough memory" in line for line in oom.crash.excerpt), oom.crash

    assert unschedulable.status is TrialStatus.CRASHED and unschedulable.crash is not None
    assert unschedulable.crash.cause == "unschedulable", unschedulable.crash
    assert "Requested node configuration is not available" in unschedulable.crash.message
    started = unschedulable.phases[0].started_at
    assert unschedulable.crash.detected_at - started < 10, unschedulable.phases  # no waiting

    assert slurm_cluster.jobs() == []  # scancel left no job behind
