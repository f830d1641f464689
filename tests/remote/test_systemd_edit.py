"""Deploying onto the user's own hand-written unit on a real systemd (nspawn, over the real
sshd): only the managed words change, secrets live in a 0600 EnvironmentFile, backups are
0600 and pruned with the original kept (issue 19)."""

from __future__ import annotations

import dataclasses
import difflib
import shlex
from pathlib import Path

import httpx
import pytest

from specconsole.core.launch.systemd import parse_unit
from specconsole.remote.systemd import SystemdBackend
from specconsole.remote.transport.ssh import SshTransport
from tests.fixtures.nspawn import REPO, NspawnBox
from tests.remote.helpers import READY, SIM
from tests.remote.test_systemd_backend import (
    box_profile,
    records_until,
    unit_profile,
)

pytestmark = [pytest.mark.systemd, pytest.mark.slow]

SECRET = "hf_planted_secret_4b1d"


def hand_written_unit(port: int, user: str) -> str:
    return f"""\
# Hand-written by the box's owner.
[Unit]
Description=Our SGLang server (hand-written)
After=network-online.target

[Service]
User={user}
Group={user}
Environment=HF_HOME=/tmp/hf "OMP_NUM_THREADS=4"
EnvironmentFile=-/etc/default/specconsole-hand
ExecStart={SIM} --model-path Qwen/Qwen3.5-122B-A10B-FP8 \\
    --tp-size 4 \\
    --speculative-algorithm EAGLE3 \\
    --speculative-num-steps 3 \\
    --speculative-eagle-topk 1 \\
    --speculative-num-draft-tokens 4 \\
    --mem-fraction-static 0.88 \\
    --cuda-graph-max-bs 64 \\
    --max-running-requests 64 \\
    --sim-load-seconds 1 \\
    --port {port}
LimitNOFILE=4096
Restart=no

[Install]
WantedBy=multi-user.target
"""


DROP_IN = "[Service]\nEnvironment=NCCL_DEBUG=WARN\nLimitMEMLOCK=infinity\n"


def install_hand_written(box: NspawnBox, unit: str, text: str) -> None:
    box.ssh(
        f"mkdir -p /etc/systemd/system/{unit}.d && "
        f"printf %s {shlex.quote(text)} > /etc/systemd/system/{unit} && "
        f"printf %s {shlex.quote(DROP_IN)} > /etc/systemd/system/{unit}.d/override.conf && "
        "rm -rf /var/backups/specconsole && systemctl daemon-reload"
    )


def changed(old: str, new: str) -> tuple[list[str], list[str]]:
    removed, added = [], []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0):
        if line[:1] == "-" and not line.startswith("---"):
            removed.append(line[1:])
        elif line[:1] == "+" and not line.startswith("+++"):
            added.append(line[1:])
    return removed, added


