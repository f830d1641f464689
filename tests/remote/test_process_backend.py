"""The plain-process backend end to end, locally and over the real test sshd.

The server is the simulator (``python -m specconsole.sim``) as a real process, or a tiny
Python program where a test needs exact, countable output.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from specconsole.core.plans.profile import ServiceKind, ServiceProfile
from specconsole.core.ports import ServiceBackend, ServiceState, Transport
from specconsole.remote.process import ProcessBackend
from specconsole.remote.transport.ssh import SshTransport
from tests.fixtures.sshd import SshdServer
from tests.remote.helpers import READY, counter_config, drain, read_until, sim_config, ssh_profile


@pytest.fixture
def backend(transport: Transport, tmp_path: Path) -> ProcessBackend:
    profile = ServiceProfile(
        kind=ServiceKind.PROCESS,
        run_dir=str(tmp_path / "run"),
        backup_dir=str(tmp_path / "backups"),
        stop_timeout=5.0,
    )
    return ProcessBackend(transport, profile)


async def test_deploy_start_ready_stop(backend: ProcessBackend) -> None:
    assert isinstance(backend, ServiceBackend)
    config = sim_config()
    preview = await backend.preview(config)
    assert preview.current is None and preview.diff.startswith("---")
    assert "--sim-load-seconds 1" in preview.artifact
    deployment = await backend.deploy(config)
    assert deployment.artifact_hash == preview.artifact_hash
    assert deployment.backup_path is None
    assert await backend.deployed_hash() == preview.artifact_hash
    assert (await backend.preview(config)).diff == ""

    await backend.start()
    try:
        status = await backend.status()
        assert status.state is ServiceState.RUNNING and status.pid
        assert await backend.running_hash() == preview.artifact_hash
        seen = await read_until(backend.logs(), READY)
        assert all(r.cursor for r in seen)
    finally:
        await backend.stop()
    status = await backend.status()
    assert status.state is ServiceState.INACTIVE
    assert status.result == "stopped"


async def test_crash_shows_exit_status_and_fatal_lines(backend: ProcessBackend) -> None:
    await backend.deploy(sim_config(speculative_num_steps=10, speculative_num_draft_tokens=11))
    await backend.start()
    records = await drain(backend.logs())  # ends once the server is gone and the log drained
    texts = [r.text for r in records]
    assert any("Not enough memory" in t for t in texts), texts[-10:]
    assert READY not in texts
    status = await backend.status()
    assert status.state is ServiceState.FAILED
    # Like SGLang, the simulator's launcher kills its own process tree on a scheduler
    # failure, so the exit is "killed by signal 9"; either way the cause is recorded.
    assert status.exit_status not in (0, None) or status.signal is not None
    assert status.result in ("exit-code", "signal")
    assert str(status.signal or status.exit_status) in status.detail


async def test_new_run_never_shows_old_lines(backend: ProcessBackend) -> None:
    await backend.deploy(counter_config(5))
    await backend.start()
    first = [r.text for r in await drain(backend.logs())]
    assert first == [f"line {i}" for i in range(1, 6)]
    await backend.deploy(counter_config(3))
    await backend.start()
    second = [r.text for r in await drain(backend.logs())]
    assert second == ["line 1", "line 2", "line 3"]
    status = await backend.status()
    assert (status.state, status.exit_status, status.result) == (
        ServiceState.EXITED,
        0,
        "success",
    )


async def test_resume_from_cursor_is_exact(backend: ProcessBackend) -> None:
    await backend.deploy(counter_config(30, delay=0))
    await backend.start()
    records = await drain(backend.logs())
    assert len(records) == 30
    rest = await drain(backend.logs(after=records[11].cursor))
    assert [r.text for r in rest] == [f"line {i}" for i in range(13, 31)]


async def test_stop_escalates_to_kill(transport: Transport, tmp_path: Path) -> None:
    backend = ProcessBackend(
        transport, ServiceProfile(run_dir=str(tmp_path / "run"), stop_timeout=1.0)
    )
    await backend.deploy(counter_config(2, ignore_term=True))
    await backend.start()
    await read_until(backend.logs(), "line 2")
    await backend.stop()
    status = await backend.status()
    assert status.state is ServiceState.INACTIVE
    assert status.signal == 9


async def test_redeploy_backs_up_and_rollback_restores(backend: ProcessBackend) -> None:
    first = await backend.deploy(counter_config(1))
    second = await backend.deploy(counter_config(2))
    assert second.backup_path is not None and first.artifact_hash != second.artifact_hash
    restored = await backend.rollback()
    assert restored is not None and restored.artifact_hash == first.artifact_hash
    assert await backend.deployed_hash() == first.artifact_hash
    assert await backend.rollback() is None  # the one backup was consumed


async def test_status_and_logs_before_any_start(backend: ProcessBackend) -> None:
    assert (await backend.status()).state is ServiceState.INACTIVE
    assert await drain(backend.logs()) == []
    await backend.stop()  # nothing to stop: no error
    with pytest.raises(Exception, match="deploy first"):
        await backend.start()


@pytest.mark.ssh
async def test_stream_survives_a_dropped_connection(sshd: SshdServer, tmp_path: Path) -> None:
    ssh = SshTransport(ssh_profile(sshd))
    backend = ProcessBackend(ssh, ServiceProfile(run_dir=str(tmp_path / "run")))
    try:
        # 6 s of output: the stream is still live at both cuts even on a loaded machine.
        await backend.deploy(counter_config(60, delay=0.1))
        await backend.start()
        texts: list[str] = []
        cut: list[object] = []  # the connections cut so far
        async with asyncio.timeout(60):
            async for record in backend.logs():
                texts.append(record.text)
                # Cut the link after line 10, then again after line 35 — the second time on
                # the connection the stream came back on (lines read ahead before the first
                # cut can arrive while the transport still holds the dead one).
                if len(texts) >= (10, 35)[min(len(cut), 1)] and len(cut) < 2:
                    conn = ssh.connection
                    sock = conn.get_extra_info("socket") if conn is not None else None
                    if conn is not None and conn not in cut and sock.fileno() != -1:
                        sock.shutdown(2)
                        cut.append(conn)
        assert texts == [f"line {i}" for i in range(1, 61)]
        assert len(cut) == 2, "the link was not cut twice"
    finally:
        await backend.stop()
        await ssh.close()
