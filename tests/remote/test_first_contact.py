"""Issue 33 #6: docs/remote.md's "First contact with a box", followed literally against the
real systemd container over its real sshd.

The section's code blocks are read from the document and run as written — the ``~/.ssh/config``
block, ``ssh-keyscan``/``ssh-keygen -lf`` here, the fingerprint loop on the box itself,
trusting the scanned keys, ``ssh gpu-box true``, ``specconsole import`` and the dry run — with
only the example's address and port replaced by the container's (``10.0.0.5`` → ``127.0.0.1``,
``2222`` → its sshd port). ``HOME`` is a fresh folder (empty known_hosts, the client key as
``~/.ssh/id_ed25519``); OpenSSH's ``ssh`` reads its files from the passwd home, not ``$HOME``,
so it is pointed at that folder's config and known_hosts. The box gets a user ``ubuntu`` with
passwordless sudo and SGLang's unit as ``sglang.service``, as the section assumes. Before the
key is trusted, and with a mistyped alias, the error names the next command.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.nspawn import REPO, NspawnBox
from tests.fixtures.sshd import free_port
from tests.remote.test_box_sweep import users_unit
from tests.remote.test_systemd_edit import install_hand_written

pytestmark = [pytest.mark.systemd, pytest.mark.slow]

DOC = REPO / "docs" / "remote.md"
UNIT = "sglang.service"
SHIM = (
    'ssh() { command ssh -F "$HOME/.ssh/config" -i "$HOME/.ssh/id_ed25519" '
    '-o UserKnownHostsFile="$HOME/.ssh/known_hosts" "$@"; }\n'
)
"""OpenSSH's ssh expands ~ from the passwd entry; the user's ~ here is $HOME."""
FINGERPRINT = re.compile(r"SHA256:[A-Za-z0-9+/]+")


def section_blocks() -> list[str]:
    """The fenced code blocks of the "First contact with a box" section, in order."""
    text = DOC.read_text()
    start = text.index("## First contact with a box")
    end = text.index("\n## ", start + 3)
    return re.findall(r"```[a-z]*\n(.*?)```", text[start:end], re.DOTALL)


def run(script: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A block as the user types it, in ``cwd``, with ``HOME`` and specconsole on the PATH."""
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "PYTHONWARNINGS": "ignore",
    }
    return subprocess.run(
        ["sh", "-ec", SHIM + script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def prepare_box(box: NspawnBox, port: int) -> None:
    """What the section assumes of the box: a sudoer ``ubuntu``, sshd's key where
    ``ssh-keygen -lf`` on the box finds it, and SGLang's unit serving."""
    box.ssh(
        "id ubuntu >/dev/null 2>&1 || useradd -m -s /bin/sh ubuntu; "
        "echo 'ubuntu ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/ubuntu; "
        "chmod 440 /etc/sudoers.d/ubuntu; "
        "cp /etc/specconsole-test/ssh_host_ed25519_key.pub /etc/ssh/ssh_host_ed25519_key.pub"
    )
    install_hand_written(box, UNIT, users_unit(port))
    box.ssh(f"systemctl start {UNIT}")


def test_first_contact_as_documented(nspawn_box: NspawnBox, tmp_path: Path) -> None:
    blocks = section_blocks()
    config, scan, on_box, trust, start = blocks
    assert "Host gpu-box" in config and "StrictHostKeyChecking yes" in config
    assert "ssh-keyscan -p 2222 10.0.0.5" in scan
    assert "specconsole import gpu-box" in start and "--dry-run" in start

    def here(text: str) -> str:
        return text.replace("10.0.0.5", nspawn_box.host).replace("2222", str(nspawn_box.port))

    port = free_port()
    prepare_box(nspawn_box, port)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    shutil.copy(nspawn_box.client_key, home / ".ssh" / "id_ed25519")
    (home / ".ssh" / "id_ed25519").chmod(0o600)
    (home / ".ssh" / "config").write_text(here(config))
    work = tmp_path / "work"
    work.mkdir()
    try:
        # before the key is trusted: refused, and the message names the commands of step 2
        refused = run("specconsole import gpu-box -o first.toml", home, work)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        said = refused.stderr
        assert "host key is not trusted" in said, said
        assert f"ssh-keyscan -p {nspawn_box.port} {nspawn_box.host}" in said, said
        assert f"ssh-keygen -R '[{nspawn_box.host}]:{nspawn_box.port}'" in said, said
        # a mistyped alias: ~/.ssh/config has no such Host, and the message says so
        typo = run("specconsole import gpu-bx -o first.toml", home, work)
        assert typo.returncode == 1
        assert "has no Host gpu-bx" in typo.stderr and "'gpu-box'" in typo.stderr, typo.stderr

        scanned = run(here(scan), home, work)
        assert scanned.returncode == 0, scanned.stderr
        ours = set(FINGERPRINT.findall(scanned.stdout))
        theirs = set(FINGERPRINT.findall(nspawn_box.ssh(on_box)))
        assert ours and ours <= theirs, (ours, theirs)  # the comparison the user makes

        trusted = run(here(trust), home, work)
        assert trusted.returncode == 0, trusted.stderr
        assert (
            f"[{nspawn_box.host}]:{nspawn_box.port} " in (home / ".ssh" / "known_hosts").read_text()
        )

        started = run(here(start), home, work)
        out = started.stdout + started.stderr
        assert started.returncode == 0, out
        assert "wrote plan.toml" in out, out
        assert "box gpu-box (ssh" in out, out  # the alias, resolved by the ssh config
        assert "reachable" in out and "serving: /health 200" in out, out
        assert re.search(r"(?m)^trial 1/1 .*:\n    \(no change\)$", out), out
        assert "nothing was changed on the box" in out, out
    finally:
        nspawn_box.ssh(f"systemctl stop {UNIT}; true")