async def test_deploy_edits_the_users_unit_and_keeps_secrets_out(nspawn_box: NspawnBox) -> None:
    from tests.fixtures.sshd import free_port

    unit = "specconsole-hand.service"
    path = f"/etc/systemd/system/{unit}"
    port = free_port()
    # root: the bind-mounted Python lives under /root (0700); the owner test is below.
    original = hand_written_unit(port, "root")
    install_hand_written(nspawn_box, unit, original)
    ssh = SshTransport(box_profile(nspawn_box, nspawn_box.sudo_user))
    backend = SystemdBackend(ssh, unit_profile(unit, keep_backups=2))
    try:
        main, dropins = await backend.cat()
        assert main == original and "NCCL_DEBUG=WARN" in dropins
        base = parse_unit(main)
        assert base.env == (("HF_HOME", "/tmp/hf"), ("OMP_NUM_THREADS", "4"))

        # The box's own configuration: nothing to change, nothing written.
        assert (await backend.preview(base)).diff == ""

        config = dataclasses.replace(
            base, speculative_num_steps=2, env=(*base.env, ("HF_TOKEN", SECRET))
        )
        preview = await backend.preview(config)
        first = await backend.deploy(config)
        on_box = nspawn_box.ssh(f"cat {path}")
        assert on_box == preview.artifact
        removed, added = changed(original, on_box)
        assert removed == ["    --speculative-num-steps 3 \\"]
        assert added == [
            f"EnvironmentFile={backend.env_file}",
            "    --speculative-num-steps 2 \\",
        ]
        # The diff shown is the diff of the two files.
        assert changed(original, on_box) == (
            [ln[1:] for ln in preview.diff.splitlines() if ln[:1] == "-" and ln[:3] != "---"],
            [ln[1:] for ln in preview.diff.splitlines() if ln[:1] == "+" and ln[:3] != "+++"],
        )
        assert nspawn_box.ssh(f"cat /etc/systemd/system/{unit}.d/override.conf") == DROP_IN

        # The secret: only in the 0600 environment file owned by the service user.
        mode = nspawn_box.ssh(f"stat -c '%a %U' {backend.env_file}").split()
        assert mode == ["600", "root"]
        # The checkout is bind-mounted read-only at its own path (which may lie under /tmp or
        # /root): this test file names the secret there, and nothing a sweep writes lives in it.
        holders = nspawn_box.ssh(
            f"grep -rl {SECRET} /etc /var/backups /tmp /home /root 2>/dev/null; true"
        ).split()
        assert [h for h in holders if not Path(h).is_relative_to(REPO)] == [backend.env_file]
        assert first.backup_path is not None
        assert nspawn_box.ssh(f"cat {first.backup_path}") == original
        assert nspawn_box.ssh(f"stat -c %a {first.backup_path}").strip() == "600"
        assert nspawn_box.ssh("stat -c %a /var/backups/specconsole").strip() == "700"

        # It runs, as the user's User=, with the secret in its environment.
        await backend.start()
        await records_until(backend.logs(), READY)
        environ = nspawn_box.ssh(
            f"cat /proc/$(systemctl show -p MainPID --value {unit})/environ | tr '\\0' '\\n'"
        )
        assert f"HF_TOKEN={SECRET}" in environ and "NCCL_DEBUG=WARN" in environ
        forward = await ssh.forward_local_port(port)
        async with httpx.AsyncClient(base_url=forward.url, timeout=10) as client:
            assert (await client.get("/health")).status_code == 200

        # Backups: newest 2 kept plus the first (the user's original), never pruned.
        for steps in (6, 7, 8):
            await backend.deploy(dataclasses.replace(config, speculative_num_steps=steps))
        backups = nspawn_box.ssh(f"ls /var/backups/specconsole/ | grep '^{unit}\\.'").split()
        assert len(backups) == 3
        assert nspawn_box.ssh(f"cat /var/backups/specconsole/{backups[0]}") == original

        # Without the secret the environment file and its line go again.
        await backend.deploy(base)
        assert nspawn_box.ssh(f"cat {path}") == original
        assert nspawn_box.ssh(f"test -e {backend.env_file} || echo gone") == "gone\n"
    finally:
        await backend.stop()
        await ssh.close()


async def test_the_environment_file_belongs_to_the_service_user(nspawn_box: NspawnBox) -> None:
    unit = "specconsole-owner.service"
    install_hand_written(nspawn_box, unit, hand_written_unit(30000, nspawn_box.sudo_user))
    ssh = SshTransport(box_profile(nspawn_box, nspawn_box.sudo_user))
    backend = SystemdBackend(ssh, unit_profile(unit, secret_env=("MY_SETTING",)))
    try:
        main, _ = await backend.cat()
        assert main is not None
        base = parse_unit(main)
        await backend.deploy(dataclasses.replace(base, env=(("MY_SETTING", SECRET),)))
        owner = nspawn_box.ssh(f"stat -c '%a %U' {backend.env_file}").split()
        assert owner == ["600", nspawn_box.sudo_user]
        assert SECRET not in nspawn_box.ssh(f"cat /etc/systemd/system/{unit}")
    finally:
        await ssh.close()
