"""``specconsole report SESSION --format html -o report.html``: one page to share.

Why one self-contained file: a report is mailed, attached to a ticket or opened from a CI
artifact, often offline. Everything is inline — the stylesheet, and the charts as SVG drawn
by matplotlib (``session.reports.charts``) — with no script, font, image or link to fetch, so the
page renders the same anywhere (a test renders it in headless Chromium and checks that it
loads without console errors, that the charts are there and that the picture is not blank).

The page follows the seed's notes: the seed table (with the repeated runs' means, standard
deviations and confidence intervals under it when ``[bench] repeats`` was set), what the
sweep found, the charts (aggregate vs concurrency, single-request vs the swept axis, the
Pareto trade-off), the best configuration per concurrency, the crashes with their log
excerpt and suggested fixes, and every trial's full configuration with the unit diff it
deployed (when recorded).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from specconsole.core.machine.state import TrialRecord
from specconsole.core.measure.stats import half_width
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.search.strategy import findings
from specconsole.present.columns import REPORT_COLUMNS, cells
from specconsole.present.figures.acceptance import chunk_per_step, level_acceptance
from specconsole.present.figures.gpu import crash_memory
from specconsole.present.figures.progress import report_glance
from specconsole.present.figures.repeats import REPEAT_HEADERS, repeat_rows, repeats_note
from specconsole.present.formats import format_ms, format_rate, format_rate_ci
from specconsole.present.labels import measurement_note, record_label, report_title
from specconsole.present.probes import probe_text, rate_answer
from specconsole.session.reports.charts import chart_svg
from specconsole.session.reports.gpu_charts import gpu_chart_svg
from specconsole.session.reports.gpu_report import (
    LEVEL_HEADERS,
    MEMORY_HEADERS,
    draft_cost_lines,
    level_rows,
    memory_rows,
    sampled,
)
from specconsole.session.reports.levels_report import levels_html
from specconsole.session.reports.proof_report import proof_html
from specconsole.session.reports.report_json import config_document, unit_diff
from specconsole.session.reports.warnings_report import trial_warnings
from specconsole.session.selection import pareto, report_trials

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto;
       max-width: 1100px; color: #1b1b1f; background: #fff; line-height: 1.4; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; } h2 { margin-top: 2rem; font-size: 1.2rem; }
.sub { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 0.5rem 0; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25rem 0.6rem; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.crashed td { color: #b01c1c; }
figure { margin: 1rem 0; } figure svg { max-width: 100%; height: auto; }
pre { background: #f6f6f8; padding: 0.6rem; overflow-x: auto; font-size: 0.8rem; }
.finding { font-weight: 600; }
details { margin: 0.4rem 0; } summary { cursor: pointer; }
"""
"""The page's only style: inline, no web fonts."""


