"""A token in the user's own unit (issue 33 #8) on the real systemd container over the real
sshd: ``import`` warns once; ``move-secrets`` shows the move as a diff (values redacted),
changes nothing without consent, and with it leaves every value in one 0600 file — the unit
references it, the backups a session made are rewritten — and the server, restarted, gets
the same environment and the same ``--api-key``.

Where a copy could be, :func:`holders` looks — exactly, not by a guess of folders: every
regular file on every writable filesystem of the box (the overlay root, ``/tmp``, ``/run``,
``/dev/shm`` …; ``/proc`` and ``/sys`` are the kernel's, not files) changed since the test
began. A grep of ``/etc /var/backups /tmp /root`` missed ``/run``, ``/var/lib`` or ``/home``
and read 5.4 GB under ``/root`` that no write can reach: the read-only binds of the host's
Python and of the real-engine beds' caches (21–35 s at load 10, past its 30 s bound). The
read-only binds are left out because nothing can write there, files older than the test
because no copy of a value it just planted can be; what is left is a few dozen files,
searched in 1.2–1.9 s at the same load, two SSH round trips included."""

from __future__ import annotations

import asyncio
import dataclasses
import shlex
from pathlib import Path

import pytest

from specconsole.core.plans.parse import loads_plan
from specconsole.remote.systemd import SystemdBackend
from specconsole.remote.transport.ssh import SshTransport
from tests.fixtures.nspawn import NspawnBox
from tests.fixtures.sshd import free_port
from tests.remote.helpers import SIM
from tests.remote.test_box_sweep import cli, profile_toml
from tests.remote.test_first_session import wait_health
from tests.remote.test_systemd_backend import box_profile, unit_profile
from tests.remote.test_systemd_edit import install_hand_written

pytestmark = [pytest.mark.systemd, pytest.mark.slow]

UNIT = "specconsole-tokens.service"
TOKEN = "hf_movedTokenValue0123456789abcdefgh"
KEY = "sk-moved-api-key-0123456789abcdef"


def unit_with_tokens(port: int) -> str:
    return f"""\
[Unit]
Description=SGLang with its token inline

[Service]
User=root
Environment=HF_HOME=/tmp/hf HF_TOKEN={TOKEN}
ExecStart={SIM} --model-path Qwen/Qwen3.5-122B-A10B-FP8 \\
    --tp-size 4 \\
    --speculative-algorithm EAGLE3 \\
    --speculative-draft-model-path specconsole/Qwen3.5-122B-A10B-EAGLE3 \\
    --speculative-num-steps 3 \\
    --speculative-eagle-topk 1 \\
    --speculative-num-draft-tokens 4 \\
    --mem-fraction-static 0.88 \\
    --cuda-graph-max-bs 64 \\
    --max-running-requests 64 \\
    --api-key {KEY} \\
    --sim-load-seconds 1 \\
    --port {port}
Restart=no

[Install]
WantedBy=multi-user.target
"""


KERNEL_TREES = ("/proc", "/sys")
"""Mounted, writable, but the kernel's interfaces, not files anything leaves behind (reading
some of them, ``/proc/kmsg``, blocks)."""


def box_clock(box: NspawnBox) -> int:
    """The box's clock now, less a second: file times come from the kernel's coarse clock,
    which may lag the one ``date`` reads by a tick, so a file written right after this
    reading never looks older than it."""
    return int(box.ssh("date +%s").strip()) - 1


def writable_mounts(mountinfo: str) -> list[str]:
    """The mount points of ``/proc/self/mountinfo`` a write can reach (mount option ``rw``),
    outside the kernel's trees."""
    found: set[str] = set()
    for line in mountinfo.splitlines():
        fields = line.split()
        point = fields[4].encode().decode("unicode_escape")  # octal escapes: \040 is a space
        if "rw" not in fields[5].split(","):
            continue
        if any(point == tree or point.startswith(tree + "/") for tree in KERNEL_TREES):
            continue
        found.add(point)
    return sorted(found)


def holders(box: NspawnBox, value: str, since: int) -> list[str]:
    """Every regular file on the box's writable filesystems changed after ``since`` (a
    :func:`box_clock` reading) that holds ``value`` (see the module docstring)."""
    mounts = " ".join(shlex.quote(m) for m in writable_mounts(box.ssh("cat /proc/self/mountinfo")))
    found = box.ssh(
        f"find {mounts} -xdev -type f -newerct @{since} "
        f"-exec grep -lF -e {shlex.quote(value)} -- {{}} + 2>/dev/null; true"
    )
    return sorted(set(found.split()))


