"""The report's picture charts, drawn with matplotlib: inline SVG for HTML, PNG/SVG files.

Why matplotlib: it is the well-kept standard for publication charts, it writes SVG (vector,
text kept as text, no scripts, no external fonts or URLs: safe to inline in a self-contained
page) and PNG from the same figure, and its object API (``matplotlib.figure.Figure``, no
``pyplot`` global state) keeps every chart a pure function of the trials. It is imported only
here, lazily, so the console and the headless runs never pay for it.

Three charts, the same series as the terminal ones (``present.charts.series``: trial numbers,
labels and colours): aggregate tok/s vs concurrency (one coloured, labelled line per trial,
the legend outside the plot, crashed trials listed with an ✖ at the concurrency they reached),
single-request tok/s vs the swept axis (crashed trials as ✖ on the x axis) and the Pareto
chart (single-request vs peak aggregate, the front joined).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from specconsole.core.machine.state import Phase, TrialRecord, TrialStatus
from specconsole.core.plans.plan import SweepPlan
from specconsole.present.charts.series import (
    aggregate_series,
    axis_title,
    crashed_at,
    hex_color,
    single_series,
    swept_axis,
)
from specconsole.present.labels import trial_label
from specconsole.session.selection import pareto, report_trials

CRASH_COLOR = "#d62728"
_CRASHED = (TrialStatus.CRASHED, TrialStatus.LOAD_TIMEOUT)


def figure(width: float, height: float) -> Any:
    """A matplotlib figure of its own (no pyplot state), laid out to fit its legend."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


_figure = figure  # the name session.reports.gpu_charts imports


def _base(plan: SweepPlan | None) -> Any:
    return plan.base if plan is not None else None


def draw_aggregate(ax: Any, trials: Sequence[TrialRecord], plan: SweepPlan | None) -> None:
    """Aggregate output tok/s vs concurrency: a line per trial, crashed trials as ✖."""
    shown = report_trials(trials)
    ok = [t for t in shown if t.status is TrialStatus.OK and t.levels]
    ticks: set[float] = set()
    for line in aggregate_series(ok, _base(plan)):
        ax.plot(
            line.xs, line.ys, marker="o", color=hex_color(line.number), label=line.label, lw=1.8
        )
        ticks.update(line.xs)
    for record in shown:
        if record.status not in _CRASHED:
            continue
        reached = [lv.concurrency for lv in record.levels] or [min(ticks, default=1.0)]
        where = "benchmarking" if record.crash and record.crash.phase is Phase.BENCHMARKING else ""
        ax.plot(
            [max(reached)],
            [0],
            linestyle="none",
            marker="X",
            markersize=10,
            color=CRASH_COLOR,
            clip_on=False,
            label=f"{trial_label(record, _base(plan))}: crashed {where}".rstrip(),
        )
    concurrency_axes(ax, ticks, "aggregate output tok/s", "Aggregate throughput vs concurrency")


