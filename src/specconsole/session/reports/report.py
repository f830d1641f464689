"""Session reports: the seed's table, the Pareto set, the best configuration per concurrency
and an ASCII chart, as Markdown, CSV or JSON.

Why these four views: the seed notes were a table (config | single-request tok/s | peak
aggregate tok/s | capacity | accept length | status), and the decision they fed was a
trade-off: speculation helps a single request and can hurt aggregate throughput. The Pareto
set (single-request vs aggregate) names the configurations worth keeping, the best per
concurrency level answers "what do I deploy for my traffic", and the chart shows where each
configuration's aggregate curve bends. Everything is computed from ``trials.jsonl`` alone, so a
report of a half-finished or killed session is as valid as one of a finished sweep.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass

from specconsole.core.machine.state import LevelSummary, TrialRecord, TrialStatus
from specconsole.core.measure.stats import Spread, half_width
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.search.levels import role_of
from specconsole.core.search.strategy import findings
from specconsole.present.charts.series import (
    aggregate_series,
    axis_title,
    crashed_at,
    crashed_labels,
    single_series,
    swept_axis,
)
from specconsole.present.charts.textcharts import (
    draw_aggregate,
    draw_single,
    new_figure,
    render_text,
)
from specconsole.present.columns import REPORT_COLUMNS
from specconsole.present.columns import cells as row_cells
from specconsole.present.figures.gpu import crash_memory
from specconsole.present.figures.progress import report_glance
from specconsole.present.figures.repeats import REPEAT_HEADERS, repeat_rows, repeats_note
from specconsole.present.formats import format_rate, format_rate_ci
from specconsole.present.labels import measurement_note, record_label, report_title
from specconsole.present.probes import probe_text, rate_answer
from specconsole.present.status import status_detail
from specconsole.session.drift import PreviousSession
from specconsole.session.reports.acceptance_report import acceptance_lines
from specconsole.session.reports.drift_report import drift_lines
from specconsole.session.reports.gpu_report import gpu_markdown
from specconsole.session.reports.levels_report import best_at, levels_markdown, table_for
from specconsole.session.reports.predictions_report import prediction_lines
from specconsole.session.reports.proof_report import proof_markdown
from specconsole.session.reports.report_json import to_json
from specconsole.session.reports.warnings_report import warnings_markdown
from specconsole.session.selection import best_per_concurrency as best_per_concurrency
from specconsole.session.selection import pareto, report_trials

FORMATS: tuple[str, ...] = ("md", "csv", "json")

TABLE_COLUMNS: tuple[str, ...] = tuple(c.title for c in REPORT_COLUMNS)
"""The seed's table, plus the trial number (``present.columns``)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One row of the seed table."""

    trial: int
    label: str
    single: float | None
    peak: float | None
    peak_concurrency: int | None
    capacity: int | None
    accept_length: float | None
    status: str
    record: TrialRecord


def rows(trials: Sequence[TrialRecord], plan: SweepPlan | None = None) -> list[Row]:
    base = plan.base if plan is not None else None
    out: list[Row] = []
    for t in report_trials(trials):
        out.append(
            Row(
                trial=t.index + 1,
                label=record_label(t, base),
                single=t.single_request_tok_s,
                peak=t.peak_aggregate_tok_s,
                peak_concurrency=t.peak_concurrency,
                capacity=t.capacity,
                accept_length=t.accept_length,
                status=status_detail(t),
                record=t,
            )
        )
    return out


def chart(
    trials: Sequence[TrialRecord],
    plan: SweepPlan | None = None,
    *,
    width: int = 78,
    height: int = 20,
) -> str:
    """Plain-text chart of aggregate tok/s vs concurrency, one marked series per trial, the
    legend under the plot (``present.charts.textcharts``)."""
    shown = [t for t in report_trials(trials) if t.status is TrialStatus.OK and t.levels]
    if not shown:
        return "(no successful trial to chart)"
    fig = new_figure()
    series = aggregate_series(shown, plan.base if plan is not None else None)
    legend = draw_aggregate(fig, series, width, color=False)
    return render_text(fig, legend, width, height)


