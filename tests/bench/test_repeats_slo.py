"""Repeat statistics (mean, std, 95 % CI), SLO parsing and goodput, percentiles, the CLI's
new options and the plan's [bench] keys."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from specconsole.bench.loadgen import run_ladder
from specconsole.core.measure.metrics import RequestTimeline, compute_level_metrics
from specconsole.core.measure.result import BenchResult
from specconsole.core.measure.slo import Slo, parse_slo
from specconsole.core.measure.stats import percentile_label, spread, t_975
from specconsole.core.plans.parse import parse_plan
from specconsole.core.plans.plan import PlanError
from specconsole.core.ports import BenchSpec
from tests.bench.servers import mini_server
from tests.bench.test_cli import bench


def test_spread_is_mean_sample_std_and_student_t_interval() -> None:
    sp = spread([1.0, 2.0, 3.0, 4.0, 5.0])
    # s = sqrt(sum((x - 3)^2) / (n - 1)) = sqrt(10 / 4); half = t(0.975, 4) * s / sqrt(5)
    assert sp.mean == 3.0 and sp.std == pytest.approx(math.sqrt(2.5))
    assert sp.ci_half_width == pytest.approx(2.776 * math.sqrt(2.5) / math.sqrt(5))
    assert sp.ci_low < 3.0 < sp.ci_high
    one = spread([7.0])
    assert (one.std, one.ci_low, one.ci_high) == (0.0, 7.0, 7.0)
    assert t_975(1) == 12.706 and t_975(30) == 2.042 and 1.96 < t_975(200) < 2.0
    with pytest.raises(ValueError):
        spread([])
    assert percentile_label(99.9) == "p99.9" and percentile_label(50) == "p50"


def test_slo_parsing_names_the_key_and_the_fix() -> None:
    assert parse_slo(["ttft_ms=500", "tpot_ms=50"]) == Slo(ttft_ms=500.0, tpot_ms=50.0)
    assert parse_slo(["ttft_ms=500 e2e_ms=9000"]).to_dict() == {"ttft_ms": 500.0, "e2e_ms": 9000.0}
    with pytest.raises(ValueError, match="unknown objective 'ttft'"):
        parse_slo(["ttft=5"])
    with pytest.raises(ValueError, match="KEY=MS"):
        parse_slo(["ttft_ms"])
    with pytest.raises(ValueError, match="positive number"):
        parse_slo(["tpot_ms=-1"])


def _level(ttft: float, n: int):  # type: ignore[no-untyped-def]
    r = RequestTimeline(
        start=0.0,
        latency=ttft + 0.01 * (n - 1),
        prompt_len=4,
        output_len=n,
        chunk_times=tuple(ttft + 0.01 * i for i in range(n)),
        chunk_tokens=(1,) * n,
    )
    return compute_level_metrics([r, r], duration=1.0, max_concurrency=1)


def test_repeats_make_headlines_means_with_intervals_and_survive_a_round_trip() -> None:
    runs = [(_level(0.1, 11),), (_level(0.2, 11),), (_level(0.3, 11),)]
    result = BenchResult(
        levels=runs[0], extra_repeats=tuple(runs[1:]), planned_levels=(1,), planned_repeats=3
    )
    assert result.single_request_tok_s == pytest.approx(100.0)
    stats = result.repeat_stats()
    ttft = stats["median_ttft_ms@1"]
    assert ttft.n == 3 and ttft.mean == pytest.approx(200.0) and ttft.std == pytest.approx(100.0)
    assert ttft.ci_half_width == pytest.approx(4.303 * 100.0 / math.sqrt(3))
    assert {"single_request_tok_s", "peak_aggregate_tok_s", "median_tpot_ms@1"} <= set(stats)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["repeat_stats"]["median_ttft_ms@1"]["ci95_high"] == pytest.approx(ttft.ci_high)
    back = BenchResult.from_dict(data)
    assert back.repeat_stats() == stats and not back.partial
    assert [r["repeat"] for r in back.records()] == [1, 2, 3]
    short = BenchResult(levels=runs[0], planned_levels=(1,), planned_repeats=3)
    assert short.partial  # two planned runs never happened


async def test_the_engine_repeats_the_ladder_on_the_same_workload() -> None:
    with mini_server("--step-s", "0.002", "--chunks", "1,3,2") as url:
        spec = BenchSpec(
            ladder=(1, 2),
            requests_per_level=3,
            output_len=8,
            input_len=16,
            repeats=3,
            percentiles=(50.0, 99.9),
            slo={"ttft_ms": 10_000.0},
        )
        ticks: list[dict[str, Any]] = []  # the engine's raw progress (runners wrap it)
        result = await run_ladder(spec, url, on_progress=ticks.append)
    assert len(result.repeats) == 3 and not result.partial
    # every run's finished level arrives live, saying which run it was (the console's panel
    # combines them as they come)
    finished = [p for p in ticks if p.get("level_result") is not None]
    assert [(p["repeat"], p["concurrency"]) for p in finished] == [
        (r, c) for r in range(3) for c in (1, 2)
    ]
    assert all(p["repeat_count"] == 3 for p in ticks)
    assert [p["level_result"] for p in finished][2::2] == [run[0] for run in result.extra_repeats]
    assert all([lv.max_concurrency for lv in run] == [1, 2] for run in result.repeats)
    level = result.levels[0]
    assert level.good_requests == 3 and level.request_goodput == pytest.approx(3 / level.duration)
    assert "p99.9_itl_ms" in level.to_record() and "p50_ttft_ms" in level.to_record()
    assert result.repeat_stats()["output_throughput@2"].n == 3


def test_plan_bench_table_takes_repeats_percentiles_and_slo() -> None:
    doc = {
        "server": {"model_path": "m"},
        "bench": {"repeats": 3, "percentiles": [50, 99.9], "slo": {"ttft_ms": 500}},
    }
    spec = parse_plan(doc).bench
    assert spec.repeats == 3 and spec.percentiles == (50.0, 99.9)
    assert spec.slo == {"ttft_ms": 500.0}
    for bad, needle in (
        ({"repeats": 0}, "repeats"),
        ({"slo": {"ttf": 1}}, "ttf"),
        ({"percentiles": [100]}, "percentiles"),
    ):
        with pytest.raises(PlanError, match=needle):
            parse_plan({"server": {"model_path": "m"}, "bench": bad})


def test_cli_slo_percentiles_repeats_and_output_details(tmp_path: Path) -> None:
    out = tmp_path / "details.jsonl"
    with mini_server("--step-s", "0.002", "--chunks", "1,3,2") as url:
        done = bench(
            url,
            "--ladder",
            "1,2",
            "--requests",
            "3",
            "--output-len",
            "8",
            "--slo",
            "ttft_ms=10000",
            "tpot_ms=10000",
            "--percentiles",
            "50,99.9",
            "--repeats",
            "2",
            "--output-file",
            str(out),
        )
        bad = bench(url, "--slo", "ttft=3")
    assert done.returncode == 0, done.stderr
    assert "goodput:" in done.stdout and "p99.9 TTFT" in done.stdout
    assert "over 2 runs" in done.stdout and "± " in done.stdout
    assert "marks a level cut short" not in done.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["repeat"] for r in records] == [1, 1, 2, 2]
    assert all(len(r["itls"]) == 3 and len(r["ttfts"]) == 3 for r in records)
    assert records[0]["good_requests"] == 3 and records[0]["slo"] == {
        "ttft_ms": 10000.0,
        "tpot_ms": 10000.0,
    }
    assert bad.returncode == 2 and "--slo" in bad.stderr


def test_the_star_footnote_only_appears_when_a_row_has_a_star() -> None:
    from dataclasses import replace

    from specconsole.commands.bench import format_table

    level = _level(0.1, 5)
    stopped = BenchResult(levels=(level,), planned_levels=(1, 4), error="level c=4: boom")
    text = format_table(stopped)
    assert "PARTIAL: level c=4: boom" in text and "*" not in text
    cut = BenchResult(levels=(replace(level, partial=True),), planned_levels=(1,), cancelled=True)
    text = format_table(cut)
    assert "(* marks a level cut short)" in text
    assert any(line.split()[0] == "1*" for line in text.splitlines() if line.strip())
    # repeats: the table shows run 1; a level cut short in run 2 puts no star in it
    later = BenchResult(
        levels=(level,),
        extra_repeats=((replace(level, partial=True),),),
        planned_levels=(1,),
        planned_repeats=3,
        cancelled=True,
    )
    text = format_table(later)
    assert "PARTIAL: cancelled" in text and "*" not in text
    assert "over 2 runs (the table above is run 1" in text
