"""A vLLM sweep in containers on the private docker engine (tests/fixtures/dockerd.py): each
trial is a container running the simulator's vLLM face (the checkout and its Python mounted
read-only, host networking), its log followed with ``docker logs -t``, benchmarked on vLLM's
chat API, acceptance from vLLM's ``/metrics`` counters; the shared-GPU launch dies in its
container (exit 1) and is classified from the log as vLLM's KV-cache refusal.
"""

from __future__ import annotations

import asyncio
import io
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.controller.localplan import resolve_local_placeholders
from specconsole.controller.outcome import EXIT_OK
from specconsole.core.machine.state import TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.headless.sweep import run_headless
from specconsole.remote.docker import DockerBackend
from specconsole.remote.transport.local import LocalTransport
from specconsole.session.store import Session
from tests.fixtures.dockerd import DockerEngine, docker_engine  # noqa: F401
from tests.fixtures.nspawn import REPO
from tests.fixtures.plans import VLLM_LAUNCHER, VLLM_SERVER, sim_plan_text
from tests.fixtures.sshd import free_port

pytestmark = [pytest.mark.slow]

PYTHON_HOME = Path(sys.base_prefix).resolve()
"""The interpreter's tree, mounted read-only into each container."""


async def test_a_vllm_sweep_in_containers(
    docker_engine: DockerEngine,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("DOCKER_HOST", docker_engine.docker_host)
    mounts = [
        "--network",
        "host",
        "-v",
        f"{REPO}:{REPO}:ro",
        "-v",
        f"{PYTHON_HOME}:{PYTHON_HOME}:ro",
    ]
    service = f"""kind = "docker"
image = "{docker_engine.image}"
container = "specconsole-vllm-sweep"
docker_args = {mounts!r}
"""
    sweep = """[sweep]
strategy = "boundary"
axis = "num_speculative_tokens"
on_crash = "auto"
load_timeout = 60
finally = "best"

[sweep.axes]
num_speculative_tokens = [1, 2]
gpu_memory_utilization = [0.9, 0.35]
"""
    bench = """[bench]
ladder = [1, 2]
requests_per_level = 4
input_len = 32
output_len = 16
warmup_requests = 0
api = "chat"
"""
    text = sim_plan_text(
        tmp_path / "run",
        port=free_port(),
        extra_args=["--sim-load-seconds", "0.3"],
        sweep=sweep,
        bench=bench,
        name="vllm docker",
        service=service,
        server=VLLM_SERVER,
        launcher=VLLM_LAUNCHER,
    )
    plan = replace(resolve_local_placeholders(loads_plan(text)), source=text)
    session = Session.create(tmp_path / "sessions", plan)
    out = io.StringIO()
    try:
        code = await asyncio.wait_for(run_headless(plan, session, out=out), 240)
    finally:
        await DockerBackend(LocalTransport(), plan.profile.service).stop()
    assert code == EXIT_OK, out.getvalue()
    trials = session.load_trials()
    shape = [(t.config.num_speculative_tokens, t.config.gpu_memory_utilization) for t in trials]
    assert shape == [(1, 0.9), (2, 0.9), (1, 0.35)], shape
    for t in trials[:2]:
        assert t.status is TrialStatus.OK, t
        k = t.config.num_speculative_tokens
        for level in t.levels:
            c = level.counters
            assert c is not None and c.draft_tokens == k * c.drafts > 0, level
            assert level.accept_length == pytest.approx(1 + c.accepted / c.drafts)
    crashed = trials[2]
    assert crashed.status is TrialStatus.CRASHED, crashed
    assert crashed.crash is not None and crashed.crash.cause == "kv_cache_no_memory"
    assert any("--gpu-memory-utilization" in fix for fix in crashed.crash.fixes)
    assert "finally = best" in out.getvalue()
