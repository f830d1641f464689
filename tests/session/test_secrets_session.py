"""Environment values never reach session files: records keep names and the marker, the
plan copy keeps no secret, resume takes secrets from the shell (issue 19, "secrets")."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.core.config.model import ServerConfig
from specconsole.core.config.secrets import REDACTED
from specconsole.core.machine.state import TrialRecord, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.session.store import Session
from tests.controller.helpers import PLAN_TEXT

SECRET = "hf_planted_7c0ffee"

SECRET_PLAN = PLAN_TEXT.replace(
    "max_running_requests = 64\n",
    "max_running_requests = 64\n"
    f'env = {{ HF_TOKEN = "{SECRET}", HF_HOME = "/tmp/hf-home-value" }}  # keep this comment\n',
)


def every_file(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_no_env_value_is_written_and_trials_reload_as_the_same_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = loads_plan(SECRET_PLAN)
    assert dict(plan.base.env)["HF_TOKEN"] == SECRET
    session = Session.create(tmp_path, plan)
    config: ServerConfig = plan.at(plan.base, speculative_num_steps=2)
    record = TrialRecord(
        index=0,
        config=config,
        normalized=config,
        status=TrialStatus.OK,
        deploy_diff="-Environment=HF_HOME=<redacted>\n+    --speculative-num-steps 2\n",
    )
    session.append_trial(record)
    for path in every_file(session.path):
        text = path.read_text()
        assert SECRET not in text, path
    copy = session.plan_text()
    assert "# keep this comment" in copy and f'HF_TOKEN = "{REDACTED}"' in copy
    raw = json.loads(session.trials_path.read_text().splitlines()[0])
    assert raw["config"]["env"] == {"HF_TOKEN": REDACTED, "HF_HOME": REDACTED}
    assert raw["deploy_diff"].startswith("-Environment=HF_HOME=<redacted>")
    assert "/tmp/hf-home-value" not in session.trials_path.read_text()

    # Reloaded with the secret exported: the same configuration the plan proposes.
    monkeypatch.setenv("HF_TOKEN", SECRET)
    reloaded = session.load_trials()[0]
    assert reloaded.config == config and reloaded.deploy_diff == record.deploy_diff
    assert session.load_plan(secrets_from_env=True).base == plan.base

    # Without it, the marker stays (and resume refuses, naming the variable).
    monkeypatch.delenv("HF_TOKEN")
    assert dict(session.load_plan().base.env)["HF_TOKEN"] == REDACTED


def test_a_plan_without_secrets_is_copied_verbatim(tmp_path: Path) -> None:
    text = PLAN_TEXT.replace(
        "max_running_requests = 64\n", 'max_running_requests = 64\nenv = { A = "1" }\n'
    )
    session = Session.create(tmp_path, loads_plan(text))
    assert session.plan_text() == text


def test_resume_without_the_secret_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from specconsole.cli import main

    session = Session.create(tmp_path, loads_plan(SECRET_PLAN))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    assert main(["resume", str(session.path)]) != 0
    assert "export HF_TOKEN=" in capsys.readouterr().err


def test_records_of_a_config_without_env_are_unchanged(tmp_path: Path) -> None:
    plan = loads_plan(PLAN_TEXT)
    session = Session.create(tmp_path, plan)
    record = TrialRecord(index=0, config=replace(plan.base), status=TrialStatus.OK)
    session.append_trial(record)
    assert session.load_trials()[0].config == plan.base