def single_chart(
    trials: Sequence[TrialRecord],
    plan: SweepPlan | None = None,
    *,
    width: int = 78,
    height: int = 14,
) -> str:
    """Plain-text chart of single-request tok/s against the swept axis, crashed trials as
    ``✖`` on the x axis."""
    shown = report_trials(trials)
    axis = swept_axis(plan, shown)
    line = single_series(shown, axis)
    crashed = crashed_at(shown, axis)
    if line is None and not crashed:
        return "(no benchmarked trial to chart)"
    base = plan.base if plan is not None else None
    fig = new_figure()
    legend = draw_single(
        fig,
        line,
        crashed,
        axis_title(axis, plan.base.engine if plan is not None else None),
        width,
        color=False,
        crashed_labels=crashed_labels(shown, base),
    )
    return render_text(fig, legend, width, height)


def _fmt(value: float | None, digits: int = 1) -> str:
    return format_rate(value, digits)


def _level_cell(level: LevelSummary | None) -> str:
    """A level's aggregate tok/s; ``mean ± CI half-width`` when it averages repeated runs."""
    if level is None:
        return _fmt(None)
    return format_rate_ci(level.output_tok_s, half_width(level.output_tok_s_spread), 1)


def to_markdown(
    trials: Sequence[TrialRecord],
    plan: SweepPlan | None = None,
    title: str = "",
    previous: PreviousSession | None = None,
) -> str:
    table = rows(trials, plan)
    out: list[str] = [
        f"# {report_title(plan, title)}",
        "",
    ]
    out.append("| " + " | ".join(TABLE_COLUMNS) + " |")
    out.append("|" + "|".join("---:" if c.numeric else "---" for c in REPORT_COLUMNS) + "|")
    base = plan.base if plan is not None else None
    for r in table:
        out.append(
            "| " + " | ".join(row_cells(REPORT_COLUMNS, r.record, base, precise=True)) + " |"
        )
    if note := measurement_note(trials):
        out += ["", note]
    if plan is not None and trials:  # elapsed, the best (and the ETA of an unfinished sweep)
        out += ["", report_glance(plan, trials).line]
    if repeats := repeat_rows(report_trials(trials), base):
        out += ["", "## Repeated runs", "", repeats_note(report_trials(trials)), ""]
        out.append("| " + " | ".join(REPEAT_HEADERS) + " |")
        out.append("|" + "|".join("---" if h == "config" else "---:" for h in REPEAT_HEADERS) + "|")
        out += ["| " + " | ".join(row) + " |" for row in repeats]
    if plan is not None:
        found = findings(plan, trials)
        if found:
            out += ["", "## Findings", ""] + [f"- {f}" for f in found]
    front = pareto(trials)
    out += ["", "## Pareto set (single-request vs aggregate)", ""]
    if front:
        for t in front:
            out.append(
                f"- trial {t.index + 1} `{record_label(t, plan.base if plan else None)}`: "
                f"{_fmt(t.single_request_tok_s)} tok/s single, "
                f"{_fmt(t.peak_aggregate_tok_s)} tok/s aggregate (c={t.peak_concurrency})"
            )
    else:
        out.append("(no successful trial)")
    out += levels_markdown(trials, plan)  # the best per level, the schedule, no speculation
    out += proof_markdown(trials, plan)  # the schedule's edges, what ran, categories
    ladder = sorted({lv.concurrency for t in report_trials(trials) for lv in t.levels})
    if ladder:
        out += ["", "## Aggregate output tok/s per concurrency", ""]
        out.append("| trial | config | " + " | ".join(f"c={c}" for c in ladder) + " |")
        out.append("|---:|---|" + "---:|" * len(ladder))
        for r in table:
            by_c = {lv.concurrency: lv for lv in r.record.levels}
            if not by_c:
                continue
            cells = [_level_cell(by_c.get(c)) for c in ladder]
            out.append(f"| {r.trial} | {r.label} | " + " | ".join(cells) + " |")
    searched = [t for t in report_trials(trials) if t.rate_probes]
    if searched:
        out += ["", "## Highest rate under the SLOs", ""]
        for t in searched:
            label = record_label(t, plan.base if plan else None)
            out.append(f"- trial {t.index + 1} `{label}`: {rate_answer(t)}")
            out += [f"  - {probe_text(p)}" for p in t.rate_probes]
    out += acceptance_lines(report_trials(trials), plan.base if plan else None)
    out += drift_lines(report_trials(trials), previous, plan.base if plan else None)
    out += prediction_lines(report_trials(trials), plan.base if plan else None)
    crashed = [t for t in report_trials(trials) if t.crash is not None]
    if crashed:
        out += ["", "## Crashes", ""]
        for t in crashed:
            c = t.crash
            assert c is not None
            out.append(
                f"- trial {t.index + 1} `{record_label(t, plan.base if plan else None)}`: "
                f"{c.cause}: {c.message}"
            )
            if c.gpu_memory:
                out.append(f"  - {crash_memory(c.gpu_memory)}")
            for fix in c.fixes[:3]:
                out.append(f"  - fix: {fix}")
    out += gpu_markdown(report_trials(trials), plan.base if plan else None)
    out += warnings_markdown(report_trials(trials), plan.base if plan else None)
    out += ["", "## Aggregate tok/s vs concurrency", "", "```", chart(trials, plan), "```"]
    out += ["", "## Single-request tok/s", "", "```", single_chart(trials, plan), "```", ""]
    return "\n".join(out)


