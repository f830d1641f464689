"""Crash details: everything the banner abbreviates, with the same single-key choices.

Opened with ``c`` from the banner. It dismisses with the chosen ``ResumeChoice`` (the main
screen turns it into a ``Resume`` intent) or ``None`` to go back to the banner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from specconsole.core.machine.state import ResumeChoice
from specconsole.present.keyboard.keys import BY_ID, CHOICE_COMMANDS

if TYPE_CHECKING:
    from specconsole.ui.viewmodels import CrashView

_KEY_CHOICES: dict[str, ResumeChoice] = {
    BY_ID[command].key: choice for choice, command in CHOICE_COMMANDS.items()
}
"""The key of each decision (``present.keyboard.keys``); the view lists the ones available now."""


class CrashScreen(ModalScreen[ResumeChoice | None]):
    """Full crash report with choices."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,c", "back", "back", show=False),
        *(
            Binding(key, f"choose('{key}')", choice.value.replace("_", " "), show=False)
            for key, choice in _KEY_CHOICES.items()
        ),
    ]

    def __init__(self, view: CrashView) -> None:
        super().__init__()
        self._view = view

    def compose(self) -> ComposeResult:
        view = self._view
        with Vertical(id="crash-box") as box:
            box.border_title = "Crash"
            box.border_subtitle = "esc back"
            yield Static(view.title, id="crash-title", markup=False)
            yield Static(view.cause, id="crash-cause", markup=False)
            with VerticalScroll(id="crash-excerpt"):
                yield Static("\n".join(view.excerpt) or "(no log lines)", markup=False)
            fixes = "\n".join(f"→ {fix}" for fix in view.fixes) or "(no suggestion)"
            yield Static(fixes, id="crash-fixes", markup=False)
            keys = " · ".join(f"{key} {label}" for key, label in view.choices)
            yield Static(keys or "(no decision is open)", id="crash-keys", markup=False)

    def action_back(self) -> None:
        self.dismiss(None)

    def action_choose(self, key: str) -> None:
        allowed = {k for k, _label in self._view.choices}
        if key not in allowed:
            self.notify(f"{key}: that choice is not possible now.", severity="warning")
            return
        self.dismiss(_KEY_CHOICES[key])
