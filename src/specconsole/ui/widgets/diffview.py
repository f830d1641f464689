"""A unified diff drawn with the theme: added lines green, removed red, hunks and headers
muted; in the mono theme bold/strike/dim instead of colour, and the ``+``/``-`` prefixes
always stay, so the diff reads the same under ``NO_COLOR``.

Used by the diff pane (``v``) and the first-deploy confirmation; the line kinds come from
``present.diffs``.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from specconsole.present.diffs import diff_lines
from specconsole.ui.widgets.viewstatic import ViewStatic

DIFF_KINDS: tuple[str, ...] = ("header", "hunk", "add", "remove", "context")


class DiffView(ViewStatic[str]):
    """Shows one unified diff (``show(diff)``)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {f"diff--{kind}" for kind in DIFF_KINDS}

    def show(self, view: str) -> None:
        if view == self._view:
            return
        self._view = view
        styles = {k: self.get_component_rich_style(f"diff--{k}", partial=True) for k in DIFF_KINDS}
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, (kind, line) in enumerate(diff_lines(view)):
            if i:
                text.append("\n")
            text.append(line, style=styles[kind])
        self.update(text)

    @property
    def plain(self) -> str:
        """The diff as shown, without styles (for tests and copy)."""
        return "\n".join(line for _kind, line in diff_lines(self._view or ""))
