"""App-wide messages: the only way controller news reaches widgets, and intents leave.

``StateChanged`` carries a whole ``ControllerState`` snapshot and replaces an older queued
one (``can_replace``), so a burst of transitions costs one repaint. ``LogBatch`` carries the
log lines the bridge buffered for ~100 ms. ``IntentSent`` is posted whenever the UI hands an
intent to the controller, so tests (and the status line) can observe every key's effect.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from specconsole.core.events import Intent
from specconsole.core.state import ControllerState


@dataclass
class StateChanged(Message):
    """The controller published a new snapshot."""

    state: ControllerState

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StateChanged)


@dataclass
class LogBatch(Message):
    """Server log lines gathered since the last flush, oldest first."""

    lines: tuple[str, ...]
    dropped: int = 0
    """Lines discarded because the UI fell further behind than the buffer bound."""


@dataclass
class IntentSent(Message):
    """The UI sent ``intent`` to the controller."""

    intent: Intent
