"""The reports' GPU figures: memory per trial (at ready, the load's peak, a crash's memory at
the fatal line) and each level's power, utilisation and tokens per joule, in Markdown, HTML
(beside the throughput charts, as charts and tables) and JSON (valid against the schema)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from specconsole.core.machine.state import (
    CrashInfo,
    LevelSummary,
    Phase,
    TrialRecord,
    TrialStatus,
)
from specconsole.core.measure.gpu import GpuSample, GpuSpan, TrialGpu, fold
from specconsole.session.reports.report import render
from specconsole.session.reports.report_html import to_html
from tests.controller.helpers import plan

REPO = Path(__file__).resolve().parents[2]
TOTAL = 49152.0


def _samples(used: float, power: float) -> list[GpuSample]:
    return [GpuSample(i, used, TOTAL, 100.0, power) for i in range(4)]


def _trials() -> list[TrialRecord]:
    p = plan()
    span = GpuSpan(fold((), _samples(44125.0, 287.0)))
    levels = (
        LevelSummary(1, 233.0, 233.0, 8, gpu=GpuSpan(fold((), _samples(44125.0, 120.0)))),
        LevelSummary(64, 1947.0, 30.4, 64, gpu=span),
    )
    gpu = TrialGpu().with_load(_samples(43255.0, 30.0)).with_ready(_samples(44125.0, 30.0))
    ok = TrialRecord(0, p.base, status=TrialStatus.OK, levels=levels, gpu=gpu)
    crash = CrashInfo(
        "kv_cache_no_memory",
        "RuntimeError: Not enough memory.",
        Phase.LOADING,
        gpu_memory=tuple(_samples(43568.0, 30.0)),
    )
    crashed = TrialRecord(1, p.base, status=TrialStatus.CRASHED, crash=crash)
    return [ok, crashed]


def test_markdown() -> None:
    text = render(_trials(), plan(), "md")
    assert "## GPU memory and power per trial" in text
    assert "| 1 | " in text and "| 43.1 | 43.1 | 48.0 | — |" in text
    assert "GPU 0-3: 42.5 / 48.0 GiB |" in text  # the crash's memory at the fatal line
    assert "| 1 | 64 | 1,947.0 | 1,148 | 100% | 43.1 | 1.70 |" in text
    assert "  - GPU 0-3: 42.5 / 48.0 GiB at the fatal line" in text
    assert text.index("## GPU memory") < text.index("## Aggregate tok/s vs concurrency")


def test_html_beside_the_throughput_charts() -> None:
    page = to_html(_trials(), plan())
    assert page.index('id="chart-pareto"') < page.index('id="chart-gpu-memory"')
    assert 'id="chart-gpu-energy"' in page and "<script" not in page
    assert "GPU 0-3: 42.5 / 48.0 GiB at the fatal line" in page


def test_json_carries_them_and_matches_the_schema() -> None:
    doc = json.loads(render(_trials(), plan(), "json"))
    jsonschema.validate(doc, json.loads((REPO / "docs" / "report-schema.json").read_text()))
    ok, crashed = doc["trials"]
    assert ok["gpu"]["ready_mib"] == 44125.0 and ok["gpu"]["load_peak_mib"] == 44125.0
    level = ok["levels"][1]
    assert level["tokens_per_joule"] == 1947.0 / 1148.0 and level["gpu"]["power_w"] == 1148.0
    assert [s["memory_used_mib"] for s in crashed["crash"]["gpu_memory"]] == [43568.0] * 4
