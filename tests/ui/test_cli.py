"""``specconsole tui`` / ``demo`` argument and file handling (before any console opens)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specconsole.cli import main
from specconsole.commands.tui import demo_plan, read_console_file
from specconsole.core.plans.plan import PlanError

PROFILE = """
[host]
transport = "local"

[service]
kind = "process"

[server]
model_path = "Qwen/Qwen3.5-122B-A10B"
speculative_algorithm = "EAGLE3"

[ui]
theme = "light"
"""


def test_read_console_file_takes_the_ui_table_out(tmp_path: Path) -> None:
    path = tmp_path / "box.toml"
    path.write_text(PROFILE)
    plan, theme = read_console_file(path)
    assert theme == "light"
    assert plan.base.model_path == "Qwen/Qwen3.5-122B-A10B"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (PROFILE.replace('theme = "light"', 'theme = "neon"'), "[ui] theme = 'neon'"),
        (PROFILE.replace('theme = "light"', 'colour = "x"'), "unknown key(s) in [ui]: colour"),
        ("[server\n", "not valid TOML"),
        ("[host]\ntransport = 'local'\n", "[server]"),
    ],
)
def test_bad_files_name_the_key(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(PlanError) as info:
        read_console_file(path)
    assert expected in str(info.value)
    assert str(path) in str(info.value)


def test_tui_without_a_file_explains_what_to_do(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SPECCONSOLE_PROFILE", raising=False)
    assert main(["tui"]) == 1
    err = capsys.readouterr().err
    assert "specconsole tui PLAN.toml" in err and "specconsole demo" in err


def test_bare_specconsole_opens_tui(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SPECCONSOLE_PROFILE", raising=False)
    assert main([]) == 1
    assert "which box?" in capsys.readouterr().err


def test_tui_reports_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tui", str(tmp_path / "nope.toml")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_demo_plan_is_the_seed_sweep_with_overrides() -> None:
    plan = demo_plan(port=40123, load_seconds=0.25)
    assert dict(plan.axes)["speculative_num_steps"] == (1, 2, 3, 4, 5, 10)
    assert plan.base.port == 40123
    # The run folder is named after the port actually used, not a discarded auto pick.
    assert "40123" in plan.profile.service.run_dir
    args = list(plan.base.extra_args)
    assert args[args.index("--sim-load-seconds") + 1] == "0.25"
    assert plan.bench.ladder == (1, 4, 16, 32, 64)


def test_demo_plan_for_vllm_is_the_vllm_seed_story() -> None:
    plan = demo_plan(port=40124, load_seconds=0.25, engine="vllm")
    assert plan.base.engine == "vllm" and plan.base.launcher.endswith(
        "-m specconsole.sim vllm serve"
    )
    assert dict(plan.axes)["num_speculative_tokens"] == (1, 2, 3, 4, 5, 6, 7, 8)
    assert dict(plan.axes)["gpu_memory_utilization"] == (0.9, 0.35)
    assert plan.base.port == 40124
    args = list(plan.base.extra_args)
    assert args[args.index("--sim-load-seconds") + 1] == "0.25"
    assert plan.bench.api == "chat"
