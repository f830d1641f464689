"""The reports' per-level sections: the table (best static, its lead, the schedule, no
speculation), the schedule itself, the what-ifs, and the schedule chart — in Markdown, JSON,
HTML and CSV.

Why one module: every format shows the same answer (``core.search.levels``, worded by
``present.figures.levels``), and the schedule chart is drawn from the same lines in text (plotext)
and in SVG (matplotlib, lazily, as ``session.reports.charts`` does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from specconsole.core.engine.registry import EngineNotFound, engine_for
from specconsole.core.engine.schedule import Role
from specconsole.core.machine.state import TrialRecord
from specconsole.core.plans.objective import DEFAULT_GOAL
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.search.levels import (
    Contender,
    LevelFigure,
    LevelTable,
    level_table,
    role_of,
)
from specconsole.core.search.levels import what_ifs as what_ifs_of
from specconsole.present.charts.series import hex_color
from specconsole.present.charts.textcharts import draw_aggregate, new_figure, render_text
from specconsole.present.figures.levels import (
    LEVELS_TITLE,
    level_cells,
    level_headers,
    level_series,
    level_verdicts,
    what_if_text,
)
from specconsole.present.labels import record_label, schedule_text
from specconsole.session.selection import report_trials

__all__ = [
    "CHART_TITLE",
    "best_at",
    "fixed_text",
    "levels_chart",
    "levels_chart_svg",
    "levels_document",
    "levels_html",
    "levels_markdown",
    "table_for",
]

CHART_TITLE = LEVELS_TITLE


def table_for(trials: Sequence[TrialRecord], plan: SweepPlan | None) -> LevelTable:
    """The per-level table of a report's trials under the plan's goal and noise."""
    goal = plan.goal if plan is not None else DEFAULT_GOAL
    noise = plan.noise_pct if plan is not None else 1.0
    return level_table(report_trials(trials), goal, noise)


def _base(plan: SweepPlan | None) -> Any:
    return plan.base if plan is not None else None


def best_at(table: LevelTable, record: TrialRecord) -> list[int]:
    """The levels where ``record`` is the best static configuration."""
    return [r.concurrency for r in table.rows if r.best is not None and r.best.trial is record]


def fixed_text(record: TrialRecord) -> str | None:
    """How a what-if trial fixed its acceptance (``Engine.fixed_acceptance``), else None."""
    try:
        return engine_for(record.effective).fixed_acceptance(record.effective)
    except EngineNotFound:
        return None


def levels_chart(table: LevelTable, plan: SweepPlan | None, width: int = 78) -> str:
    """The schedule chart as text (a line per role over concurrency)."""
    series = level_series(table, _base(plan))
    if not series:
        return "(no level measured)"
    fig = new_figure()
    legend = draw_aggregate(fig, series, width, color=False, title=CHART_TITLE)
    return render_text(fig, legend, width, 16)


def _what_ifs(trials: Sequence[TrialRecord], plan: SweepPlan | None) -> list[TrialRecord]:
    return [t for t in report_trials(trials) if role_of(t) is Role.WHAT_IF and t.levels]


def levels_markdown(trials: Sequence[TrialRecord], plan: SweepPlan | None) -> list[str]:
    """The per-level section (and the what-ifs), as Markdown lines."""
    table = table_for(trials, plan)
    base = _base(plan)
    out = ["", "## Best configuration per concurrency: the schedule, no speculation", ""]
    if not table.rows:
        return [*out, "(no successful trial)"]
    headers = level_headers(table)
    out.append("| " + " | ".join(headers) + " |")
    out.append("|" + "|".join("---" if left else "---:" for left in _left(headers)) + "|")
    out += ["| " + " | ".join(row.cells) + " |" for row in level_cells(table, base)]
    noise = plan.noise_pct if plan is not None else 1.0
    out += ["", *(f"- {v}" for v in level_verdicts(table, base, noise))]
    if table.schedule is not None:
        said = schedule_text(table.schedule.effective)
        number = table.schedule.index + 1
        out += ["", f"The schedule (trial {number}): `{said}` (batch sizes: draft length)."]
    out += ["", "```", levels_chart(table, plan), "```"]
    what_ifs = _what_ifs(trials, plan)
    if what_ifs:
        out += ["", "## What-if: fixed acceptance (never mixed with measured results)", ""]
        out += [f"- {what_if_text(w, base)}" for w in what_ifs_of(report_trials(trials))]
        for t in what_ifs:
            figures = ", ".join(f"c={lv.concurrency} {lv.output_tok_s:,.1f}" for lv in t.levels)
            out.append(
                f"- trial {t.index + 1} `{record_label(t, base)}` ({fixed_text(t)}): {figures}"
            )
    return out


def _left(headers: Sequence[str]) -> list[bool]:
    """Which columns read left-aligned (the best static and its lead: words)."""
    return [h in ("best static", "lead") for h in headers]


def _figure_doc(f: LevelFigure | None) -> dict[str, Any] | None:
    if f is None:
        return None
    return {"trial": f.number, "value": f.value, "ci95": [f.low, f.high]}


def levels_document(trials: Sequence[TrialRecord], plan: SweepPlan | None) -> dict[str, Any]:
    """The per-level answer as JSON (``docs/report-schema.json``: ``per_level``)."""
    table = table_for(trials, plan)
    base = _base(plan)
    rows = []
    for row in table.rows:
        gain = row.gain
        rows.append(
            {
                "concurrency": row.concurrency,
                "best": _figure_doc(row.best),
                "runner_up": _figure_doc(row.runner_up),
                "margin_pct": row.margin_pct,
                "tied": row.tied,
                "baseline": _figure_doc(row.baseline),
                "speculative": _figure_doc(row.speculative),
                "gain_pct": None if gain is None else {"value": gain[0], "low": gain[1],
                                                        "high": gain[2]},
                "pays": row.pays,
                "schedule": _figure_doc(row.schedule),
                "schedule_vs_best_pct": row.versus(row.best),
                "schedule_vs_single_pct": row.versus(row.single),
                "single": _figure_doc(row.single),
                "contenders": {key: _figure_doc(f) for key, f in row.contenders},
            }
        )  # fmt: skip
    schedule = table.schedule
    ranges = None
    if schedule is not None:
        found = engine_for(schedule.effective).scheduled(schedule.effective) or ()
        ranges = [{"start": r.start, "end": r.end, "steps": r.steps} for r in found]
    noise = plan.noise_pct if plan is not None else 1.0
    return {
        "rows": rows,
        "single_best": None if table.single is None else table.single.index + 1,
        "stops_paying_at": table.stops_paying,
        "breakeven": _breakeven_doc(table),
        "contenders": [_contender_doc(table, c) for c in table.contenders],
        "noise_pct": noise,
        "schedule": None
        if schedule is None
        else {
            "trial": schedule.index + 1,
            "label": record_label(schedule, base),
            "ranges": ranges,
        },
        "verdicts": level_verdicts(table, base, noise),
        "what_if": [
            {"trial": t.index + 1, "fixed_acceptance": fixed_text(t)}
            for t in _what_ifs(trials, plan)
        ],
        "what_if_bests": [
            {
                "fixed_acceptance": w.fixed,
                "text": what_if_text(w, base),
                "bests": [{"concurrency": c, **(_figure_doc(f) or {})} for c, f in w.bests],
            }
            for w in what_ifs_of(report_trials(trials))
        ],
    }


def _breakeven_doc(table: LevelTable) -> list[dict[str, Any]]:
    """Each trial's break-even concurrency (None: it pays at every level of the ladder)."""
    if not table.has_baseline:
        return []
    ranked = [table.schedule] if table.schedule is not None else []
    ranked += [c.trial for c in table.contenders if c.trial is not None and c.trial.levels]
    ranked += [t for t in table.candidates if role_of(t) is not Role.BASELINE]
    return [
        {"trial": t.index + 1, "role": role_of(t).value, "concurrency": table.breakeven(t)}
        for t in ranked
    ]


