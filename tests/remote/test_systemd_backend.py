"""The systemd backend end to end against a real systemd (PID 1 of an nspawn container),
driven through the SSH transport as a user with passwordless sudo — as on a GPU box.

The simulator runs inside the container as a system unit (the checkout and its Python are
bind-mounted read-only at the same paths; see tests/fixtures/nspawn.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from specconsole.core.plans.profile import (
    HostProfile,
    ServiceKind,
    ServiceProfile,
    TransportKind,
    UnitScope,
)
from specconsole.core.ports import (
    HostKeyRejected,
    LogRecord,
    ServiceState,
    ServiceStatus,
    SudoWouldPrompt,
    TransportError,
)
from specconsole.remote.systemd import SystemdBackend
from specconsole.remote.transport.ssh import SshTransport
from tests.fixtures.nspawn import NspawnBox
from tests.remote.helpers import READY, counter_config, sim_config

pytestmark = [pytest.mark.systemd, pytest.mark.slow]


def box_profile(box: NspawnBox, user: str, **overrides: object) -> HostProfile:
    fields: dict[str, object] = {
        "transport": TransportKind.SSH,
        "hostname": box.host,
        "port": box.port,
        "user": user,
        "identity_files": (str(box.client_key),),
        "known_hosts": str(box.known_hosts),
        "ssh_config": "",
        "use_agent": False,
        "reconnect_max_delay": 1.0,
    }
    fields.update(overrides)
    return HostProfile(**fields)  # type: ignore[arg-type]


def unit_profile(unit: str, **overrides: object) -> ServiceProfile:
    return ServiceProfile(kind=ServiceKind.SYSTEMD, unit=unit, **overrides)  # type: ignore[arg-type]


async def records_until(
    logs: AsyncIterator[LogRecord], needle: str, *, timeout: float = 60
) -> list[LogRecord]:
    seen: list[LogRecord] = []
    try:
        async with asyncio.timeout(timeout):
            async for record in logs:
                seen.append(record)
                if needle in record.text:
                    return seen
    finally:
        await logs.aclose()  # type: ignore[attr-defined]
    raise AssertionError(f"journal ended before {needle!r}: {[r.text for r in seen][-15:]}")


async def wait_status(
    backend: SystemdBackend, states: set[ServiceState], *, timeout: float = 30
) -> ServiceStatus:
    async with asyncio.timeout(timeout):
        while True:
            status = await backend.status()
            if status.state in states:
                return status
            await asyncio.sleep(0.2)


@pytest.fixture
async def tester(nspawn_box: NspawnBox) -> AsyncIterator[SshTransport]:
    ssh = SshTransport(box_profile(nspawn_box, nspawn_box.sudo_user))
    try:
        yield ssh
    finally:
        await ssh.close()


async def test_deploy_crash_rollback_cycle(nspawn_box: NspawnBox, tester: SshTransport) -> None:
    unit = "specconsole-sim.service"
    backend = SystemdBackend(tester, unit_profile(unit))
    good = sim_config()
    try:
        # Render, diff against the (absent) unit, upload, daemon-reload, start, see it ready.
        preview = await backend.preview(good)
        assert preview.current is None and "ExecStart=" in preview.diff
        first = await backend.deploy(good)
        assert first.backup_path is None and first.location == f"/etc/systemd/system/{unit}"
        on_box = nspawn_box.ssh(f"cat /etc/systemd/system/{unit}")
        assert on_box == preview.artifact
        assert await backend.deployed_hash() == first.artifact_hash
        await backend.start()
        seen = await records_until(backend.logs(), READY)
        assert all(r.source_time and r.cursor for r in seen)
        status = await backend.status()
        assert status.state is ServiceState.RUNNING and status.pid
        assert await backend.running_hash() == first.artifact_hash
        forward = await tester.forward_local_port(good.port)
        async with httpx.AsyncClient(base_url=forward.url, timeout=10) as client:
            assert (await client.get("/health")).status_code == 200

        # A configuration that cannot load: diffed, backed up, ends in Result=exit-code.
        bad = sim_config(port=good.port, mem_fraction_static=1.5)
        bad_preview = await backend.preview(bad)
        assert "-    --mem-fraction-static 0.88" in bad_preview.diff
        assert "+    --mem-fraction-static 1.5" in bad_preview.diff
        second = await backend.deploy(bad)
        assert await backend.running_hash() is None  # what runs is no longer what is deployed
        assert second.backup_path is not None
        assert second.backup_path.startswith(f"/var/backups/specconsole/{unit}.")
        assert nspawn_box.ssh(f"cat {second.backup_path}") == preview.artifact
        await backend.start()
        crash = await records_until(backend.logs(), "mem-fraction-static must be in (0, 1)")
        texts = [r.text for r in crash]
        assert READY not in texts, "a line of the previous run leaked into this one"
        assert any("Traceback" in t for t in texts)
        failed = await wait_status(backend, {ServiceState.FAILED})
        assert (failed.result, failed.exit_status) == ("exit-code", 1)

        # Roll back: the backed-up unit is restored and the service serves again.
        restored = await backend.rollback()
        assert restored is not None and restored.artifact_hash == first.artifact_hash
        assert nspawn_box.ssh(f"cat /etc/systemd/system/{unit}") == preview.artifact
        assert await backend.deployed_hash() == first.artifact_hash
        await backend.start()
        again = await records_until(backend.logs(), READY)
        assert not any("must be in (0, 1)" in r.text for r in again)
        assert (await backend.status()).state is ServiceState.RUNNING
        async with httpx.AsyncClient(base_url=forward.url, timeout=10) as client:
            assert (await client.get("/health")).status_code == 200

        await backend.stop()
        assert (await backend.status()).state is ServiceState.INACTIVE
    finally:
        await backend.stop()


async def test_load_crash_is_killed_by_signal_with_fatal_lines(tester: SshTransport) -> None:
    backend = SystemdBackend(tester, unit_profile("specconsole-oom.service"))
    await backend.deploy(sim_config(speculative_num_steps=10, speculative_num_draft_tokens=11))
    await backend.start()
    lines = await records_until(backend.logs(), "Received sigquit")
    assert any("Not enough memory" in r.text for r in lines), [r.text for r in lines][-8:]
    status = await wait_status(backend, {ServiceState.FAILED})
    # SGLang's launcher kills its own tree: systemd sees the main process die by SIGKILL.
    assert (status.result, status.signal) == ("signal", 9)


async def test_journal_resumes_after_a_dropped_connection(tester: SshTransport) -> None:
    backend = SystemdBackend(tester, unit_profile("specconsole-count.service"))
    await backend.deploy(counter_config(60, delay=0.03))
    await backend.start()
    texts: list[str] = []
    logs = backend.logs()
    async with asyncio.timeout(60):
        async for record in logs:
            if record.text.startswith("line "):
                texts.append(record.text)
            if len(texts) in (10, 35) and texts[-1] == f"line {len(texts)}":
                assert tester.connection is not None
                tester.connection.get_extra_info("socket").shutdown(2)
            if texts and texts[-1] == "line 60":
                break
    await logs.aclose()
    assert texts == [f"line {i}" for i in range(1, 61)]


async def test_sudo_that_would_prompt_changes_nothing(nspawn_box: NspawnBox) -> None:
    unit = "specconsole-prompt.service"
    ssh = SshTransport(box_profile(nspawn_box, nspawn_box.prompting_user))
    try:
        backend = SystemdBackend(ssh, unit_profile(unit))
        with pytest.raises(SudoWouldPrompt, match="sudo would ask 'prompter' for a password"):
            await backend.deploy(sim_config())
        with pytest.raises(SudoWouldPrompt):
            await backend.start()
    finally:
        await ssh.close()
    assert nspawn_box.ssh(f"test -e /etc/systemd/system/{unit} || echo absent") == "absent\n"


async def test_upload_permission_error_changes_nothing(
    nspawn_box: NspawnBox, tester: SshTransport
) -> None:
    unit = "specconsole-noperm.service"
    backend = SystemdBackend(tester, unit_profile(unit, sudo=False))
    with pytest.raises(TransportError, match=r"Permission denied.*nothing was changed"):
        await backend.deploy(sim_config())
    listing = nspawn_box.ssh("ls -a /etc/systemd/system")
    assert unit not in listing and "specconsole-tmp" not in listing


async def test_missing_unit_is_a_clear_error(tester: SshTransport) -> None:
    backend = SystemdBackend(tester, unit_profile("specconsole-never-deployed.service"))
    status = await backend.status()
    assert (status.state, status.result) == (ServiceState.INACTIVE, "not-found")
    with pytest.raises(TransportError, match=r"not installed .* deploy a configuration first"):
        await backend.start()
    assert [r async for r in backend.logs()] == []
    assert await backend.deployed_hash() is None
    assert await backend.rollback() is None
    await backend.stop()  # nothing to stop: no error


async def test_container_host_key_is_verified(nspawn_box: NspawnBox) -> None:
    wrong = nspawn_box.directory / "wrong_known_hosts"
    wrong.write_text(
        f"[127.0.0.1]:{nspawn_box.port} "
        + (nspawn_box.client_key.with_suffix(".pub").read_text().split()[0])
        + " "
        + nspawn_box.client_key.with_suffix(".pub").read_text().split()[1]
        + "\n"
    )
    ssh = SshTransport(box_profile(nspawn_box, "tester", known_hosts=str(wrong)))
    with pytest.raises(HostKeyRejected):
        await ssh.run("true")
    await ssh.close()


async def test_user_unit_without_sudo(nspawn_box: NspawnBox, tester: SshTransport) -> None:
    unit = "specconsole-user.service"
    backend = SystemdBackend(tester, unit_profile(unit, scope=UnitScope.USER))
    deployment = await backend.deploy(counter_config(5, delay=0.05))
    assert deployment.location == f"/home/tester/.config/systemd/user/{unit}"
    assert "WantedBy=default.target" in nspawn_box.ssh(f"cat {deployment.location}")
    await backend.start()
    records = await records_until(backend.logs(), "line 5")
    assert [r.text for r in records if r.text.startswith("line ")] == [
        f"line {i}" for i in range(1, 6)
    ]
    status = await wait_status(backend, {ServiceState.INACTIVE, ServiceState.FAILED})
    assert (status.state, status.exit_status, status.result) == (
        ServiceState.INACTIVE,
        0,
        "success",
    )
    # Nothing of it is in the system manager: it is tester's own unit.
    assert unit not in nspawn_box.ssh("systemctl list-units --all --no-legend")
