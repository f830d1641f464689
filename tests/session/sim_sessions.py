"""Small real sweeps of the simulated box for the session tests: a plan file with
``port = "auto"`` and the CLI run as a subprocess (so kills, locks and concurrent runs are
real processes)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from specconsole.session.store import Session
from tests.controller.helpers import PLAN_TEXT, Driver, plan
from tests.fixtures.plans import LOCAL_HOST, sim_plan_text

SWEEP = """[sweep]
strategy = "grid"
on_crash = "auto"
load_timeout = 30
max_wall_minutes = 5

[sweep.axes]
speculative_num_steps = [1, 2]
"""

BENCH = """[bench]
ladder = [1, 2]
input_len = 16
output_len = 8
duration_s = 0.3
warmup_requests = 0
api = "generate"
"""


def finally_plan_text(
    run_dir: Path, port: int, action: str, *, name: str, host: str = LOCAL_HOST
) -> str:
    """The 2-trial simulated sweep (``SWEEP``/``BENCH``) ending on ``[sweep] finally =
    action``, on a fixed ``port``, its simulator loading in 0.2 s."""
    sweep = SWEEP.replace("max_wall_minutes = 5", f'max_wall_minutes = 5\nfinally = "{action}"')
    return sim_plan_text(
        run_dir,
        port=port,
        extra_args=["--sim-load-seconds", "0.2"],
        sweep=sweep,
        bench=BENCH,
        name=name,
        host=host,
    )


def write_plan(folder: Path, *, axes: str = "[1, 2]", extra: tuple[str, ...] = ()) -> Path:
    """A 2-trial (by default) plan for the simulated box, written to ``folder/plan.toml``."""
    text = sim_plan_text(
        folder / "run-{port}",
        extra_args=["--sim-load-seconds", "0.2", *extra],
        sweep=SWEEP.replace("[1, 2]", axes),
        bench=BENCH,
        name="session test",
    )
    path = folder / "plan.toml"
    path.write_text(text)
    return path


def cli(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``specconsole ARGS`` in a subprocess, to its end."""
    return subprocess.run(
        [sys.executable, "-m", "specconsole", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def popen(*args: str) -> subprocess.Popen[str]:
    """``specconsole ARGS`` started in a subprocess (its own process group)."""
    return subprocess.Popen(
        [sys.executable, "-m", "specconsole", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        start_new_session=True,
    )


def only_session(parent: Path) -> Path:
    found = [p for p in parent.iterdir() if (p / "session.toml").is_file()]
    assert len(found) == 1, found
    return found[0]


def unit_session(parent: Path, *, trials: int = 2) -> Session:
    """A session of the unit plan (tests.controller.helpers) holding ``trials`` records of
    the machine's happy path, without running anything."""
    session = Session.create(parent, replace(plan(), source=PLAN_TEXT))
    d = Driver()
    d.start(plan())
    for _ in range(trials):
        d.finish_trial()
    for record in d.state.trials:
        session.append_trial(record)
    return session