def _contender_doc(table: LevelTable, contender: Contender) -> dict[str, Any]:
    """One adaptive contender: what it runs, its trial and capacity, how the schedule fares."""
    trial = contender.trial
    rivalry = table.rivalry(contender.key)
    return {
        "key": contender.key,
        "title": contender.title,
        "mode": contender.mode,
        "no_mode": None if contender.refusal is None else contender.refusal.message,
        "trial": None if trial is None else trial.index + 1,
        "status": None if trial is None else trial.status.value,
        "capacity": None if trial is None else trial.capacity,
        "schedule_vs_it": None
        if rivalry is None
        else {
            "at_weakest": {"concurrency": rivalry.at_weakest[0], "pct": rivalry.at_weakest[1]},
            "worst": {"concurrency": rivalry.worst[0], "pct": rivalry.worst[1]},
            "best": {"concurrency": rivalry.best[0], "pct": rivalry.best[1]},
            "contender_wins": rivalry.contender_wins,
        },
    }


def levels_chart_svg(table: LevelTable, plan: SweepPlan | None) -> str:
    """The schedule chart as inline SVG (matplotlib, imported here only)."""
    from specconsole.session.reports.charts import figure, svg_text

    fig = figure(8.5, 4.2)
    ax = fig.add_subplot()
    for line in level_series(table, _base(plan)):
        dashed = line.number == 0  # each level's best: an envelope of several trials
        color = "#7f7f7f" if dashed else hex_color(line.number)
        style = "--" if dashed else "-"
        ax.plot(line.xs, line.ys, marker="o", lw=1.8, ls=style, color=color, label=line.label)
    ax.set_xscale("log", base=2)
    ax.set_xticks([r.concurrency for r in table.rows], [str(r.concurrency) for r in table.rows])
    ax.set_xlabel("concurrency")
    ax.set_ylabel("aggregate output tok/s")
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize=8, frameon=False)
    return svg_text(fig)


