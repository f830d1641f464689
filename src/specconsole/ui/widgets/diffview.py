"""A deploy's diff drawn with the theme: the flag-level summary first, then the unified diff
with added lines green and removed red, wrapped rows keeping their ``+``/``-`` gutter and
the changed words marked; in the mono theme bold/strike/dim and reverse instead of colour,
so the diff reads the same under ``NO_COLOR``.

Used by the diff pane (``v``) and the first-deploy confirmation; the rows for a width come
from ``present.deploys.diffrows`` (the summary from ``present.deploys.flagdiff``).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import RenderResult
from textual.geometry import Size
from textual.widget import Widget

from specconsole.present.deploys.diffrows import diff_rows
from specconsole.present.deploys.diffs import diff_lines

DIFF_KINDS: tuple[str, ...] = ("header", "hunk", "add", "remove", "context", "title", "summary")


class DiffView(Widget):
    """Shows one unified diff (``show(diff)``) laid out for its width."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *(f"diff--{kind}" for kind in DIFF_KINDS),
        "diff--changed",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._view = ""

    def show(self, view: str) -> None:
        if view == self._view:
            return
        self._view = view
        self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(diff_rows(self._view, width))

    def render(self) -> RenderResult:
        styles = {k: self.get_component_rich_style(f"diff--{k}", partial=True) for k in DIFF_KINDS}
        changed = self.get_component_rich_style("diff--changed", partial=True)
        text = Text(no_wrap=True, overflow="crop")
        for i, row in enumerate(diff_rows(self._view, self.content_size.width)):
            if i:
                text.append("\n")
            start = len(text)
            text.append(row.text, style=styles.get(row.kind, ""))
            for a, b in row.spans:
                text.stylize(changed, start + a, start + b)
        return text

    @property
    def plain(self) -> str:
        """The diff as given, without styles (for tests and copy)."""
        return "\n".join(line for _kind, line in diff_lines(self._view or ""))

    @property
    def shown(self) -> str:
        """The rows as drawn at the current width (tests)."""
        return "\n".join(row.text for row in diff_rows(self._view, self.content_size.width))
