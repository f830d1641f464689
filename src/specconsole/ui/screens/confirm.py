"""Dialogs that ask before the box changes: the session's first deploy (its whole diff) and
the single keys that throw something away (skip, roll back, deploy, cancel a trial).

Why: on a production box the first thing specconsole does is edit the user's unit and
restart their server. Before that first deploy the console shows the unified diff against
what is on the box now and waits: ``enter``/``y`` deploys (later deploys of the session go
ahead without asking; their diffs stay in the diff pane, ``v``), ``esc``/``n`` cancels,
which leaves the box untouched and the sweep not started. Headless runs never ask.
``ConfirmActionScreen`` asks once for a key (or a discarded edit), with the question and its
lines written by ``present.keyboard.actions``.
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


class ConfirmActionScreen(ModalScreen[bool]):
    """Asks once before a key acts (``present.keyboard.actions.Confirmation``: the question names
    the target, the lines say what happens and which flags change); True = go ahead."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,y", "choose(True)", "yes", show=False),
        Binding("escape,n", "choose(False)", "no", show=False),
    ]

    def __init__(self, title: str, lines: tuple[str, ...], yes: str, no: str = "keep") -> None:
        super().__init__()
        self._title = title
        self._lines = lines
        self._yes = yes
        self._no = no

    def compose(self) -> ComposeResult:
        with Vertical(id="ask-box") as box:
            box.border_title = "Confirm"
            box.border_subtitle = f"enter/y {self._yes} · esc/n {self._no}"
            yield Static(self._title, id="ask-title", markup=False)
            yield Static("\n".join(self._lines), id="ask-lines", markup=False)
            with Horizontal(id="ask-buttons"):
                yield Button(f"y {self._yes}", id="yes", variant="warning")
                yield Button(f"esc {self._no}", id="no")

    def action_choose(self, yes: bool) -> None:
        self.dismiss(yes)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")
