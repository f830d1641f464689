"""Fixtures for the remote-control tests: both transports against real targets.

``transport`` (tests/fixtures/transports.py) is parametrised over the local transport and the
SSH transport to the real test sshd (tests/fixtures/sshd.py), so every transport and
process-backend test proves the two behave the same.
"""

from __future__ import annotations

from tests.fixtures.nspawn import nspawn_box  # noqa: F401  (fixture for this package)
from tests.fixtures.transports import transport  # noqa: F401  (fixture for this package)
