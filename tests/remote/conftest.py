"""Fixtures for the remote-control tests: both transports against real targets.

``transport`` is parametrised over the local transport and the SSH transport to the real
test sshd (tests/fixtures/sshd.py), so every transport and process-backend test proves the
two behave the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from specconsole.core.ports import Transport
from specconsole.remote.local import LocalTransport
from specconsole.remote.ssh import SshTransport
from tests.fixtures.nspawn import nspawn_box  # noqa: F401  (fixture for this package)
from tests.fixtures.sshd import SshdServer
from tests.remote.helpers import ssh_profile


@pytest.fixture(params=["local", "ssh"])
async def transport(request: pytest.FixtureRequest) -> AsyncIterator[Transport]:
    """The local transport, and the SSH transport to the real test sshd."""
    if request.param == "local":
        yield LocalTransport()
        return
    sshd: SshdServer = request.getfixturevalue("sshd")
    ssh = SshTransport(ssh_profile(sshd))
    try:
        yield ssh
    finally:
        await ssh.close()
