"""``specconsole best SESSION``: the best trial's exact launch, the one ``render`` deploys, byte
for byte, for the box's release — with no secret in it. A real sweep of the simulated box (a
process per trial) with a planted secret in the plan's environment; then every form of
``best`` against ``render`` of the ``[server]`` table ``best --as plan`` prints, and every
output (and the headless sweep's own end, which prints the launch too) grepped for the secret.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from specconsole.session.store import Session
from tests.fixtures.plans import sim_plan_text
from tests.session.sim_sessions import BENCH, SWEEP, cli, only_session

SECRET = "planted-s3cret-value-7f3a"


def _plan(folder: Path) -> Path:
    text = sim_plan_text(
        folder / "run-{port}",
        extra_args=["--sim-load-seconds", "0.2"],
        sweep=SWEEP.replace('on_crash = "auto"', 'on_crash = "auto"\nfinally = "stop"'),
        bench=BENCH,
        name="best launch",
    )
    text = text.replace(
        'launcher = "{python} -m specconsole.sim"',
        'launcher = "{python} -m specconsole.sim"\n'
        f'env = {{ HF_TOKEN = "{SECRET}", HF_HOME = "/tmp/hf-home-public" }}',
    )
    path = folder / "plan.toml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("best")
    sessions = folder / "sessions"
    run = cli("sweep", str(_plan(folder)), "--headless", "--session", str(sessions))
    assert run.returncode == 0, run.stdout + run.stderr
    return only_session(sessions), run.stdout + run.stderr


def test_the_sweep_ends_with_the_launch_and_no_secret(swept: tuple[Path, str]) -> None:
    session, output = swept
    assert f"(specconsole best {session}):" in output
    assert SECRET not in output
    assert "HF_HOME=/tmp/hf-home-public" in output  # a public variable is a value


@pytest.mark.parametrize("form", ["command", "argv", "unit"])
def test_best_prints_what_render_deploys_byte_for_byte(
    swept: tuple[Path, str], form: str, tmp_path: Path
) -> None:
    session, _ = swept
    as_plan = cli("best", str(session), "--as", "plan")
    assert as_plan.returncode == 0, as_plan.stderr
    table = tmp_path / "best.toml"
    table.write_text(as_plan.stdout)
    best = cli("best", str(session), "--as", form)
    rendered = cli("render", str(table), "--as", form)
    assert best.returncode == 0 and rendered.returncode == 0, best.stderr + rendered.stderr
    assert best.stdout == rendered.stdout
    for text in (as_plan.stdout, best.stdout, best.stderr, rendered.stdout, rendered.stderr):
        assert SECRET not in text
    if form == "unit":
        assert "EnvironmentFile=" in best.stdout and "HF_TOKEN" not in best.stdout
    if form == "command":
        assert "HF_TOKEN" in best.stdout  # named as coming from its EnvironmentFile
        assert best.stdout.startswith("set -a; . ~/.local/state/specconsole/backups/")


def test_best_is_the_argv_the_best_trial_ran(swept: tuple[Path, str]) -> None:
    session, _ = swept
    opened = Session.open(session)
    trials = opened.load_trials()
    plan = opened.load_plan()
    from specconsole.core.plans.verdict import assess

    top = assess(trials, plan.goal).best
    assert top is not None
    argv = cli("best", str(session), "--as", "argv")
    assert json.loads(argv.stdout) == list(top.argv)  # the normalized run, the box's flags
    command = cli("best", str(session)).stdout
    assert f" {shlex.join(top.argv)}  # HF_TOKEN from " in command
    assert f"best: trial {top.index + 1}" in cli("best", str(session)).stderr


def test_best_by_another_objective_and_without_a_winner(swept: tuple[Path, str]) -> None:
    session, _ = swept
    single = cli("best", str(session), "--objective", "single_request")
    assert single.returncode == 0 and "single_request" in single.stderr
    bad = cli("best", str(session), "--objective", "nonsense")
    assert bad.returncode == 2 and "unknown metric" in bad.stderr
    missing = cli("best", str(session / "nope"))
    assert missing.returncode == 2
