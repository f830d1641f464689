"""The ``?`` help screen: every key, generated from the bindings so it can never drift."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEY_LABELS: dict[str, str] = {
    "slash": "/",
    "question_mark": "?",
    "escape": "esc",
    "ctrl+s": "ctrl+s",
    "enter": "enter",
}


def key_label(key: str) -> str:
    """How a binding's key is written for humans."""
    return ", ".join(KEY_LABELS.get(k.strip(), k.strip()) for k in key.split(","))


def key_table(bindings: Iterable[BindingType]) -> list[tuple[str, str]]:
    """(key, what it does) rows for ``Binding`` objects (tuples are skipped)."""
    rows = []
    for binding in bindings:
        if isinstance(binding, Binding) and binding.description:
            rows.append((key_label(binding.key), binding.tooltip or binding.description))
    return rows


def help_text() -> str:
    """The whole help page as plain text (also used for the README key map)."""
    from specconsole.ui.screens.editor import EditorScreen
    from specconsole.ui.screens.main import MainScreen

    sections = [
        ("Main screen", key_table(MainScreen.BINDINGS)),
        ("Parameter editor (e)", key_table(EditorScreen.BINDINGS)),
    ]
    lines = []
    for title, rows in sections:
        lines.append(title)
        lines.extend(f"  {key:<8} {desc}" for key, desc in rows)
        lines.append("")
    lines.extend(
        [
            "After a crash: r resumes with the next planned configuration; t retries the",
            "same one, e edits then deploys, k skips the next one, o rolls back to the",
            "last configuration that loaded. Quitting during a trial never stops the server",
            "unless you choose to in the quit dialog; quitting after a finished sweep first",
            "carries out [sweep] finally (default: serve the best trial; q again skips it).",
            "The session's first deploy shows its diff and asks: enter deploys, esc cancels.",
        ]
    )
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    """Key map; any of esc, q or ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = "Keys"
            box.border_subtitle = "esc closes"
            yield Static(help_text(), markup=False, id="help-text")

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)