def to_csv(trials: Sequence[TrialRecord], plan: SweepPlan | None = None) -> str:
    """The seed table, each trial's role (static, baseline, schedule, what-if) and the levels
    it is the best static at, the runs each figure averages with the headlines' std and 95 %
    CI (``[bench] repeats``; empty for one run), then one ``c=N tok/s`` column per level."""
    table = rows(trials, plan)
    ladder = sorted({lv.concurrency for r in table for lv in r.record.levels})
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(
        [
            "trial",
            "config",
            "single_request_tok_s",
            "peak_aggregate_tok_s",
            "peak_concurrency",
            "capacity",
            "accept_length",
            "status",
            "role",
            "best_at",
            "repeats",
            *(f"{name}_{part}" for name in CSV_SPREADS for part in SPREAD_PARTS),
            *(f"c{c}_tok_s" for c in ladder),
        ]
    )
    levels = table_for(trials, plan)
    for r in table:
        by_c = {lv.concurrency: lv.output_tok_s for lv in r.record.levels}
        spreads = (r.record.single_request_spread, r.record.peak_aggregate_spread)
        writer.writerow(
            [
                r.trial,
                r.label,
                "" if r.single is None else f"{r.single:.2f}",
                "" if r.peak is None else f"{r.peak:.2f}",
                "" if r.peak_concurrency is None else r.peak_concurrency,
                "" if r.capacity is None else r.capacity,
                "" if r.accept_length is None else f"{r.accept_length:.3f}",
                r.record.status.value,
                role_of(r.record).value,
                " ".join(map(str, best_at(levels, r.record))),
                r.record.repeats if r.record.levels else "",
                *(part for sp in spreads for part in _spread_parts(sp)),
                *("" if c not in by_c else f"{by_c[c]:.2f}" for c in ladder),
            ]
        )
    return buf.getvalue()


CSV_SPREADS: tuple[str, ...] = ("single_request_tok_s", "peak_aggregate_tok_s")
"""The headline figures whose spread over ``[bench] repeats`` the CSV carries."""
SPREAD_PARTS: tuple[str, ...] = ("std", "ci95_low", "ci95_high")


def _spread_parts(spread: Spread | None) -> list[str]:
    """std and the 95 % CI's bounds (empty cells for a figure measured once)."""
    if spread is None:
        return [""] * len(SPREAD_PARTS)
    return [f"{spread.std:.2f}", f"{spread.ci_low:.2f}", f"{spread.ci_high:.2f}"]


def render(
    trials: Sequence[TrialRecord],
    plan: SweepPlan | None,
    fmt: str = "md",
    title: str = "",
    previous: PreviousSession | None = None,
) -> str:
    """The report in ``fmt`` (``md``, ``csv`` or ``json``); ``previous``: the session the
    acceptance drift is measured against (``session.drift.previous_session``)."""
    if fmt == "md":
        return to_markdown(trials, plan, title, previous)
    if fmt == "csv":
        return to_csv(trials, plan)
    if fmt == "json":
        return to_json(trials, plan, title, previous)
    raise ValueError(f"unknown report format {fmt!r}; use one of {', '.join(FORMATS)}")
