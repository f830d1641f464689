"""A schedule's side file deployed beside the unit or script (issue 30): SGLang's adaptive
config goes to the backend's folder before the artifact that names it, is shown in the
deploy's diff, and the real simulator process reads it and runs the adaptive mode.

The process backend over both transports (local, the real test sshd) and the systemd backend
in the real systemd container.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import httpx
import pytest

from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.registry import get_engine
from specconsole.core.plans.profile import ServiceKind, ServiceProfile
from specconsole.core.ports import Transport
from specconsole.remote.process import ProcessBackend
from specconsole.remote.systemd import SystemdBackend
from specconsole.remote.transport.ssh import SshTransport
from tests.fixtures.nspawn import NspawnBox
from tests.remote.helpers import READY, read_until, sim_config
from tests.remote.test_systemd_backend import box_profile, records_until, unit_profile

SCHEDULE = "1:5,3:4,9:3"


def schedule_config(**overrides: object) -> ServerConfig:
    """The simulator's launch as a schedule: steps 5 up to batch 2, 4 up to 8, then 3."""
    base = sim_config(engine_version="0.5.14", **overrides)
    return dataclasses.replace(
        base,
        speculative_num_steps=5,
        speculative_num_draft_tokens=6,
        speculative_adaptive_schedule=SCHEDULE,
    )


def _side_file(config: ServerConfig) -> tuple[str, str]:
    (file,) = get_engine("sglang").side_files(config)
    return file.name, file.text


async def test_process_backend_deploys_the_schedule_file(
    transport: Transport, tmp_path: Path
) -> None:
    profile = ServiceProfile(
        kind=ServiceKind.PROCESS, run_dir=str(tmp_path / "run"), stop_timeout=5.0
    )
    backend = ProcessBackend(transport, profile)
    config = schedule_config()
    name, text = _side_file(config)
    folder = await backend.side_dir()
    assert folder == str(tmp_path / "run" / "files")
    preview = await backend.preview(config)
    assert f"{folder}/{name} (new)" in preview.diff and '"candidate_steps": [5]' in preview.diff
    assert f"--speculative-adaptive-config {folder}/{name}" in preview.artifact
    await backend.deploy(config)
    assert (tmp_path / "run" / "files" / name).read_text() == text
    assert (await backend.preview(config)).diff == ""  # the file is there, the script too
    await backend.start()
    try:
        seen = await read_until(backend.logs(), READY)
        texts = [r.text for r in seen]
        assert any("AdaptiveSpeculativeParams initialized: steps=5" in t for t in texts)
        assert any("Built adaptive runtime state steps=3" in t for t in texts)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{config.port}") as client:
            info = (await client.get("/server_info")).json()
        assert info["speculative_adaptive"] is True
        assert info["speculative_adaptive_config"] == f"{folder}/{name}"
    finally:
        await backend.stop()


@pytest.mark.systemd
@pytest.mark.slow
async def test_systemd_backend_deploys_the_schedule_file_beside_the_unit(
    nspawn_box: NspawnBox,
) -> None:
    ssh = SshTransport(box_profile(nspawn_box, nspawn_box.sudo_user))
    unit = "specconsole-schedule.service"
    backend = SystemdBackend(ssh, unit_profile(unit))
    config = schedule_config()
    name, text = _side_file(config)
    try:
        folder = await backend.side_dir()
        assert folder == f"/var/backups/specconsole/{unit}-files"
        preview = await backend.preview(config)
        assert f"{folder}/{name} (new)" in preview.diff
        await backend.deploy(config)
        assert nspawn_box.ssh(f"cat {folder}/{name}") == text
        assert f"--speculative-adaptive-config {folder}/{name}" in nspawn_box.ssh(
            f"cat /etc/systemd/system/{unit}"
        )
        await backend.start()
        seen = await records_until(backend.logs(), READY)
        assert any("AdaptiveSpeculativeParams initialized" in r.text for r in seen)
        forward = await ssh.forward_local_port(config.port)
        async with httpx.AsyncClient(base_url=forward.url, timeout=10) as client:
            info = (await client.get("/server_info")).json()
        assert info["speculative_adaptive"] is True, json.dumps(info)[:500]
    finally:
        await backend.stop()
        await ssh.close()
