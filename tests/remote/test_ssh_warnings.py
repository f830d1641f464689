"""A user never sees a library's warnings (issue 27, #18): asyncssh's import made the
cryptography package print ``CryptographyDeprecationWarning: DSA is deprecated`` five times at
the start of every headless run. The filter is narrow: that category, from asyncssh only."""

from __future__ import annotations

import subprocess
import sys

from tests.bench.servers import ROOT


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "default", "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_importing_the_ssh_transport_prints_no_warning() -> None:
    done = python(
        "from specconsole.remote.transport.ssh import SshTransport\n"
        "import asyncssh\n"
        "asyncssh.import_private_key(asyncssh.generate_private_key('ssh-ed25519')"
        ".export_private_key())\n"
    )
    assert done.returncode == 0, done.stderr
    assert "CryptographyDeprecationWarning" not in done.stderr
    assert done.stderr == ""


def test_the_filter_is_narrow() -> None:
    done = python(
        "import warnings\n"
        "import specconsole.remote.transport.sshlib\n"
        "from cryptography.utils import CryptographyDeprecationWarning\n"
        "warnings.warn('elsewhere', CryptographyDeprecationWarning)\n"
        "warnings.warn('a user warning', UserWarning)\n"
    )
    assert "elsewhere" in done.stderr and "a user warning" in done.stderr
