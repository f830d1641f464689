"""The pre-flight (issue 27 #16): whatever a plan references that can be checked before the
first deploy is checked first, and a plan that cannot run stops at once with the reason — no
trial deployed, no 100-second load wasted per trial. Real headless runs on the simulated box
(the process backend on this machine)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from specconsole.core.machine.handlers.preflight import (
    CHECKS,
    Finding,
    PreflightFacts,
    run_checks,
)
from specconsole.core.plans.parse import loads_plan
from tests.bench.servers import ROOT
from tests.controller.helpers import PLAN_TEXT

DEMO = ROOT / "examples" / "demo-sweep.toml"


def sweep(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specconsole", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def quick_demo(folder: Path, **bench: object) -> Path:
    """The demo plan copied to ``folder`` without its prompt file, shortened."""
    text = DEMO.read_text()
    text = text.replace(
        "speculative_num_steps = [1, 2, 3, 4, 5, 10]", "speculative_num_steps = [1]"
    )
    text = text.replace(
        'run_dir = "~/.local/state/specconsole/demo-run-{port}"', f'run_dir = "{folder}/run"'
    )
    for key, value in bench.items():
        text = text.replace("[bench]\n", f"[bench]\n{key} = {value!r}\n".replace("'", '"'), 1)
    path = folder / "demo-sweep.toml"
    path.write_text(text)
    return path


def test_a_missing_dataset_stops_the_sweep_before_the_first_deploy(tmp_path: Path) -> None:
    plan = quick_demo(tmp_path)
    done = sweep("sweep", str(plan), "--headless", "--session", str(tmp_path / "s"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "dataset" in done.stderr and "demo-prompts.jsonl" in done.stderr
    assert "No such file" in done.stderr or "cannot read" in done.stderr
    assert not (tmp_path / "s").exists()  # no session, nothing deployed
    assert not (tmp_path / "run").exists()


def test_resume_checks_again_before_its_first_deploy(tmp_path: Path) -> None:
    """The controller's own pre-flight: a session whose dataset went away since."""
    plan = quick_demo(tmp_path)
    shutil.copy(DEMO.parent / "demo-prompts.jsonl", tmp_path / "demo-prompts.jsonl")
    from specconsole.commands.sweep import load_plan_file
    from specconsole.session.store import Session

    session = Session.create(tmp_path / "s", load_plan_file(plan))
    (tmp_path / "demo-prompts.jsonl").unlink()
    done = sweep("resume", str(session.path))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pre-flight" in done.stdout and "demo-prompts.jsonl" in done.stdout
    assert "deploying" not in done.stdout and not (tmp_path / "run").exists()
    assert not session.trials_path.exists() or not session.trials_path.read_text().strip()
    meta = tomllib.loads((session.path / "session.toml").read_text())["session"]
    assert meta["status"] == "error" and meta["finished_reason"].startswith("pre-flight:")


def test_an_unset_api_key_variable_is_found_before_the_first_deploy(tmp_path: Path) -> None:
    plan = quick_demo(tmp_path, api_key="env:PREFLIGHT_UNSET_KEY_VAR")
    shutil.copy(DEMO.parent / "demo-prompts.jsonl", tmp_path / "demo-prompts.jsonl")
    done = sweep("sweep", str(plan), "--headless", "--session", str(tmp_path / "s"))
    assert done.returncode == 1
    assert "PREFLIGHT_UNSET_KEY_VAR is not set" in done.stderr
    assert not (tmp_path / "s").exists()


def test_the_checks_decide_from_facts() -> None:
    plan = loads_plan(PLAN_TEXT)
    facts = PreflightFacts(
        plan=plan,
        reach="connection refused",
        dataset="cannot read /x.jsonl: No such file",
        files=(("[host] identity_files ~/k", "/nope is not a file"),),
        unit_text=(
            "[Service]\nEnvironment=HF_TOKEN=hf_secretsecretsecretsecret1234\n"
            "ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m\n"
        ),
        unit_name="sglang.service",
        target="gpu-box",
    )
    report = run_checks(facts)
    checks = [f.check for f in report.findings]
    # a speculative sweep of bare text to /generate: its acceptance will read low (issue 31)
    assert checks == ["box", "dataset", "file", "unit", "workload"]
    assert [f.check for f in report.warnings] == ["unit", "workload"]
    assert "specconsole move-secrets gpu-box" in report.warnings[0].message
    assert "hf_secret" not in report.reason() + report.warnings[0].message
    assert report.reason().startswith("pre-flight: 3 problems: box: cannot be reached")


def test_a_check_is_one_more_row() -> None:
    """How the release check (issue 33) plugs in: a fact in ``extra``, a row in the list."""

    def release(facts: PreflightFacts) -> list[Finding]:
        return [Finding("release", "unknown")] if facts.extra.get("release") is None else []

    facts = PreflightFacts(plan=loads_plan(PLAN_TEXT))
    assert run_checks(facts).blocking == ()
    report = run_checks(facts, (*CHECKS, ("release", release)))
    assert [f.check for f in report.blocking] == ["release"]


@pytest.mark.parametrize("which", ["ssh_config", "identity_files"])
def test_files_the_plan_names_are_checked(which: str, tmp_path: Path) -> None:
    from specconsole.controller.probe.preflight import local_report

    value = f'["{tmp_path}/key"]' if which == "identity_files" else f'"{tmp_path}/cfg"'
    text = PLAN_TEXT.replace(
        "[sweep]", f'[host]\ntransport = "ssh"\nalias = "box"\n{which} = {value}\n\n[sweep]', 1
    )
    report = local_report(loads_plan(text))
    assert [f.check for f in report.blocking] == ["file"]
    assert which in report.blocking[0].message
