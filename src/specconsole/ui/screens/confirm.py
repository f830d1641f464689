"""The first deploy of a console session asks first, showing exactly what will change.

Why: on a production box the first thing specconsole does is edit the user's unit and
restart their server. Before that first deploy the console shows the unified diff against
what is on the box now and waits: ``enter``/``y`` deploys (later deploys of the session go
ahead without asking; their diffs stay in the diff pane, ``v``), ``esc``/``n`` cancels,
which leaves the box untouched and the sweep not started. Headless runs never ask.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from specconsole.ui.widgets.diffview import DiffView


class ConfirmDeployScreen(ModalScreen[bool]):
    """Dismisses with True (deploy) or False (cancel)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,y", "choose(True)", "deploy", show=False),
        Binding("escape,n", "choose(False)", "cancel", show=False),
    ]

    def __init__(self, what: str, diff: str) -> None:
        super().__init__()
        self._what = what
        self._diff = diff

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box") as box:
            box.border_title = "First deploy: confirm"
            box.border_subtitle = "enter deploys · esc cancels"
            yield Static(
                f"{self._what}\nThis changes the box as follows (later deploys of this "
                "session go ahead without asking; v shows every diff):",
                id="confirm-what",
                markup=False,
            )
            with VerticalScroll(id="confirm-scroll"):
                yield DiffView(id="confirm-diff")
            with Horizontal(id="confirm-buttons"):
                yield Button("enter deploy", id="deploy", variant="primary")
                yield Button("esc cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one(DiffView).show(self._diff)

    def action_choose(self, deploy: bool) -> None:
        self.dismiss(deploy)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "deploy")
