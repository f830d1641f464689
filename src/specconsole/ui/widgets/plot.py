"""The plot inside a chart (``ui.widgets.chart``): a textual-plotext widget, mounted with the
chart's first data so that plotext is imported only then.

Why a widget of its own: textual-plotext's ``PlotextPlot`` keeps plotext's theme in step
with the app's (registered on mount, followed on every change); the chart keeps what to draw
and how the legend is laid out, and this only hands it the figure and the size.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import RenderResult
from textual_plotext import Plot, PlotextPlot

Figure = Callable[[Plot, int, int, str], RenderResult]
"""Draws into a plot for a width, a height and a plotext theme (the chart's ``figure``)."""


class ChartPlot(PlotextPlot):
    """The chart's plot and legend, drawn by its ``figure`` at this widget's size."""

    def __init__(self, figure: Figure) -> None:
        super().__init__()
        self._figure = figure

    def render(self) -> RenderResult:
        theme = self._get_plotext_theme_name(self.app.theme)
        return self._figure(self.plt, self.size.width, self.size.height, theme)
