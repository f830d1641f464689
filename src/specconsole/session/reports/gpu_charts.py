"""The report's GPU charts, beside the throughput charts: memory per trial, and power and
tokens per joule against concurrency.

Why: "how close to the limit did each configuration come?" is a picture — a bar per trial
for the memory held at ready, a mark for the peak while loading, the crashed trials' memory
at the fatal line in red, the GPU's total across the top — and so is what each trial's
throughput cost: its GPUs' power, and tokens per joule, at each concurrency. Drawn with
matplotlib like the other charts (``session.reports.charts``: inline SVG, no scripts), from the
trials' records alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specconsole.core.machine.state import TrialRecord
from specconsole.core.plans.plan import SweepPlan
from specconsole.present.charts.series import hex_color
from specconsole.present.figures.gpu import whole_watts
from specconsole.present.labels import trial_label
from specconsole.session.reports.charts import (
    CRASH_COLOR,
    _figure,
    _legend_outside,
    _save,
    concurrency_axes,
)
from specconsole.session.reports.gpu_report import sampled
from specconsole.session.selection import report_trials

__all__ = ["GPU_CHARTS", "gpu_chart_svg"]

GIB = 1024.0


def draw_memory(ax: Any, trials: Sequence[TrialRecord], plan: SweepPlan | None) -> None:
    """Per trial: memory at ready (bar), the load's peak (▲), the memory at a crash's fatal
    line (red ✖), the GPU's total (dashed line)."""
    base = plan.base if plan is not None else None
    shown = sampled(report_trials(trials))
    totals: list[float] = []
    for x, t in enumerate(shown):
        gpu = t.gpu
        label = trial_label(t, base)
        if gpu is not None and gpu.ready_mib is not None:
            ax.bar([x], [gpu.ready_mib / GIB], color=hex_color(t.index + 1), label=label)
        if gpu is not None and gpu.load_peak_mib is not None:
            ax.plot([x], [gpu.load_peak_mib / GIB], marker="^", color="#333333", ls="none")
        if gpu is not None and gpu.memory_total_mib is not None:
            totals.append(gpu.memory_total_mib / GIB)
        if t.crash is not None and t.crash.gpu_memory:
            fatal = max(s.memory_used_mib for s in t.crash.gpu_memory) / GIB
            totals.append(max(s.memory_total_mib for s in t.crash.gpu_memory) / GIB)
            ax.plot([x], [fatal], marker="X", markersize=10, color=CRASH_COLOR, ls="none",
                    label=f"{label}: at the fatal line")  # fmt: skip
    if totals:
        ax.axhline(max(totals), color="#555555", ls="--", lw=1, label="GPU memory")
    ax.set_xticks(range(len(shown)), [f"#{t.index + 1}" for t in shown])
    ax.set_ylim(bottom=0)
    ax.set_ylabel("GPU memory (GiB, fullest GPU)")
    ax.set_title("GPU memory per trial: at ready (bar), peak while loading (▲)")
    ax.grid(True, axis="y", alpha=0.3)


def draw_power(ax: Any, trials: Sequence[TrialRecord], plan: SweepPlan | None) -> None:
    """Tokens per joule against concurrency, a line per trial (its power in the legend)."""
    base = plan.base if plan is not None else None
    ticks: set[int] = set()
    for t in sampled(report_trials(trials)):
        points = [
            (lv.concurrency, lv.tokens_per_joule, lv.gpu.power_w if lv.gpu else None)
            for lv in sorted(t.levels, key=lambda lv: lv.concurrency)
            if lv.tokens_per_joule is not None
        ]
        if not points:
            continue
        most = max((p for _c, _e, p in points if p is not None), default=0.0)
        ax.plot(
            [c for c, _e, _p in points],
            [e for _c, e, _p in points],
            marker="o",
            color=hex_color(t.index + 1),
            label=f"{trial_label(t, base)} (≤ {whole_watts(most)} W)",
        )
        ticks.update(c for c, _e, _p in points)
    title = "Energy: tokens per joule vs concurrency"
    concurrency_axes(ax, ticks, "output tokens per joule", title)


GPU_CHARTS = {"gpu-memory": draw_memory, "gpu-energy": draw_power}


def gpu_chart_svg(chart: str, trials: Sequence[TrialRecord], plan: SweepPlan | None) -> str:
    """``chart`` (a :data:`GPU_CHARTS` id) as an inline SVG document."""
    fig = _figure(8.5, 3.8)
    ax = fig.add_subplot()
    GPU_CHARTS[chart](ax, trials, plan)
    _legend_outside(fig, ax)
    text = _save(fig, "svg").decode()
    start = text.find("<svg")
    return text[start:] if start >= 0 else text
