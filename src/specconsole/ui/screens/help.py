"""The ``?`` help screen: every key, one row per key and state, then what the symbols, the
columns and the abbreviations mean — generated from the key table (``present.keyboard.help``), so it
is always the current key map. Laid out for the width it has: rows wrap under their own
column, so nothing is ragged at 80 columns. The pool-only ``n`` shows only on a pool.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.screen import ModalScreen
from textual.widget import Widget

from specconsole.present.keyboard.help import help_lines


class HelpText(Widget):
    """The help page at this widget's width."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"help--title"}

    def __init__(self, *, pool: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self._pool = pool

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(help_lines(width, pool=self._pool))

    def render(self) -> RenderResult:
        title = self.get_component_rich_style("help--title", partial=True)
        text = Text(no_wrap=True, overflow="crop")
        for i, line in enumerate(help_lines(self.content_size.width, pool=self._pool)):
            if i:
                text.append("\n")
            text.append(line.text, style=title if line.kind == "title" else "")
        return text

    @property
    def plain(self) -> str:
        """The page as text at the current width (tests)."""
        return "\n".join(line.text for line in help_lines(self.content_size.width, pool=self._pool))


class HelpScreen(ModalScreen[None]):
    """Key map; any of esc, q or ? closes it; arrows and page keys scroll it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "close", show=False),
        Binding("j", "scroll('down')", "down", show=False),
        Binding("k", "scroll('up')", "up", show=False),
    ]

    def __init__(self, *, pool: bool = False) -> None:
        super().__init__()
        self._pool = pool

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = "Keys"
            box.border_subtitle = "↑ ↓ PgUp PgDn scroll · esc closes"
            yield HelpText(pool=self._pool, id="help-text")

    def on_mount(self) -> None:
        self.query_one("#help-box").focus()

    def action_scroll(self, direction: str) -> None:
        box = self.query_one("#help-box", VerticalScroll)
        if direction == "down":
            box.scroll_down(animate=False)
        else:
            box.scroll_up(animate=False)

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)
