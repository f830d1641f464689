"""App-wide messages: the only way controller news reaches widgets, and intents leave.

``StateChanged`` carries a whole ``ControllerState`` snapshot and replaces an older queued
one (``can_replace``), so a burst of transitions costs one repaint. ``LogBatch`` carries the
log lines the bridge buffered for ~100 ms. ``IntentSent`` is posted whenever the UI hands an
intent to the controller, so tests (and the status line) can observe every key's effect.
The requests below it go up from the screens to the app (which owns the controller handle
and the modal screens), so no screen imports the app. ``StateView`` is what a screen that
draws the controller's state offers the app (the quit dialog's phase stays current).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from textual.message import Message

if TYPE_CHECKING:
    from specconsole.core.machine.intents import Intent
    from specconsole.core.machine.state import ControllerState
    from specconsole.ui.viewmodels import CrashView


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


@dataclass
class SendIntent(Message):
    """A screen asks the app to send ``intent`` to the controller (the app stamps it)."""

    intent: Intent


@dataclass
class RequestAction(Message):
    """A key that changes the box: the app asks first when the key table says so
    (``present.keyboard.keymap.Key.confirm``), naming the target (``present.keyboard.actions``),
    then sends
    ``intent``."""

    command: str
    """The ``present.keyboard.keymap`` command id (``skip``, ``rollback``, ``cancel``, ``deploy``).
    """
    intent: Intent
    selected: int | None = None
    """The trial selected in the trials table (``x`` says when it is not the running one)."""


@dataclass
class Say(Message):
    """Show ``text`` on the message line (one line, never over the panes or a dialog)."""

    text: str
    severity: str = "information"


@dataclass
class OpenCrashDetails(Message):
    """Open the full crash report for ``view``."""

    view: CrashView


@dataclass
class OpenDiff(Message):
    """Open the diff pane at the trial whose row key is ``selected`` (None: the newest)."""

    selected: str | None = None


@dataclass
class OpenHelp(Message):
    """Open the key help."""


@dataclass
class RequestQuit(Message):
    """Leave the console (the app asks first while a trial runs)."""


@runtime_checkable
class StateView(Protocol):
    """A screen that redraws from every new controller snapshot."""

    def render_state(self, state: ControllerState, now: float) -> None: ...