def concurrency_axes(ax: Any, ticks: Iterable[float], ylabel: str, title: str) -> None:
    """The axes of a chart against concurrency: a log2 x axis ticked at the levels measured,
    y from 0, a light grid."""
    ax.set_xscale("log", base=2)
    if ordered := sorted(set(ticks)):
        ax.set_xticks(ordered, [f"{t:g}" for t in ordered])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("concurrency (requests in flight)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)


def draw_single(ax: Any, trials: Sequence[TrialRecord], plan: SweepPlan | None) -> None:
    """Single-request tok/s against the swept axis; crashed positions as ✖ on the x axis."""
    shown = report_trials(trials)
    axis = swept_axis(plan, shown)
    line = single_series(shown, axis)
    if line is not None:
        ax.plot(line.xs, line.ys, marker="o", color=hex_color(1), label="single-request tok/s")
    crashed = crashed_at(shown, axis)
    if crashed:
        ax.plot(
            crashed,
            [0] * len(crashed),
            linestyle="none",
            marker="X",
            markersize=10,
            color=CRASH_COLOR,
            clip_on=False,
            label="crashed",
        )
    ax.set_ylim(bottom=0)
    xs = sorted({*(line.xs if line else ()), *crashed})
    if xs:
        ax.set_xticks(xs, [f"{x:g}" for x in xs])
    ax.set_xlabel(axis_title(axis, plan.base.engine if plan is not None else None))
    ax.set_ylabel("single-request output tok/s")
    engine = plan.base.engine if plan is not None else None
    ax.set_title(f"Single-request speed vs {axis_title(axis, engine)}")
    ax.grid(True, alpha=0.3)


def draw_pareto(ax: Any, trials: Sequence[TrialRecord], plan: SweepPlan | None) -> None:
    """Single-request vs peak aggregate per successful trial; the Pareto front joined."""
    ok = [
        t
        for t in report_trials(trials)
        if t.status is TrialStatus.OK and t.single_request_tok_s is not None
    ]
    for t in ok:
        ax.scatter(
            [t.single_request_tok_s],
            [t.peak_aggregate_tok_s],
            color=hex_color(t.index + 1),
            s=40,
            zorder=3,
            label=trial_label(t, _base(plan)),
        )
        ax.annotate(
            f"#{t.index + 1}",
            (t.single_request_tok_s or 0.0, t.peak_aggregate_tok_s or 0.0),
            textcoords="offset points",
            xytext=(5, 4),
            fontsize=8,
        )
    front = pareto(trials)
    if len(front) > 1:
        ax.plot(
            [t.single_request_tok_s for t in front],
            [t.peak_aggregate_tok_s for t in front],
            color="#555555",
            lw=1,
            ls="--",
            zorder=2,
            label="Pareto front",
        )
    ax.set_xlabel("single-request output tok/s")
    ax.set_ylabel("peak aggregate output tok/s")
    ax.set_title("Trade-off: single request vs aggregate")
    ax.grid(True, alpha=0.3)


CHARTS = {"aggregate": draw_aggregate, "single": draw_single, "pareto": draw_pareto}
"""Chart id → drawing function (each draws one axes)."""


def _legend_outside(fig: Any, ax: Any) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize=8, frameon=False)


def chart_figure(chart: str, trials: Sequence[TrialRecord], plan: SweepPlan | None) -> Any:
    """One chart as its own figure, legend outside the plot area."""
    fig = figure(8.5, 4.2)
    ax = fig.add_subplot()
    CHARTS[chart](ax, trials, plan)
    _legend_outside(fig, ax)
    return fig


def _save(fig: Any, fmt: str) -> bytes:
    buf = io.BytesIO()
    if fmt == "svg":
        import matplotlib

        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "specconsole"}):
            fig.savefig(buf, format="svg", metadata={"Date": None})
    else:
        fig.savefig(buf, format=fmt, dpi=110, metadata={"Software": None})
    return buf.getvalue()


def chart_svg(chart: str, trials: Sequence[TrialRecord], plan: SweepPlan | None) -> str:
    """``chart`` as an SVG document (no scripts, no external references)."""
    return svg_text(chart_figure(chart, trials, plan))


def svg_text(fig: Any) -> str:
    """``fig`` as an inline ``<svg>`` element (the XML prologue dropped)."""
    text = _save(fig, "svg").decode()
    start = text.find("<svg")
    return text[start:] if start >= 0 else text


def write_charts(
    trials: Sequence[TrialRecord], plan: SweepPlan | None, output: Path, fmt: str
) -> list[Path]:
    """The three charts stacked in one image file ``output`` (``png`` or ``svg``)."""
    fig = figure(9.5, 13.0)
    axes = fig.subplots(3, 1)
    for ax, draw in zip(axes, CHARTS.values(), strict=True):
        draw(ax, trials, plan)
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    output.write_bytes(_save(fig, fmt))
    return [output]
