"""Throughput charts drawn with textual-plotext, each owning its own ``Plot`` once it has data.

Two views of the sweep, as the tuning question needs them: aggregate output tok/s against
concurrency with one line per trial (where does each configuration peak?), and
single-request tok/s against the swept axis (does drafting deeper still pay?). What is drawn
and how each series looks (colour, or marker under ``mono``; crashed trials as ``✖`` on the
x axis) is ``present.charts.textcharts``, shared with the text report; this module only sizes the
plot and lays the legend out *under* it, outside the data. The figure is rebuilt from scratch
on every render, so what is drawn depends only on the view and the widget's size.

Start-up pays only for what it uses: a chart without data says what it will show, as text;
the plot (``ui.widgets.plot``, and plotext behind it — 15 ms of a start) is imported and
mounted inside the chart with its first data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from rich.console import Group
from rich.style import Style
from rich.text import Text
from textual.app import RenderResult
from textual.widget import Widget

from specconsole.present.charts.textcharts import (
    LegendEntry,
    draw_aggregate,
    draw_single,
    legend_rows,
)
from specconsole.present.figures.levels import LEVELS_TITLE
from specconsole.ui.viewmodels import ChartView

if TYPE_CHECKING:
    from textual_plotext import Plot

    from specconsole.ui.widgets.plot import ChartPlot

MIN_PLOT_ROWS = 8
"""The plot keeps at least this many rows — plotext's title, frame, ticks and axis label take
five, so three rows of data — and the legend gives way before the plot shrinks: first to
the series' short names, then to "+N more" (issue 42 #7: at 80×24 the aggregate chart kept
one row of data and showed one of six series)."""

PLOT_SHARE = 0.6
"""…and at least this share of the widget's height."""


