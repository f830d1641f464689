"""Fixtures for the real-engine tests: ``llamacpp_build`` and ``llama_server`` come from
tests/fixtures/llamacpp.py (registered in tests/conftest.py); the systemd container, for
running llama-server as a unit, from tests/fixtures/nspawn.py."""

from __future__ import annotations

from tests.fixtures.nspawn import nspawn_box  # noqa: F401  (fixture for this package)
