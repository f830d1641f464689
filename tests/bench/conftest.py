"""Fixtures for the benchmark tests: ``transport`` runs a test over the local transport and
over SSH to the real test sshd (tests/fixtures/transports.py)."""

from __future__ import annotations

from tests.fixtures.transports import transport  # noqa: F401  (fixture for this package)
