"""Quit confirmation, shown when a trial is in progress, and the leaving screen.

Leaving the console never stops the remote server by default: the choices are to leave it
running (the normal case: a 100-second load is not thrown away by a mistyped ``q``), to stop
it explicitly (``s``: ``x`` cancels a trial on the main screen, so it means nothing here), or
to stay. The dialog redraws with every controller snapshot, so what it says about the trial
is never stale. Quitting after a finished sweep carries out ``[sweep] finally``
(default: deploy the best trial) and waits until the box serves: ``LeavingScreen`` shows
each step; a second ``q`` (or ctrl+c) leaves at once, saying the box may be mid-change.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from specconsole.ui import adapt

if TYPE_CHECKING:
    from specconsole.core.machine.state import ControllerState


class QuitChoice(StrEnum):
    STAY = "stay"
    LEAVE_RUNNING = "leave_running"
    """Quit; the server keeps running on the box."""
    STOP_SERVER = "stop_server"


class QuitScreen(ModalScreen[QuitChoice]):
    """Asks before leaving while a trial runs."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,n", "choose('stay')", "stay", show=False),
        Binding("q,y", "choose('leave_running')", "quit, leave server running", show=False),
        Binding("s", "choose('stop_server')", "stop server and quit", show=False),
    ]

    def __init__(self, state: ControllerState, now: float) -> None:
        super().__init__()
        self._text = self._describe(state, now)

    @staticmethod
    def _describe(state: ControllerState, now: float) -> str:
        if state.busy:
            trial = f"Trial {state.trial.index + 1}" if state.trial is not None else "A trial"
            what = f"{trial} is in progress ({adapt.phase_label(state)})."
        else:
            what = f"No trial is running now ({adapt.phase_label(state)})."
        return (
            f"{what}\nQuitting leaves the server on the box exactly as it is;\n"
            "the session keeps every finished trial."
        )

    def render_state(self, state: ControllerState, now: float) -> None:
        """Keep the phase current while the dialog is open."""
        self._text = self._describe(state, now)
        if self.is_mounted:
            self.query_one("#quit-what", Static).update(self._text)

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-box") as box:
            box.border_title = "Quit?"
            yield Static(self._text, id="quit-what", markup=False)
            with Horizontal(id="quit-buttons"):
                yield Button("q quit", id="leave_running", variant="primary")
                yield Button("s stop server + quit", id="stop_server", variant="error")
                yield Button("esc stay", id="stay")

    def action_choose(self, choice: str) -> None:
        self.dismiss(QuitChoice(choice))

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id is not None:
            self.dismiss(QuitChoice(event.button.id))


class LeavingScreen(ModalScreen[None]):
    """Progress of ``[sweep] finally`` while quitting; q/ctrl+c forces the quit."""

    class ForceQuit(Message):
        """The user pressed quit again: leave now."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q,ctrl+c", "force", "quit now", show=False, priority=True),
    ]

    def __init__(self, action: str) -> None:
        super().__init__()
        self._action = action
        self._lines: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-box") as box:
            box.border_title = f"Leaving: finally = {self._action}"
            box.border_subtitle = "q again quits now"
            yield Static("", id="leaving-progress", markup=False)

    def on_mount(self) -> None:
        self._draw()

    def progress(self, line: str) -> None:
        """Add one step to what the screen shows (kept until it is mounted)."""
        self._lines.append(line)
        if self.is_mounted:
            self._draw()

    def _draw(self) -> None:
        self.query_one("#leaving-progress", Static).update("\n".join(self._lines))

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(self._lines)

    def action_force(self) -> None:
        self.post_message(self.ForceQuit())
