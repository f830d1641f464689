"""Reports of repeated benchmarks (``[bench] repeats``): every format carries the headline
figures' mean, sample standard deviation and 95 % confidence interval — the Markdown and
HTML as a table under the seed table (and ``mean ± half-width`` in the table itself), the CSV
as columns, the JSON as spread objects the schema describes."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import jsonschema
import pytest

from specconsole.core.machine.results import combine_runs
from specconsole.core.machine.state import LevelSummary, TrialRecord, TrialStatus
from specconsole.core.measure.stats import spread
from specconsole.session.reports.report import render
from specconsole.session.reports.report_html import to_html
from tests.controller.helpers import plan

REPO = Path(__file__).resolve().parents[2]
SINGLE_RUNS = (277.0, 281.5, 274.0)
PEAK_RUNS = (1979.0, 1955.0, 2003.0)


def _run(single: float, peak: float) -> tuple[LevelSummary, ...]:
    return (
        LevelSummary(concurrency=1, output_tok_s=single, per_request_tok_s=single, completed=8),
        LevelSummary(concurrency=32, output_tok_s=peak, per_request_tok_s=peak / 32, completed=64),
    )


def _trials() -> list[TrialRecord]:
    p = plan()
    runs = [_run(s, a) for s, a in zip(SINGLE_RUNS, PEAK_RUNS, strict=True)]
    repeated = tuple(combine_runs([run[i] for run in runs]) for i in range(2))
    return [
        TrialRecord(
            index=0,
            config=p.at(p.base, speculative_num_steps=3),
            status=TrialStatus.OK,
            levels=repeated,
        ),
        TrialRecord(
            index=1,
            config=p.at(p.base, speculative_num_steps=4),
            status=TrialStatus.OK,
            levels=_run(270.0, 1800.0),
        ),
    ]


def test_markdown_has_the_repeats_table_and_means_with_intervals() -> None:
    single, peak = spread(SINGLE_RUNS), spread(PEAK_RUNS)
    md = render(_trials(), plan(), "md")
    rows = md.splitlines()
    seed = next(line for line in rows if line.startswith("| 1 |"))
    assert f"{single.mean:,.1f} ± {single.ci_half_width:,.1f}" in seed
    assert f"{peak.mean:,.1f} ± {peak.ci_half_width:,.1f} (c=32)" in seed
    assert "| 2 | steps=4 draft=5 | 270.0 | 1,800.0 (c=32) |" in md  # one run: no interval
    assert "## Repeated runs" in md and "means over 3 runs of the ladder ± the half-width" in md
    (row,) = [line for line in rows if line.startswith("| 1 | steps=3") and "–" in line]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "3"
    assert cells[3:6] == [
        f"{single.mean:,.1f}",
        f"{single.std:,.1f}",
        f"{single.ci_low:,.1f}–{single.ci_high:,.1f}",
    ]
    assert cells[6:9] == [
        f"{peak.mean:,.1f}",
        f"{peak.std:,.1f}",
        f"{peak.ci_low:,.1f}–{peak.ci_high:,.1f}",
    ]
    per_c = rows[rows.index("## Aggregate output tok/s per concurrency") + 4]
    assert per_c.startswith("| 1 | steps=3") and per_c.endswith(
        f"| {peak.mean:,.1f} ± {peak.ci_half_width:,.1f} |"
    )


def test_csv_carries_the_runs_std_and_interval_columns() -> None:
    single, peak = spread(SINGLE_RUNS), spread(PEAK_RUNS)
    rows = list(csv.DictReader(io.StringIO(render(_trials(), plan(), "csv"))))
    first, second = rows
    assert first["repeats"] == "3" and second["repeats"] == "1"
    assert float(first["single_request_tok_s_std"]) == pytest.approx(single.std, abs=0.005)
    assert float(first["single_request_tok_s_ci95_low"]) == pytest.approx(single.ci_low, abs=0.005)
    assert float(first["peak_aggregate_tok_s_ci95_high"]) == pytest.approx(peak.ci_high, abs=0.005)
    assert second["peak_aggregate_tok_s_std"] == "" and second["c32_tok_s"] == "1800.00"
    assert list(first)[-2:] == ["c1_tok_s", "c32_tok_s"]  # the ladder's columns stay last


def test_json_spreads_follow_the_schema() -> None:
    doc = json.loads(render(_trials(), plan(), "json"))
    jsonschema.validate(doc, json.loads((REPO / "docs" / "report-schema.json").read_text()))
    first, second = doc["trials"]
    peak = spread(PEAK_RUNS)
    assert first["repeats"] == 3 and second["repeats"] == 1
    assert first["peak_aggregate_spread"]["std"] == pytest.approx(peak.std)
    assert first["peak_aggregate_spread"]["ci95_low"] == pytest.approx(peak.ci_low)
    assert first["single_request_spread"]["n"] == 3
    assert second["single_request_spread"] is None and second["peak_aggregate_spread"] is None


def test_html_shows_the_repeats_table() -> None:
    page = to_html(_trials(), plan())
    single = spread(SINGLE_RUNS)
    assert "<h2>Repeated runs</h2>" in page and "single 95% CI" in page
    assert f"{single.ci_low:,.1f}–{single.ci_high:,.1f}" in page
    assert f"{single.mean:,.1f} ± {single.ci_half_width:,.1f}" in page


def test_a_session_without_repeats_has_no_repeats_section() -> None:
    trials = _trials()[1:]
    assert "Repeated runs" not in render(trials, plan(), "md")
    assert "Repeated runs" not in to_html(trials, plan())
    assert "±" not in render(trials, plan(), "md")


def test_comparing_two_repeated_sessions_says_when_the_change_is_noise() -> None:
    from dataclasses import replace

    from specconsole.session.reports.compare import Side, rows, to_markdown

    a_trials = _trials()
    b_first = a_trials[0]
    b_close = replace(
        b_first,
        levels=tuple(replace(lv, output_tok_s=lv.output_tok_s * 1.01) for lv in b_first.levels),
    )
    a = Side("a", tuple(a_trials), plan())
    b = Side("b", (b_close, a_trials[1]), plan())
    text = to_markdown(a, b)
    row = next(line for line in text.splitlines() if line.startswith("| steps=3 "))
    peak = spread(PEAK_RUNS)
    assert f"| {peak.mean:,.1f} ± {peak.ci_half_width:,.1f} |" in row
    assert "+1.0% (CIs overlap) |" in row  # the peak moved by less than its noise
    other = next(line for line in text.splitlines() if line.startswith("| steps=4 "))
    assert "CIs overlap" not in other and "±" not in other  # measured once
    (first, _second) = rows(a, b)
    assert first["a_peak_aggregate_ci95"] == [peak.ci_low, peak.ci_high]
    assert first["b_single_request_ci95"] is not None
