"""Throughput charts drawn with textual-plotext, each owning its own ``Plot`` (``self.plt``).

Two views of the sweep, as the tuning question needs them: aggregate output tok/s against
concurrency with one line per trial (where does each configuration peak?), and
single-request tok/s against the swept axis (does drafting deeper still pay?). Both are pure
functions of a ``ChartView``; the module-level ``plotext`` API is never used, so two charts
can never draw into each other. The figure is rebuilt from scratch on every render, so what is
drawn depends only on the view and the widget's size, never on the order of earlier renders
(plotext figures keep state between builds).
"""

from __future__ import annotations

import math

from rich.text import Text
from textual.app import RenderResult
from textual_plotext import PlotextPlot

from specconsole.ui.viewmodels import ChartView, Series, thin_ticks

_Y_LABELS = 10
"""Cells plotext takes left of the plot for y labels and the axis (an upper bound)."""

_MAX_SERIES = 8
"""Aggregate lines drawn at once (the most recent trials); more would be unreadable."""


class ThroughputChart(PlotextPlot):
    """Aggregate tok/s vs concurrency, one line per trial."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._view = ChartView()

    def show(self, view: ChartView) -> None:
        if view == self._view:
            return
        self._view = view
        self.refresh()

    def render(self) -> RenderResult:
        if not self._view.aggregate:
            return Text(
                "aggregate tok/s vs concurrency\n(one line per trial, after its benchmark)",
                justify="center",
            )
        self._draw()
        return super().render()

    def _draw(self) -> None:
        plt = self.plt
        plt.clear_figure()
        plt.title("aggregate tok/s vs concurrency")
        series = self._view.aggregate[-_MAX_SERIES:]
        if not series:
            plt.xlabel("concurrency")
        # Concurrency ladders are geometric (1, 4, 16, 32, 64): a log2 axis spreads them.
        ticks: set[float] = set()
        for line in series:
            xs = [math.log2(x) for x in line.xs if x > 0]
            ys = [y for x, y in zip(line.xs, line.ys, strict=True) if x > 0]
            plt.plot(xs, ys, label=line.label, marker="braille")
            ticks.update(x for x in line.xs if x > 0)
        if ticks:
            ordered = sorted(ticks)
            positions, labels = thin_ticks(
                [math.log2(t) for t in ordered],
                [f"{t:g}" for t in ordered],
                self.size.width - _Y_LABELS,
            )
            plt.xticks(positions, labels)


class SingleRequestChart(PlotextPlot):
    """Single-request tok/s against the swept axis (or the trial number)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._series: Series | None = None
        self._axis = "trial"

    def show(self, view: ChartView) -> None:
        if view.single == self._series and view.axis_name == self._axis:
            return
        self._series, self._axis = view.single, view.axis_name
        self.refresh()

    def render(self) -> RenderResult:
        if self._series is None or not self._series.xs:
            return Text(
                f"single-request tok/s vs {self._axis}\n(after the first benchmark)",
                justify="center",
            )
        self._draw()
        return super().render()

    def _draw(self) -> None:
        plt = self.plt
        plt.clear_figure()
        plt.title(f"single-request tok/s vs {self._axis}")
        line = self._series
        if line is not None and line.xs:
            plt.plot(list(line.xs), list(line.ys), marker="braille")
            positions, labels = thin_ticks(
                list(line.xs), [f"{x:g}" for x in line.xs], self.size.width - _Y_LABELS
            )
            plt.xticks(positions, labels)