def _e(text: object) -> str:
    return html.escape(str(text))


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool]) -> str:
    head = "".join(
        f'<th class="num">{_e(h)}</th>' if n else f"<th>{_e(h)}</th>"
        for h, n in zip(headers, numeric, strict=True)
    )
    body = []
    for row in rows:
        tds = "".join(
            f'<td class="num">{_e(c)}</td>' if n else f"<td>{_e(c)}</td>"
            for c, n in zip(row, numeric, strict=True)
        )
        body.append(f"<tr>{tds}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _seed_table(trials: Sequence[TrialRecord], plan: SweepPlan | None) -> str:
    base = plan.base if plan is not None else None
    head = "".join(
        f'<th class="num">{_e(c.title)}</th>' if c.numeric else f"<th>{_e(c.title)}</th>"
        for c in REPORT_COLUMNS
    )
    body = []
    for record in report_trials(trials):
        texts = cells(REPORT_COLUMNS, record, base, precise=True)
        tds = "".join(
            f'<td class="num">{_e(t)}</td>' if c.numeric else f"<td>{_e(t)}</td>"
            for c, t in zip(REPORT_COLUMNS, texts, strict=True)
        )
        css = ' class="crashed"' if record.crash is not None else ""
        body.append(f"<tr{css}>{tds}</tr>")
    return (
        f'<table id="seed-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _figure(chart: str, caption: str, trials: Sequence[TrialRecord], plan: SweepPlan | None) -> str:
    return (
        f'<figure id="chart-{chart}" class="chart">{chart_svg(chart, trials, plan)}'
        f"<figcaption>{_e(caption)}</figcaption></figure>"
    )


def _levels_table(record: TrialRecord) -> str:
    rows = [
        (
            str(lv.concurrency),
            format_rate_ci(lv.output_tok_s, half_width(lv.output_tok_s_spread), 1),
            format_rate_ci(lv.per_request_tok_s, half_width(lv.per_request_tok_s_spread), 1),
            format_ms(lv.ttft_p50_ms),
            format_ms(lv.ttft_p99_ms),
            format_ms(lv.itl_p50_ms),
            f"{lv.completed}/{lv.completed + lv.failed}",
        )
        for lv in sorted(record.levels, key=lambda lv: lv.concurrency)
    ]
    headers = ("c", "aggregate tok/s", "per request tok/s", "TTFT p50", "TTFT p99", "ITL p50", "ok")
    return _table(headers, rows, (True,) * len(headers)) if rows else ""


def _trial_section(record: TrialRecord, plan: SweepPlan | None) -> str:
    base = plan.base if plan is not None else None
    config = config_document(record.effective)
    rows = [(k, v if isinstance(v, str) else repr(v)) for k, v in config.items()]
    per_step = chunk_per_step(record.effective)
    accept = [line for lv in sorted(record.levels, key=lambda lv: lv.concurrency)
              for line in level_acceptance(lv, per_step)]  # fmt: skip
    parts = [
        f"<details><summary>Trial {record.index + 1}: {_e(record_label(record, base))}"
        f" — {_e(cells((REPORT_COLUMNS[-1],), record, base, precise=True)[0])}</summary>",
        _table(("[server] key", "value"), rows, (False, False)),
        _levels_table(record),
        f'<pre class="acceptance">{_e(chr(10).join(accept))}</pre>' if accept else "",
    ]
    diff = unit_diff(record)
    if diff:
        parts.append(f'<p>Unit diff deployed:</p><pre class="diff">{_e(diff)}</pre>')
    parts.append("</details>")
    return "".join(parts)


def _gpu_section(trials: Sequence[TrialRecord], plan: SweepPlan | None) -> str:
    """Memory and power per trial, beside the throughput charts (nothing when no trial's
    GPUs were sampled)."""
    shown = report_trials(trials)
    base = plan.base if plan is not None else None
    costs = draft_cost_lines(shown, base)
    cost = (
        "<h3>KV cache: what the draft costs</h3><ul>"
        + "".join(f"<li>{_e(c)}</li>" for c in costs)
        + "</ul>"
        if costs
        else ""
    )
    if not sampled(shown):
        return cost
    memory = memory_rows(shown, lambda t: record_label(t, base))
    parts = [
        "<h3>GPU memory and power</h3>",
        f'<figure id="chart-gpu-memory" class="chart">{gpu_chart_svg("gpu-memory", trials, plan)}'
        "<figcaption>Memory held at ready (bar), the peak while loading (▲), a crash's memory "
        "at the fatal line (✖); dashed: the GPU's memory.</figcaption></figure>",
        _table(MEMORY_HEADERS, memory, (True, False, True, True, True, False)),
    ]
    levels = level_rows(shown)
    if levels:
        energy = gpu_chart_svg("gpu-energy", trials, plan)
        parts.append(
            f'<figure id="chart-gpu-energy" class="chart">{energy}'
            "<figcaption>Output tokens per joule (the level's tok/s over its GPUs' mean power)."
            "</figcaption></figure>"
        )
        parts.append(_table(LEVEL_HEADERS, levels, (True,) * len(LEVEL_HEADERS)))
    return "".join(parts) + cost


def to_html(trials: Sequence[TrialRecord], plan: SweepPlan | None, title: str = "") -> str:
    """The whole report as one HTML document."""
    name = report_title(plan, title)
    base = plan.base if plan is not None else None
    shown = report_trials(trials)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(name)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{_e(name)}</h1>",
        f'<p class="sub">{len(shown)} trials · generated by specconsole from the session '
        f"records. {_e(measurement_note(shown))}</p>",
        f'<p class="sub">{_e(report_glance(plan, trials).line)}</p>' if plan and trials else "",
        "<h2>Trials</h2>",
        _seed_table(trials, plan),
    ]
    if repeats := repeat_rows(shown, base):
        out.append(f"<h2>Repeated runs</h2><p>{_e(repeats_note(shown))}</p>")
        out.append(_table(REPEAT_HEADERS, repeats, tuple(h != "config" for h in REPEAT_HEADERS)))
    found = findings(plan, trials) if plan is not None else ()
    out.append("<h2>Findings</h2>")
    out.append(
        "<ul>" + "".join(f'<li class="finding">{_e(f)}</li>' for f in found) + "</ul>"
        if found
        else "<p>(no walk axis: nothing to conclude beyond the table)</p>"
    )
    out.append("<h2>Charts</h2>")
    out.append(_figure("aggregate", "One line per trial; ✖ crashed trials.", trials, plan))
    out.append(_figure("single", "✖ on the x axis: trials that crashed.", trials, plan))
    out.append(_figure("pareto", "Dashed: the Pareto front (worth keeping).", trials, plan))
    out.append(_gpu_section(trials, plan))
    front = pareto(trials)
    if front:
        out.append("<h2>Pareto set</h2>")
        rows = [
            (
                str(t.index + 1),
                record_label(t, base),
                format_rate(t.single_request_tok_s, 1),
                format_rate(t.peak_aggregate_tok_s, 1),
            )
            for t in front
        ]
        out.append(_table(("trial", "config", "single", "peak"), rows, (True, False, True, True)))
    out.append(levels_html(trials, plan, _table, _e))  # the best per level, the schedule
    out.append(proof_html(trials, plan, _e))  # the schedule's edges, what ran, categories
    searched = [t for t in shown if t.rate_probes]
    if searched:
        out.append("<h2>Highest rate under the SLOs</h2>")
        for t in searched:
            out.append(f"<h3>Trial {t.index + 1}: {_e(record_label(t, base))}</h3>")
            out.append(f"<p>{_e(rate_answer(t))}</p>")
            out.append(
                "<ul>" + "".join(f"<li>{_e(probe_text(p))}</li>" for p in t.rate_probes) + "</ul>"
            )
    crashed = [t for t in shown if t.crash is not None]
    if crashed:
        out.append("<h2>Crashes</h2>")
        for t in crashed:
            crash = t.crash
            assert crash is not None
            out.append(
                f"<h3>Trial {t.index + 1}: {_e(record_label(t, base))} — "
                f"{_e(crash.cause)}</h3><p>{_e(crash.message)}</p>"
            )
            if crash.gpu_memory:
                out.append(f'<p class="gpu-memory">{_e(crash_memory(crash.gpu_memory))}</p>')
            if crash.excerpt:
                out.append(f"<pre>{_e(chr(10).join(crash.excerpt))}</pre>")
            if crash.fixes:
                out.append("<ul>" + "".join(f"<li>{_e(f)}</li>" for f in crash.fixes) + "</ul>")
    if warned := trial_warnings(shown, base):
        out.append("<h2>Warnings</h2>")
        items = (f"<li>Trial {n} {_e(label)}: {_e(text)}</li>" for n, label, text in warned)
        out.append('<ul class="warnings">' + "".join(items) + "</ul>")
    out.append("<h2>Every trial's configuration</h2>")
    out.extend(_trial_section(t, plan) for t in shown)
    out.append("</body></html>")
    return "\n".join(out) + "\n"
