"""The crash banner: shown on the main screen while a crashed trial awaits a decision.

It says what happened in one glance (trial, phase, the cause in words), lists the one-key
choices with what each would deploy (``r resume: steps=7 · S skip steps=7 → steps=8 · o roll
back to steps=5``), then the fixes — the one on the sweep's own axis first — the server's
message and the last log lines, as many as fit. Which rows fit a width is
``present.crashtext.banner_rows``'s decision; this widget draws them. It is a banner rather
than a modal so the journal stays visible under it; the full report is one key away (``c``,
see ``screens.crash``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import RenderResult
from textual.geometry import Size
from textual.reactive import reactive
from textual.widget import Widget

from specconsole.present.crashtext import banner_rows, pack

if TYPE_CHECKING:
    from specconsole.ui.viewmodels import CrashView

WIDE_ROWS = 7
COMPACT_ROWS = 5
"""Text rows the banner may take (inside its border) in the wide and the stacked layout."""


CHOICE_ROWS = 2
"""Rows the choices may take; with their targets they must fit in these, or go without."""


def choice_items(view: CrashView, width: int) -> list[str]:
    """``r resume: steps=7``, … for exactly the choices the controller allows now (without
    their targets when those would not fit in ``CHOICE_ROWS``), then the details key (or,
    while the crash is still being recorded, that it is)."""
    for choices in (view.previews or view.choices, view.choices):
        items = [f"{key} {label}" for key, label in choices]
        if not items:
            items.append("recording the crash…")
        items.append("c details")
        if len(pack(items, width)) <= CHOICE_ROWS:
            return items
    return items


class CrashBanner(Widget):
    """Renders a ``CrashView`` in the rows it has; hidden when there is none."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "crash--title",
        "crash--keys",
        "crash--dim",
        "crash--fix",
    }

    rows: reactive[int] = reactive(WIDE_ROWS, layout=True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._view: CrashView | None = None

    @property
    def view(self) -> CrashView | None:
        return self._view

    def show(self, view: CrashView | None) -> None:
        if view == self._view:
            return
        self._view = view
        self.display = view is not None
        self.refresh(layout=True)

    def _rows(self, width: int) -> list[tuple[str, str]]:
        view = self._view
        if view is None:
            return []
        return banner_rows(
            f"✖ {view.title}",
            choice_items(view, width),
            view.fixes,
            view.cause,
            view.excerpt,
            width,
            self.rows,
        )

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return max(1, len(self._rows(width)))

    def render(self) -> RenderResult:
        styles = {
            "title": self.get_component_rich_style("crash--title", partial=True),
            "keys": self.get_component_rich_style("crash--keys", partial=True),
            "dim": self.get_component_rich_style("crash--dim", partial=True),
            "fix": self.get_component_rich_style("crash--fix", partial=True),
        }
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, (kind, line) in enumerate(self._rows(self.content_size.width)):
            if i:
                text.append("\n")
            text.append(line, style=styles.get(kind, ""))
        return text

    @property
    def plain(self) -> str:
        """The banner as text at its current width (tests)."""
        return "\n".join(line for _k, line in self._rows(self.content_size.width))
