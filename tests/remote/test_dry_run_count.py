"""``sweep --dry-run`` numbers its trials as the sweep would run them: ``trial i/n`` with n
capped by ``max_trials`` (issue 42: it said ``1/6`` under ``max_trials = 4``), and says which
configurations of the plan the cap leaves out. Against this machine (``transport = "local"``,
the process backend): nothing is started, only previewed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specconsole.cli import main


def _plan(tmp_path: Path, max_trials: str) -> Path:
    plan = tmp_path / "plan.toml"
    plan.write_text(
        f"""
[host]
transport = "local"

[service]
kind = "process"
run_dir = "{tmp_path / "run"}"

[server]
model_path = "/models/target"
speculative_algorithm = "EAGLE3"
speculative_draft_model_path = "/models/draft"
speculative_eagle_topk = 1
port = 3999

[sweep]
strategy = "grid"
{max_trials}

[sweep.axes]
speculative_num_steps = [1, 2, 3, 4, 5, 6]

[bench]
ladder = [1, 4]
"""
    )
    return plan


def test_the_dry_run_counts_what_max_trials_lets_the_sweep_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sweep", str(_plan(tmp_path, "max_trials = 4")), "--dry-run"]) == 0
    out = capsys.readouterr().out
    numbers = re.findall(r"(?m)^trial (\d+)/(\d+) ", out)
    assert numbers == [(str(i), "4") for i in range(1, 5)], out
    assert "2 more configurations of the plan past max_trials = 4, not run" in out, out
    assert main(["sweep", str(_plan(tmp_path, "")), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert re.findall(r"(?m)^trial (\d+)/(\d+) ", out)[-1] == ("6", "6"), out
    assert "past max_trials" not in out
