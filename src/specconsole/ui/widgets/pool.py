"""The pool lanes: one line per box of a pool under the header.

Why a widget of its own: on a pool the header speaks for the focused box only; the lanes
say at a glance what every box is doing (phase, trial, elapsed, its last journal line), and
which one the journal pane shows (marked ``▶``; ``n`` moves to the next box). It renders
``present.pool.LaneView`` values from one reactive and knows nothing about the controller;
outside a pool it is hidden.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

if TYPE_CHECKING:
    from specconsole.present.pool import LaneView

TONES: tuple[str, ...] = ("good", "bad", "busy", "quiet")


class PoolLanes(Widget):
    """Draws ``lanes``; one terminal line each."""

    DEFAULT_CSS = """
    PoolLanes {
        height: auto;
        max-height: 9;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "lanes--box",
        "lanes--focused",
        "lanes--meta",
        "lanes--tail",
        *(f"lanes--{tone}" for tone in TONES),
    }

    lanes: reactive[tuple[LaneView, ...]] = reactive((), layout=True)

    def watch_lanes(self, lanes: tuple[LaneView, ...]) -> None:
        self.display = bool(lanes)

    def on_mount(self) -> None:
        self.display = bool(self.lanes)

    def render(self) -> Text:
        style = lambda name: self.get_component_rich_style(f"lanes--{name}", partial=True)  # noqa: E731
        width = max((len(lane.box) for lane in self.lanes), default=0)
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, lane in enumerate(self.lanes):
            if i:
                text.append("\n")
            marker = "▶ " if lane.focused else "  "
            text.append(marker, style=style("focused"))
            text.append(lane.box.ljust(width), style=style("focused" if lane.focused else "box"))
            text.append(" ")
            text.append(f" {lane.phase} ", style=style(lane.tone))
            for part in (lane.elapsed, lane.trial):
                if part:
                    text.append(f"  {part}", style=style("meta"))
            if lane.tail:
                text.append("  │ ", style=style("meta"))
                text.append(lane.tail, style=style("tail"))
        return text
