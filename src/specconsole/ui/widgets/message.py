"""The message line: one row above the footer for what nothing else on screen says.

Why not toasts: they stacked over half of the journal and over the editor, repeated the
crash banner and arrived after the user had decided. This line never covers a pane or a
dialog (it sits between the panes and the footer and takes a row only while it has
something to say), holds one line cut to the width, and the newest message replaces the
older one. Which controller notices reach it is ``present.notices``'s decision.
"""

from __future__ import annotations

from textual.widgets import Static

SEVERITIES: tuple[str, ...] = ("information", "warning", "error")


class MessageLine(Static):
    """Shows one message (``say``) until it is replaced, cleared or its time runs out."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.text = ""
        self.display = False

    def say(self, text: str, severity: str = "information", timeout: float | None = 10.0) -> None:
        """Show ``text`` (one line); it clears itself after ``timeout`` seconds (None: it
        stays until replaced)."""
        self.text = " ".join(text.split())
        self.update(f"{self._mark(severity)}{self.text}")
        for name in SEVERITIES:
            self.set_class(name == severity, f"-{name}")
        self.display = bool(self.text)
        if timeout:
            shown = self.text
            self.set_timer(timeout, lambda: self._expire(shown))

    @staticmethod
    def _mark(severity: str) -> str:
        return {"warning": "! ", "error": "✖ "}.get(severity, "")

    def _expire(self, shown: str) -> None:
        if self.text == shown:
            self.clear()

    def clear(self) -> None:
        self.text = ""
        self.update("")
        self.display = False
