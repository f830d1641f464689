"""A vLLM sweep on the real one-node Slurm cluster (tests/fixtures/slurm.py): each trial is a
batch job running the simulator's vLLM face, submitted through the "login node" (this machine,
local transport), followed from its output file and benchmarked on vLLM's chat API through the
node's address the job reports; acceptance from vLLM's ``/metrics`` counters. The shared-GPU
launch (``--gpu-memory-utilization 0.35``) fails its job and is classified from the job's log
as vLLM's KV-cache refusal. Afterwards no job is left in the queue.
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
from tests.fixtures.plans import VLLM_LAUNCHER, VLLM_SERVER, sim_plan_text
from tests.fixtures.slurm import SlurmCluster

pytestmark = [pytest.mark.slow, pytest.mark.slurm]


async def test_a_vllm_sweep_on_slurm(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    service = f"""kind = "slurm"
partition = "{slurm_cluster.partition}"
time_limit = "00:10:00"
sbatch = ["--cpus-per-task=1"]
slurm_conf = "{slurm_cluster.conf}"
"""
    sweep = """[sweep]
strategy = "boundary"
axis = "num_speculative_tokens"
on_crash = "auto"
load_timeout = 60

[sweep.axes]
num_speculative_tokens = [1, 2]
gpu_memory_utilization = [0.9, 0.35]
"""
    bench = """[bench]
ladder = [1, 4]
requests_per_level = 8
input_len = 64
output_len = 16
warmup_requests = 0
api = "chat"
"""
    text = sim_plan_text(
        tmp_path / "run",
        extra_args=["--sim-load-seconds", "0.3"],
        sweep=sweep,
        bench=bench,
        name="vllm slurm",
        service=service,
        server=VLLM_SERVER,
        launcher=VLLM_LAUNCHER,
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
    shape = [(t.config.num_speculative_tokens, t.config.gpu_memory_utilization) for t in trials]
    assert shape == [(1, 0.9), (2, 0.9), (1, 0.35)], shape
    for t in trials[:2]:
        assert t.status is TrialStatus.OK, t
        assert [lv.concurrency for lv in t.levels] == [1, 4]
        k = t.config.num_speculative_tokens
        for level in t.levels:
            c = level.counters
            assert level.completed == 8 and c is not None, level
            assert c.draft_tokens == k * c.drafts > 0 and c.output_tokens == 8 * 16, level
            assert level.accept_length == pytest.approx(1 + c.accepted / c.drafts)
    crashed = trials[2]
    assert crashed.status is TrialStatus.CRASHED and crashed.crash is not None
    assert crashed.crash.cause == "kv_cache_no_memory", crashed.crash  # from the log line
    assert any(
        "larger than the available KV cache memory" in line for line in crashed.crash.excerpt
    )
    assert slurm_cluster.jobs() == []  # scancel left no job behind
