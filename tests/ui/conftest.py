"""Determinism for the console's tests: no cursor blink, no animations, a fixed clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from textual.widgets import Input

from tests.ui.tmuxdriver import Tmux


@pytest.fixture(autouse=True)
def _no_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    """A blinking cursor would make snapshots depend on timing."""
    monkeypatch.setattr(Input, "cursor_blink", False)
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    """A private tmux server, killed after the test."""
    server = Tmux()
    try:
        yield server
    finally:
        server.kill()
