"""The sweep/resume/report/sessions subcommands: argument handling and clear errors."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.cli import main
from specconsole.session.store import Session
from tests.controller.helpers import PLAN_TEXT, Driver, plan


def test_sweep_with_a_missing_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "/nonexistent/plan.toml", "--headless"]) == 1
    assert "cannot read the plan /nonexistent/plan.toml" in capsys.readouterr().err


def test_sweep_with_a_bad_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "plan.toml"
    bad.write_text(PLAN_TEXT.replace("[bench]", "[bench]\nladdr = [1]"))
    assert main(["sweep", str(bad), "--headless", "--session", str(tmp_path / "s")]) == 1
    err = capsys.readouterr().err
    assert "[bench]: unknown key 'laddr'" in err
    assert not (tmp_path / "s").exists()


def test_sweep_rejects_invalid_configurations_before_starting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "plan.toml"
    bad.write_text(PLAN_TEXT.replace('speculative_draft_model_path = "draft"\n', ""))
    assert main(["sweep", str(bad), "--headless", "--session", str(tmp_path / "s")]) == 1
    err = capsys.readouterr().err
    assert "speculative_draft_model_path" in err and "steps=1" in err
    assert not (tmp_path / "s").exists()


def _session_with_trials(tmp_path: Path) -> Session:
    session = Session.create(tmp_path, replace(plan(), source=PLAN_TEXT))
    d = Driver()
    d.start(plan())
    for _ in range(2):
        d.finish_trial()
    for record in d.state.trials:
        session.append_trial(record)
    return session


def test_report_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session = _session_with_trials(tmp_path)
    assert main(["report", str(session.path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# unit") and "| 2 | steps=2 draft=3 |" in out
    assert main(["report", str(session.path), "--format", "csv"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    assert main(["report", str(session.path), "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["trials"]) == 2


def test_report_and_resume_of_a_non_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path)]) == 1
    assert "has no session.toml" in capsys.readouterr().err
    assert main(["resume", str(tmp_path / "missing")]) == 1
    assert "is not a session folder" in capsys.readouterr().err


def test_sessions_listing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "--dir", str(tmp_path)]) == 0
    assert "no sessions" in capsys.readouterr().out
    session = _session_with_trials(tmp_path)
    assert main(["sessions", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert str(session.path) in out and "2 trials" in out
