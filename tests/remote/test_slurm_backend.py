"""The Slurm backend against a real one-node Slurm cluster on loopback (tests/fixtures/slurm.py).

The job is the simulator (``python -m specconsole.sim``) on the node's four fake GPUs; the
login node is this machine, reached with the local transport (every Slurm command gets the
fixture's ``SLURM_CONF`` through ``[service] slurm_conf``).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from specconsole.core.plans.profile import ServiceKind, ServiceProfile
from specconsole.core.ports import LocatedService, ServiceBackend, ServiceState
from specconsole.remote.slurm import SlurmBackend
from specconsole.remote.transport.local import LocalTransport
from tests.fixtures.slurm import SlurmCluster
from tests.remote.helpers import READY, drain, read_until, sim_config

pytestmark = pytest.mark.slurm


def slurm_backend(cluster: SlurmCluster, tmp_path: Path, **overrides: object) -> SlurmBackend:
    fields: dict[str, object] = {
        "kind": ServiceKind.SLURM,
        "run_dir": str(tmp_path / "run"),
        "backup_dir": str(tmp_path / "backups"),
        "partition": cluster.partition,
        "time_limit": "00:10:00",
        "sbatch": ("--cpus-per-task=1",),
        "slurm_conf": str(cluster.conf),
        "stop_timeout": 5.0,
    }
    fields.update(overrides)
    return SlurmBackend(LocalTransport(), ServiceProfile(**fields))  # type: ignore[arg-type]


async def wait_state(backend: SlurmBackend, *states: ServiceState, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        status = await backend.status()
        if status.state in states or time.monotonic() > deadline:
            return status
        await asyncio.sleep(0.2)


async def test_job_runs_serves_and_scancel_leaves_nothing(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    backend = slurm_backend(slurm_cluster, tmp_path)
    assert isinstance(backend, ServiceBackend) and isinstance(backend, LocatedService)
    config = sim_config()
    preview = await backend.preview(config)
    assert "#SBATCH --gres=gpu:4" in preview.artifact
    assert "#SBATCH --partition=gpu" in preview.artifact
    assert "#SBATCH --cpus-per-task=1" in preview.artifact
    await backend.deploy(config)
    await backend.start()
    try:
        status = await wait_state(backend, ServiceState.RUNNING)
        assert status.state is ServiceState.RUNNING, status
        assert await backend.running_hash() == preview.artifact_hash
        host = await backend.server_host(config)
        assert host == "127.0.0.1"
        seen = await read_until(backend.logs(), READY)
        texts = [r.text for r in seen]
        assert (
            "CUDA_VISIBLE_DEVICES=0,1,2,3" in texts[0]
            and "SLURM_JOB_NODELIST=localhost" in texts[0]
        )
        assert all(r.cursor and r.cursor.count(":") == 1 for r in seen)
        async with httpx.AsyncClient() as client:
            response = await client.get(f"http://{host}:{config.port}/health", timeout=5)
        assert response.status_code == 200
        # A resume from a cursor continues at the exact byte: the next line is the one after.
        cursor = seen[2].cursor
        resumed = await read_until(backend.logs(after=cursor), READY)
        assert [r.text for r in resumed] == texts[3:]
    finally:
        await backend.stop()
    status = await backend.status()
    assert status.state is ServiceState.INACTIVE and status.result == "stopped", status
    assert slurm_cluster.jobs() == []
    # The log stream of an ended job drains and ends.
    records = await drain(backend.logs(), timeout=20)
    assert any(READY in r.text for r in records)


async def test_a_configuration_that_cannot_load_fails_with_its_log(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    backend = slurm_backend(slurm_cluster, tmp_path)
    await backend.deploy(sim_config(speculative_num_steps=10, speculative_num_draft_tokens=11))
    await backend.start()
    records = await drain(backend.logs(), timeout=30)  # ends once the job has left the queue
    assert any("Not enough memory" in r.text for r in records), [r.text for r in records][-10:]
    status = await wait_state(backend, ServiceState.FAILED)
    assert status.state is ServiceState.FAILED, status
    assert status.exit_status not in (0, None) or status.signal is not None
    assert "FAILED" in status.detail and "ExitCode" in status.detail
    assert slurm_cluster.jobs() == []


async def test_unschedulable_request_is_reported_at_once(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    backend = slurm_backend(slurm_cluster, tmp_path)
    await backend.deploy(sim_config(tp_size=8))
    assert "#SBATCH --gres=gpu:8" in (await backend.preview(sim_config(tp_size=8))).artifact
    started = time.monotonic()
    await backend.start()
    status = await backend.status()
    assert time.monotonic() - started < 5
    assert status.state is ServiceState.FAILED and status.cause == "unschedulable", status
    assert "Requested node configuration is not available" in status.detail
    assert [r async for r in backend.logs()] == []
    await backend.stop()  # nothing to cancel
    assert slurm_cluster.jobs() == []


async def test_queued_job_shows_its_reason(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    first = slurm_backend(slurm_cluster, tmp_path / "a")
    second = slurm_backend(slurm_cluster, tmp_path / "b")
    config = sim_config()
    await first.deploy(config)
    await second.deploy(sim_config(port=config.port + 1))
    await first.start()
    try:
        assert (await wait_state(first, ServiceState.RUNNING)).state is ServiceState.RUNNING
        await second.start()  # all four GPUs are taken: it waits
        status = await second.status()
        assert status.state is ServiceState.STARTING, status
        assert status.detail.startswith("queued: "), status
        assert await second.server_host(config) is None
    finally:
        await second.stop()
        await first.stop()
    assert slurm_cluster.jobs() == []
