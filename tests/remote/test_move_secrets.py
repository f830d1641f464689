"""A token in the user's own unit (issue 33 #8) on the real systemd container over the real
sshd: ``import`` warns once; ``move-secrets`` shows the move as a diff (values redacted),
changes nothing without consent, and with it leaves every value in one 0600 file — the unit
references it, the backups a session made are rewritten — and the server, restarted, gets
the same environment and the same ``--api-key``."""

from __future__ import annotations

import asyncio
import dataclasses
import shlex
from pathlib import Path

import pytest

from specconsole.core.plans.parse import loads_plan
from specconsole.remote.systemd import SystemdBackend
from specconsole.remote.transport.ssh import SshTransport
from tests.fixtures.nspawn import REPO, NspawnBox
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


def holders(box: NspawnBox, value: str) -> list[str]:
    found = box.ssh(f"grep -rl {shlex.quote(value)} /etc /var/backups /tmp /root 2>/dev/null; true")
    return sorted(h for h in found.split() if not Path(h).is_relative_to(REPO))


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
    install_hand_written(nspawn_box, UNIT, unit_with_tokens(port))
    profile = tmp_path / "box.toml"
    profile.write_text(profile_toml(nspawn_box).replace("specconsole-sweep.service", UNIT))

    code, out = cli("import", str(profile), "-o", str(tmp_path / "plan.toml"))
    assert code == 0, out
    assert out.count("holds HF_TOKEN, --api-key inline") == 1 and "move-secrets" in out
    plan = (tmp_path / "plan.toml").read_text()
    assert TOKEN not in plan and KEY not in plan and "--api-key" in plan  # named, not copied

    asyncio.run(deploy_twice(nspawn_box, plan))  # its backups hold the token (not moved yet)
    before = holders(nspawn_box, TOKEN)
    assert len(before) >= 3  # the unit and two backups

    unit_path = f"/etc/systemd/system/{UNIT}"
    on_box = nspawn_box.ssh(f"cat {unit_path}")
    code, out = cli("move-secrets", str(profile))  # no terminal, no --yes: nothing changes
    assert code == 1 and "<redacted>" in out and TOKEN not in out and KEY not in out
    assert nspawn_box.ssh(f"cat {unit_path}") == on_box

    code, out = cli("move-secrets", str(profile), "--yes")
    assert code == 0, out
    assert TOKEN not in out and KEY not in out
    env_file = f"/var/backups/specconsole/{UNIT}-user-env"
    assert holders(nspawn_box, TOKEN) == [env_file] and holders(nspawn_box, KEY) == [env_file]
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
