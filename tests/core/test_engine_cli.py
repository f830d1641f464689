"""``specconsole validate / render / parse-log`` through the real CLI entry point."""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path

import pytest

from specconsole.cli import main
from specconsole.core.launch.systemd import parse_unit

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

GOOD = """
name = "eagle3 tuning"
[server]
model_path = "/models/Llama 3.1"
speculative_algorithm = "EAGLE3"
speculative_draft_model_path = "/models/eagle3"
speculative_num_steps = 3
speculative_eagle_topk = 1
speculative_num_draft_tokens = 4
max_running_requests = 64
mem_fraction_static = 0.85
user = "sglang"
working_directory = "/opt/sglang"
[server.env]
SGLANG_LOG_MS = "1"
"""

BAD = """
[server]
model_path = "m"
speculative_algorithm = "EAGLE3"
speculative_draft_model_path = "d"
speculative_num_steps = 3
speculative_eagle_topk = 2
speculative_num_draft_tokens = 9
mem_fraction_static = 1.2
"""


def write(tmp_path: Path, text: str, name: str = "c.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_validate_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", write(tmp_path, GOOD)]) == 0
    out = capsys.readouterr().out
    assert "configuration OK (0 errors, 0 warnings)" in out


def test_validate_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", write(tmp_path, BAD)]) == 1
    out = capsys.readouterr().out
    assert "error: mem_fraction_static:" in out
    assert "error: speculative_num_draft_tokens: 9 draft tokens exceed" in out
    assert "fix: set speculative_num_draft_tokens <= 7" in out
    assert "warning: max_running_requests:" in out
    assert "(2 errors, 1 warnings)" in out


def test_validate_quiet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-q", write(tmp_path, BAD)]) == 1
    out = capsys.readouterr().out
    assert "warning:" not in out and "error:" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[server]\nmodel_path = 'm'\nspec_steps = 3\n", "did you mean `speculative_num_steps`"),
        ("[server\n", "not valid TOML"),
        ("[host]\nalias = 'x'\n", "no [server] table"),
        ("[server]\ntp_size = 2\n", "server.model_path: missing"),
    ],
)
def test_validate_unreadable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    assert main(["validate", write(tmp_path, text)]) == 2
    assert message in capsys.readouterr().err


def test_validate_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "nope.toml")]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["seed-box.toml", "demo-sweep.toml"])
def test_validate_example_plans(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = EXAMPLES / name
    if not path.exists():
        pytest.skip(f"{name} not in this tree")
    assert main(["validate", str(path)]) == 0
    assert "configurations OK" in capsys.readouterr().out


def test_render_forms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD)
    assert main(["render", path, "--as", "argv"]) == 0
    argv = json.loads(capsys.readouterr().out)
    assert argv[:5] == [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "/models/Llama 3.1",
    ]
    assert main(["render", path, "--as", "command"]) == 0
    command = capsys.readouterr().out.strip()
    assert shlex.split(command) == ["SGLANG_LOG_MS=1", *argv]
    assert main(["render", path, "--as", "unit"]) == 0
    unit = capsys.readouterr().out
    assert "Description=eagle3 tuning" in unit and "User=sglang" in unit
    assert parse_unit(unit).model_path == "/models/Llama 3.1"


def test_render_invalid_still_prints_but_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["render", write(tmp_path, BAD), "--as", "command"]) == 1
    captured = capsys.readouterr()
    assert "--mem-fraction-static 1.2" in captured.out
    assert "would not be deployed" in captured.err


def test_parse_log_events_and_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse-log", str(LOGS / "journal_latest_startup.short_iso.log")]) == 0
    lines = capsys.readouterr().out.splitlines()
    records = [json.loads(line) for line in lines]
    assert records[-1]["event"] == "summary"
    assert records[-1]["ready"] is True
    assert records[-1]["capacity"]["max_total_num_tokens"] == 423846
    kinds = {r["event"] for r in records[:-1]}
    assert {
        "weights_begin",
        "kv_cache_allocated",
        "cuda_graph_end",
        "capacity",
        "ready",
        "decode",
    } <= kinds


def test_parse_log_fatal_exit_and_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (LOGS / "journal_cuda_graph_fatal.json.log").read_text()
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["parse-log", "--summary-only"]) == 1
    captured = capsys.readouterr()
    (line,) = captured.out.splitlines()
    summary = json.loads(line)
    assert summary["fatal"]["cause"] == "cuda_graph_capture_failed"
    assert "fatal: cuda_graph_capture_failed" in captured.err


def test_parse_log_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse-log", str(tmp_path / "none.log")]) == 2
    assert "cannot read" in capsys.readouterr().err


PLAN = """
name = "bad plan"
[host]
transport = "local"
[service]
kind = "process"
[server]
model_path = "m"
speculative_algorithm = "EAGLE3"
speculative_draft_model_path = "d"
speculative_num_steps = 2
speculative_num_draft_tokens = 8
max_running_requests = 16
[sweep]
strategy = "grid"
[sweep.axes]
speculative_eagle_topk = [2, 4]
[bench]
ladder = [1, 4]
"""


def test_validate_plan_checks_every_trial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", write(tmp_path, PLAN)]) == 1
    out = capsys.readouterr().out
    assert "[topk=2] error: speculative_num_draft_tokens: 8 draft tokens exceed" in out
    assert "[topk=4] error" not in out  # 8 <= 2 x 4 + 1
    assert "2 configurations have errors (1 errors" in out