def levels_html(
    trials: Sequence[TrialRecord],
    plan: SweepPlan | None,
    table_html: Callable[[Sequence[str], Sequence[Sequence[str]], Sequence[bool]], str],
    escape: Callable[[object], str],
) -> str:
    """The per-level section of the HTML report (its table helper and escaping)."""
    table = table_for(trials, plan)
    if not table.rows:
        return "<h2>Per level</h2><p>(no successful trial)</p>"
    base = _base(plan)
    noise = plan.noise_pct if plan is not None else 1.0
    rows = [row.cells for row in level_cells(table, base)]
    headers = level_headers(table)
    parts = [
        "<h2>Best configuration per concurrency: the schedule, no speculation</h2>",
        table_html(headers, rows, [not left for left in _left(headers)]),
        "<ul>"
        + "".join(f"<li>{escape(v)}</li>" for v in level_verdicts(table, base, noise))
        + "</ul>",
        f'<figure id="chart-levels" class="chart">{levels_chart_svg(table, plan)}'
        "<figcaption>Per level: each level's best static (dashed), the single best static, "
        "no speculation and the schedule.</figcaption></figure>",
    ]
    what_ifs = _what_ifs(trials, plan)
    if what_ifs:
        parts.append("<h3>What-if: fixed acceptance (never mixed with measured results)</h3><ul>")
        parts += [
            f"<li>{escape(what_if_text(w, base))}</li>" for w in what_ifs_of(report_trials(trials))
        ]
        for t in what_ifs:
            figures = ", ".join(f"c={lv.concurrency} {lv.output_tok_s:,.1f}" for lv in t.levels)
            parts.append(
                f"<li>trial {t.index + 1} {escape(record_label(t, base))} "
                f"({escape(fixed_text(t))}): {escape(figures)}</li>"
            )
        parts.append("</ul>")
    return "".join(parts)