class _Chart(Widget):
    """A chart: its empty text, or the plot with its legend underneath (a child of its own)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._view = ChartView()
        self._plot: ChartPlot | None = None
        self.legend: tuple[LegendEntry, ...] = ()
        """The legend last drawn (its colours are the lines')."""

    def show(self, view: ChartView) -> None:
        if view == self._view:
            return
        self._view = view
        drawn = self._empty() is None
        if drawn and self._plot is None:
            from specconsole.ui.widgets.plot import ChartPlot  # with the first data only

            self._plot = ChartPlot(self.figure)
            self.mount(self._plot)
        if self._plot is not None:
            self._plot.display = drawn
            self._plot.refresh()
        self.refresh()

    @property
    def coloured(self) -> bool:
        """Series are told apart by colour (else by marker: the mono theme)."""
        return not self.app.has_class("-mono")

    @property
    def background(self) -> tuple[int, int, int] | None:
        """What the series are drawn on (None in the mono theme: no colours at all)."""
        if not self.coloured:
            return None
        drawn = self.colors[2]  # the background as it shows, blended over what is under it
        return (drawn.r, drawn.g, drawn.b)

    def _empty(self) -> str | None:
        raise NotImplementedError

    def _draw(self, plt: Plot, width: int) -> tuple[LegendEntry, ...]:
        raise NotImplementedError

    def render(self) -> RenderResult:
        empty = self._empty()
        return Text("" if empty is None else empty, justify="center")

    def figure(self, plt: Plot, width: int, height: int, theme: str) -> RenderResult:
        """The plot drawn into ``plt`` in plotext theme ``theme`` and the legend under it, for
        ``width`` × ``height`` cells (the plot widget calls this from its own ``render``)."""
        legend = self.legend = self._draw(plt, width)
        keep = min(height - 1, max(MIN_PLOT_ROWS, math.ceil(height * PLOT_SHARE)))
        room = max(0, height - keep)
        for shortest in (False, True):  # the short names before "+N more"
            if len(legend_rows(legend, width)) <= room:
                break
            legend = tuple(
                replace(entry, label=short_label(entry.label, shortest=shortest))
                for entry in self.legend
            )
        rows = _legend_text(legend, width, room)
        plot_rows = max(1, height - len(rows))
        plt.plotsize(width, plot_rows)
        plt._set_size(width, plot_rows)
        plt.theme(theme)
        return Group(Text.from_ansi(plt.build().rstrip("\n")), *rows)


def short_label(label: str, *, shortest: bool = False) -> str:
    """A series' short name for a crowded legend: its trial number (``#3``; the trials table
    says what it ran), with the words naming a role before it (``none #6``); a label without
    a number keeps its first two words (``best static``). ``shortest``: one word (``none``,
    ``#3``)."""
    words = label.split()
    if shortest:
        return words[0] if words else label
    numbered = next((i for i, word in enumerate(words) if word.startswith("#")), None)
    return " ".join(words[: 2 if numbered is None else numbered + 1])


def _legend_text(entries: Sequence[LegendEntry], width: int, max_rows: int) -> list[Text]:
    """Legend rows with coloured marks, at most ``max_rows``: the last one holds the entries
    that fit beside how many did not (``━ #1   ━ #2   +4 more``)."""
    rows = legend_rows(entries, width)
    if max_rows <= 0:
        return []
    out: list[Text] = []
    for number, row in enumerate(rows):
        if number == max_rows - 1 and number < len(rows) - 1:
            rest = [entry for later in rows[number:] for entry in later]
            shown = len(rest) - 1
            while shown and _width(rest[:shown]) + len(f"   +{len(rest) - shown} more") > width:
                shown -= 1
            text = _row(rest[:shown])
            text.append(f"{'   ' if shown else ''}+{len(rest) - shown} more")
            out.append(text)
            break
        out.append(_row(row))
    return out


def _width(row: Sequence[LegendEntry]) -> int:
    return sum(len(e.mark) + 1 + len(e.label) for e in row) + 3 * max(0, len(row) - 1)


def _row(row: Sequence[LegendEntry]) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    for k, entry in enumerate(row):
        if k:
            text.append("   ")
        style = (
            Style(color=f"rgb({entry.color[0]},{entry.color[1]},{entry.color[2]})")
            if entry.color
            else Style()
        )
        text.append(entry.mark, style=style)
        text.append(f" {entry.label}")
    return text


class ThroughputChart(_Chart):
    """Aggregate tok/s vs concurrency, one line per trial."""

    def _empty(self) -> str | None:
        if self._view.aggregate:
            return None
        return "aggregate tok/s vs concurrency\n(one line per trial, after its benchmark)"

    def _draw(self, plt: Plot, width: int) -> tuple[LegendEntry, ...]:
        return draw_aggregate(
            plt, self._view.aggregate, width, color=self.coloured, background=self.background
        )


class SingleRequestChart(_Chart):
    """Single-request tok/s against the swept axis (or the trial number)."""

    def show(self, view: ChartView) -> None:
        old = self._view
        if (view.single, view.axis_name, view.crashed, view.single_title, view.levels) == (
            old.single,
            old.axis_name,
            old.crashed,
            old.single_title,
            old.levels,
        ):
            return
        super().show(view)

    def _empty(self) -> str | None:
        view = self._view
        if (view.single is not None and view.single.xs) or view.crashed or view.levels:
            return None
        what = view.single_title or f"single-request tok/s vs {view.axis_name}"
        return f"{what}\n(after the first benchmark)"

    def _draw(self, plt: Plot, width: int) -> tuple[LegendEntry, ...]:
        view = self._view
        if view.levels:  # a per-level question: the schedule chart takes this place
            return draw_aggregate(
                plt,
                view.levels,
                width,
                color=self.coloured,
                title=LEVELS_TITLE,
                background=self.background,
            )
        return draw_single(
            plt,
            view.single,
            view.crashed,
            view.axis_name,
            width,
            color=self.coloured,
            title=view.single_title,
            background=self.background,
        )
