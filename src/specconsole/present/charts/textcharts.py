"""Terminal charts: the console's chart panes and the text report draw through these.

Drawing goes into a plotext *figure object* passed in (the console widget's own, or a fresh
one for a report), never the module-level ``plotext`` state. The legend is not plotext's
(which is drawn over the data): ``draw_*`` return ``LegendEntry`` rows that the caller lays
out beside or under the plot. With colour each series has its own colour; without
(``mono``/``NO_COLOR``, text reports) each has its own marker, and the legend shows it.
Crashed trials are drawn as ``✖`` on the x axis of the swept-axis chart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specconsole.present.charts.series import CRASH_MARKER, MAX_SERIES, Series, readable_on

CRASH_COLOR: tuple[int, int, int] = (214, 39, 40)

LINE_MARK = "·"
"""What joins a series' points when there is no colour (its marker is only at the points)."""

Color = tuple[int, int, int]


def _paint(color: Color, background: Color | None) -> Color:
    """A series' colour as drawn: readable on ``background`` where that is known."""
    return color if background is None else readable_on(color, background)


@dataclass(frozen=True, slots=True)
class LegendEntry:
    """One legend row: the mark (marker character), what it stands for, and its colour."""

    mark: str
    label: str
    color: Color | None = None


def thin_ticks(
    positions: Sequence[float], labels: Sequence[str], width: int
) -> tuple[list[float], list[str]]:
    """Drop tick labels that would crowd each other on an axis ``width`` cells wide.

    plotext resolves overlapping labels itself, but in an order that depends on string
    hashing (so it changes between processes); thinning first, conservatively and left to
    right, keeps charts identical from run to run.
    """
    if not positions:
        return [], []
    low, high = min(positions), max(positions)
    span = (high - low) or 1.0
    kept_pos: list[float] = []
    kept_labels: list[str] = []
    last_end = -(10**9)
    for pos, label in sorted(zip(positions, labels, strict=True)):
        col = round((pos - low) / span * max(1, width - 1))
        start = col - len(label) // 2
        if start > last_end + 1:
            kept_pos.append(pos)
            kept_labels.append(label)
            last_end = start + len(label)
    return kept_pos, kept_labels


Y_LABELS = 10
"""Cells plotext takes left of the plot for y labels and the axis (an upper bound)."""


def _title(fig: Any, title: str, width: int) -> None:
    """Set the title only where it fits (plotext leaves a blank row for one that does not)."""
    if len(title) + 2 <= width:
        fig.title(title)


def draw_aggregate(
    fig: Any,
    series: Sequence[Series],
    width: int,
    *,
    color: bool,
    title: str = "aggregate tok/s vs concurrency",
    background: Color | None = None,
) -> tuple[LegendEntry, ...]:
    """Aggregate tok/s vs concurrency (log2 axis: ladders are geometric), one line per trial
    (the most recent ``MAX_SERIES``) — or per role of the per-level chart (``title``);
    returns the legend. On a known ``background`` every colour reads at 3:1 at least."""
    fig.clear_figure()
    _title(fig, title, width)
    shown = list(series)[-MAX_SERIES:]
    ticks: set[float] = set()
    legend: list[LegendEntry] = []
    points = []
    for line in shown:
        xs = [math.log2(x) for x in line.xs if x > 0]
        ys = [y for x, y in zip(line.xs, line.ys, strict=True) if x > 0]
        if color:
            paint = _paint(line.color, background)
            fig.plot(xs, ys, marker="braille", color=paint)
            legend.append(LegendEntry("━", line.label, paint))
        else:
            fig.plot(xs, ys, marker=LINE_MARK, color="default")
            points.append((xs, ys, line.marker))
            legend.append(LegendEntry(line.marker, line.label))
        ticks.update(x for x in line.xs if x > 0)
    for xs, ys, marker in points:  # over every line, so no dotted line hides a point
        fig.scatter(xs, ys, marker=marker, color="default")
    if ticks:
        ordered = sorted(ticks)
        positions, labels = thin_ticks(
            [math.log2(t) for t in ordered], [f"{t:g}" for t in ordered], width - Y_LABELS
        )
        fig.xticks(positions, labels)
    fig.xlabel("concurrency")
    return tuple(legend)


def draw_single(
    fig: Any,
    line: Series | None,
    crashed: Sequence[float],
    axis: str,
    width: int,
    *,
    color: bool,
    crashed_labels: Sequence[str] = (),
    title: str = "",
    background: Color | None = None,
) -> tuple[LegendEntry, ...]:
    """Single-request tok/s (or ``title``'s figure: the search's objective) against the
    swept axis, crashed positions as ``✖`` on the x axis; returns the legend."""
    fig.clear_figure()
    _title(fig, title or f"single-request tok/s vs {axis}", width)
    legend: list[LegendEntry] = []
    xs: list[float] = []
    if line is not None and line.xs:
        paint = _paint(line.color, background)
        if color:
            fig.plot(list(line.xs), list(line.ys), marker="braille", color=paint)
        else:
            fig.plot(list(line.xs), list(line.ys), marker=LINE_MARK, color="default")
            fig.scatter(list(line.xs), list(line.ys), marker="●", color="default")
        legend.append(LegendEntry("━" if color else "●", line.label, paint if color else None))
        xs += line.xs
    if crashed:
        floor = min(line.ys) if line is not None and line.ys else 0.0
        crash_paint = _paint(CRASH_COLOR, background)
        fig.scatter(
            list(crashed),
            [floor] * len(crashed),
            marker=CRASH_MARKER,
            color=crash_paint if color else "default",
        )
        what = (
            ", ".join(crashed_labels)
            if crashed_labels
            else f"at {axis} " + ", ".join(f"{x:g}" for x in crashed)
        )
        legend.append(LegendEntry(CRASH_MARKER, f"crashed: {what}", crash_paint if color else None))
        xs += crashed
    if xs:
        ordered = sorted(set(xs))
        positions, labels = thin_ticks(ordered, [f"{x:g}" for x in ordered], width - Y_LABELS)
        fig.xticks(positions, labels)
    fig.xlabel(axis)
    return tuple(legend)


def legend_rows(entries: Sequence[LegendEntry], width: int) -> list[list[LegendEntry]]:
    """Entries packed left to right into rows of at most ``width`` cells."""
    rows: list[list[LegendEntry]] = []
    used = 0
    for entry in entries:
        size = len(entry.mark) + 1 + len(entry.label)
        if rows and used + 3 + size <= width:
            rows[-1].append(entry)
            used += 3 + size
        else:
            rows.append([entry])
            used = size
    return rows


def legend_lines(entries: Sequence[LegendEntry], width: int) -> list[str]:
    """The legend as plain text rows (``legend_rows`` joined)."""
    return ["   ".join(f"{e.mark} {e.label}" for e in row) for row in legend_rows(entries, width)]


def new_figure() -> Any:
    """A plotext figure of its own (reports; the console's widgets bring theirs)."""
    from plotext._figure import _figure_class

    return _figure_class()


def render_text(fig: Any, legend: Sequence[LegendEntry], width: int, height: int) -> str:
    """``fig`` as plain text of ``width`` × ``height`` cells, with the legend under it."""
    fig.plotsize(width, height)
    fig.theme("clear")
    from plotext._utility import uncolorize

    text = uncolorize(fig.build())
    lines = [line.rstrip() for line in text.splitlines()]
    return "\n".join([*lines, *legend_lines(legend, width)])
