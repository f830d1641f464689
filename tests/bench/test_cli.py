"""``specconsole bench`` as a user runs it: a real process against a real server process."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bench.servers import ROOT, mini_server


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with mini_server("--step-s", "0.005", "--chunks", "1,3,2") as base:
        yield base


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specconsole", "bench", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_json_prints_one_bench_serving_record_per_level(url: str, tmp_path: Path) -> None:
    out = tmp_path / "runs.jsonl"
    done = bench(
        url,
        "--ladder",
        "1,2",
        "--requests",
        "4",
        "--output-len",
        "12",
        "--input-len",
        "64",
        "--json",
        "--output-file",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["max_concurrency"] for r in records] == [1, 2]
    for record in records:
        assert record["completed"] == 4 and record["total_output_tokens"] == 48
        assert record["backend"] == "sglang" and record["random_output_len"] == 12
        for key in (
            "output_throughput",
            "median_ttft_ms",
            "p99_itl_ms",
            "accept_length",
            "request_throughput",
            "total_throughput",
            "concurrency",
        ):
            assert key in record
    assert len(out.read_text().splitlines()) == 2
    assert "c=2" in done.stderr  # the progress display


def test_a_steady_window_per_level(url: str) -> None:
    done = bench(
        url,
        "--ladder",
        "1,3",
        "--output-len",
        "400",
        "--window",
        "steady",
        "--window-s",
        "0.3",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["max_concurrency"] for r in records] == [1, 3]
    for record in records:
        assert record["measurement"] == "steady"
        assert record["completed"] == record["max_concurrency"]  # streams measured
        assert record["window"]["window_s"] >= 0.3 and record["window"]["requests_finished"] == 0
        assert record["output_throughput"] > 0 and record["mean_decode_tok_s"] > 0


def test_table_and_headlines(url: str) -> None:
    done = bench(url, "--ladder", "1,3", "--requests", "3", "--output-len", "8", "--api", "chat")
    assert done.returncode == 0, done.stderr
    assert "out tok/s" in done.stdout and "TTFT med" in done.stdout
    assert "single-request decode tok/s:" in done.stdout
    assert "peak aggregate output tok/s:" in done.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--ladder", "1,x"], "--ladder"),
        (["--requests", "0"], "--requests"),
        (["--api", "grpc"], "--api"),
        (["--prompts", "/nonexistent.jsonl"], "--dataset: cannot read"),  # --prompts is its alias
        (["--window", "steady", "--requests", "4"], "--window steady"),
        (["--window-s", "1"], "--window-s / --window-tokens: only with --window steady"),
    ],
)
def test_bad_arguments_name_the_option(url: str, args: list[str], needle: str) -> None:
    done = bench(url, *args)
    assert done.returncode == 2
    assert needle in done.stderr and "Traceback" not in done.stderr


def test_bad_url_and_unreachable_server() -> None:
    done = bench("localhost:1")
    assert done.returncode == 2 and "base URL" in done.stderr
    done = bench("http://127.0.0.1:9", "--ladder", "1", "--requests", "1", "--no-flush")
    assert done.returncode == 1 and "connect" in done.stderr and "Traceback" not in done.stderr


def test_sharegpt_answers_set_the_lengths_unless_output_len_is_given(
    url: str, tmp_path: Path
) -> None:
    from tests.bench.test_datasets import _answer_lens, _sharegpt

    data = _sharegpt(tmp_path / "sg.json", 10)
    answers = set(_answer_lens(data).values())
    own, fixed = tmp_path / "own.jsonl", tmp_path / "fixed.jsonl"
    common = ("--ladder", "2", "--requests", "6", "--warmup", "0", "--dataset", f"sharegpt:{data}")
    first = bench(url, *common, "--output-file", str(own), "--json")
    second = bench(url, *common, "--output-len", "8", "--output-file", str(fixed), "--json")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    (record,) = [json.loads(line) for line in own.read_text().splitlines()]
    assert record["output_lens"] and set(record["output_lens"]) <= answers
    assert len(set(record["output_lens"])) > 1 and record["output_len_source"] == "dataset"
    (record,) = [json.loads(line) for line in fixed.read_text().splitlines()]
    assert record["output_lens"] == [8] * 6