def test_holders_finds_a_copy_on_every_writable_filesystem(nspawn_box: NspawnBox) -> None:
    """The search the move is judged by is not narrower than the box: a copy in the root's
    folders, in each tmpfs and in a hidden temp file is found, and nothing else is."""
    since = box_clock(nspawn_box)
    value = "hf_plantedEverywhere0123456789abcdef"
    planted = [
        "/etc/systemd/system/planted.service.d/.override.conf.specconsole-tmp.1",
        "/var/lib/planted",
        "/home/planted",
        "/root/.planted",
        "/tmp/planted",
        "/run/planted",
        "/dev/shm/planted",
    ]
    quoted = " ".join(shlex.quote(path) for path in planted)
    nspawn_box.ssh(f'for f in {quoted}; do mkdir -p "$(dirname "$f")" && echo {value} > "$f"; done')
    try:
        assert holders(nspawn_box, value, since) == sorted(planted)
    finally:
        nspawn_box.ssh(f"rm -f {quoted}; rmdir /etc/systemd/system/planted.service.d")
    assert holders(nspawn_box, value, since) == []


async def deploy_twice(box: NspawnBox, plan: str) -> None:
    """What a session of the imported plan does to the unit: two deploys, each backing it up
    first (the plan does not name the secrets: they stay the unit's)."""
    ssh = SshTransport(box_profile(box, "root"))
    backend = SystemdBackend(ssh, unit_profile(UNIT))
    try:
        base = loads_plan(plan).base
        for steps in (2, 4):
            await backend.deploy(dataclasses.replace(base, speculative_num_steps=steps))
    finally:
        await ssh.close()


def test_import_warns_and_move_secrets_leaves_one_copy(
    nspawn_box: NspawnBox, tmp_path: Path
) -> None:
    port = free_port()
    since = box_clock(nspawn_box)
    install_hand_written(nspawn_box, UNIT, unit_with_tokens(port))
    profile = tmp_path / "box.toml"
    profile.write_text(profile_toml(nspawn_box).replace("specconsole-sweep.service", UNIT))

    code, out = cli("import", str(profile), "-o", str(tmp_path / "plan.toml"))
    assert code == 0, out
    assert out.count("holds HF_TOKEN, --api-key inline") == 1 and "move-secrets" in out
    plan = (tmp_path / "plan.toml").read_text()
    assert TOKEN not in plan and KEY not in plan and "--api-key" in plan  # named, not copied

    asyncio.run(deploy_twice(nspawn_box, plan))  # its backups hold the token (not moved yet)
    before = holders(nspawn_box, TOKEN, since)
    unit_path = f"/etc/systemd/system/{UNIT}"
    backups = nspawn_box.ssh(f"ls /var/backups/specconsole/{UNIT}.*").split()
    assert len(backups) == 2 and before == sorted([unit_path, *backups])  # nothing else yet
    on_box = nspawn_box.ssh(f"cat {unit_path}")
    code, out = cli("move-secrets", str(profile))  # no terminal, no --yes: nothing changes
    assert code == 1 and "<redacted>" in out and TOKEN not in out and KEY not in out
    assert nspawn_box.ssh(f"cat {unit_path}") == on_box

    code, out = cli("move-secrets", str(profile), "--yes")
    assert code == 0, out
    assert TOKEN not in out and KEY not in out
    env_file = f"/var/backups/specconsole/{UNIT}-user-env"
    assert holders(nspawn_box, TOKEN, since) == [env_file]
    assert holders(nspawn_box, KEY, since) == [env_file]
    assert nspawn_box.ssh(f"stat -c %a {env_file}").strip() == "600"
    moved = nspawn_box.ssh(f"cat {unit_path}")
    assert f"EnvironmentFile={env_file}" in moved and "--api-key ${SPECCONSOLE_API_KEY}" in moved
    assert "Environment=HF_HOME=/tmp/hf\n" in moved

    nspawn_box.ssh(f"systemctl restart {UNIT}")
    wait_health(nspawn_box, port)
    pid = nspawn_box.ssh(f"systemctl show -p MainPID --value {UNIT}").strip()
    assert f"HF_TOKEN={TOKEN}" in nspawn_box.ssh(f"tr '\\0' '\\n' < /proc/{pid}/environ")
    assert f"--api-key {KEY}" in nspawn_box.ssh(f"tr '\\0' ' ' < /proc/{pid}/cmdline")
    nspawn_box.ssh(f"systemctl stop {UNIT}")
