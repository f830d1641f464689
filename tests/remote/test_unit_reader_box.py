"""The unit reader against real systemd (nspawn) over the real sshd (issue 27 #10, issue 33
#1): a hand-written unit whose first line is a ``# /etc/...`` comment, with a ``# /dev/shm``
comment right before ``ExecStart=``, ``--model-path $MODEL`` from an ``EnvironmentFile=`` and
a ``%N`` specifier, is read whole — by the box probe's reader, by ``import`` and by the
edit-deploy — as what systemd runs; a deploy changes only the managed word, keeping
``$MODEL``, ``%N`` and the ``EnvironmentFile=`` line, and the unit then serves."""

from __future__ import annotations

import dataclasses
import shlex
import tomllib
from pathlib import Path

import pytest

from specconsole.core.launch.systemd import parse_unit
from specconsole.remote.systemd import SystemdBackend
from specconsole.remote.transport.ssh import SshTransport
from tests.fixtures.nspawn import NspawnBox
from tests.fixtures.sshd import free_port
from tests.remote.helpers import SIM
from tests.remote.test_box_sweep import cli, profile_toml
from tests.remote.test_first_session import wait_health
from tests.remote.test_systemd_backend import box_profile, unit_profile
from tests.remote.test_systemd_edit import changed, install_hand_written

pytestmark = [pytest.mark.systemd, pytest.mark.slow]

UNIT = "specconsole-reader.service"
ENV_PATH = "/etc/default/specconsole-reader"
MODEL = "Qwen/Qwen3.5-122B-A10B-FP8"


def commented_unit(port: int) -> str:
    return f"""\
# /etc/systemd/system/{UNIT} -- Qwen3.5 122B with EAGLE-3
# Owner: the inference team. Edit with care.
[Unit]
Description=Qwen3.5 122B (%N)
After=network-online.target

[Service]
User=root
Environment=HF_HOME=/tmp/hf
EnvironmentFile={ENV_PATH}
# /dev/shm must be >= 16G for NCCL
ExecStart={SIM} --model-path $MODEL \\
    --served-model-name %N \\
    --tp-size 4 \\
    --mem-fraction-static 0.88 \\
    --cuda-graph-max-bs 64 \\
    --max-running-requests 64 \\
    --speculative-algorithm EAGLE3 \\
    --speculative-draft-model-path specconsole/Qwen3.5-122B-A10B-EAGLE3 \\
    --speculative-num-steps 3 \\
    --speculative-eagle-topk 1 \\
    --speculative-num-draft-tokens 4 \\
    --sim-load-seconds 1 \\
    --port {port}
Restart=no

[Install]
WantedBy=multi-user.target
"""


def install(box: NspawnBox, port: int) -> str:
    text = commented_unit(port)
    box.ssh(f"printf %s {shlex.quote(f'MODEL={MODEL}' + chr(10))} > {ENV_PATH}")
    install_hand_written(box, UNIT, text)
    return text


async def test_the_probe_and_deploy_read_the_unit_as_systemd_does(nspawn_box: NspawnBox) -> None:
    port = free_port()
    original = install(nspawn_box, port)
    ssh = SshTransport(box_profile(nspawn_box, "root"))
    backend = SystemdBackend(ssh, unit_profile(UNIT))
    try:
        source = await backend.read_unit()
        assert source is not None and source.cat.main == original  # whole, comments and all
        assert source.cat.fragment == f"/etc/systemd/system/{UNIT}"
        config = parse_unit(source.text or "", source.context)
        assert config.model_path == MODEL and config.port == port
        served = config.extra_args[config.extra_args.index("--served-model-name") + 1]
        assert served == UNIT.removesuffix(".service")
        assert ("MODEL", MODEL) not in config.env  # the file keeps its own variables

        assert (await backend.preview(config)).diff == ""
        await backend.deploy(dataclasses.replace(config, speculative_num_steps=2))
        on_box = nspawn_box.ssh(f"cat /etc/systemd/system/{UNIT}")
        assert changed(original, on_box) == (
            ["    --speculative-num-steps 3 \\"],
            ["    --speculative-num-steps 2 \\"],
        )
        await backend.start()
        wait_health(nspawn_box, port)
        cmdline = nspawn_box.ssh(
            f"tr '\\0' ' ' < /proc/$(systemctl show -p MainPID --value {UNIT})/cmdline"
        )
        assert f"--model-path {MODEL}" in cmdline and "--speculative-num-steps 2" in cmdline
    finally:
        await backend.stop()
        await ssh.close()


def test_import_reads_the_whole_unit(nspawn_box: NspawnBox, tmp_path: Path) -> None:
    port = free_port()
    install(nspawn_box, port)
    profile = tmp_path / "box.toml"
    profile.write_text(profile_toml(nspawn_box).replace("specconsole-sweep.service", UNIT))
    code, out = cli("import", str(profile), "-o", str(tmp_path / "plan.toml"))
    assert code == 0, out
    server = tomllib.loads((tmp_path / "plan.toml").read_text())["server"]
    assert server["model_path"] == MODEL and server["port"] == port
    assert server["speculative_num_steps"] == 3
    assert "--served-model-name" in server["extra_args"]
    code, out = cli("sweep", str(tmp_path / "plan.toml"), "--dry-run")
    assert code == 0, out
    assert "$$MODEL" not in out
