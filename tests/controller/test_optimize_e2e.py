"""strategy = "optimize" end to end: the headless CLI against simulator processes.

The search runs over steps x mem fraction (40 configurations, some of which crash on the
simulated seed box) with a budget of 7 trials; it is SIGKILLed while its fourth trial runs,
and ``specconsole resume`` continues the same search from ``trials.jsonl`` alone: nothing
recorded is repeated, the interrupted proposal is the next one, and the best configuration
found is within 3% of the optimum the pure model (``sim.physics.model.predict``) gives for the
space.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specconsole.controller.localplan import resolve_local_placeholders
from specconsole.core.machine.state import TrialStatus
from specconsole.core.plans.objective import best
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.search.strategy import next_trial
from specconsole.session.store import Session
from specconsole.sim.forecast import predict
from tests.fixtures.plans import sim_plan_text

pytestmark = pytest.mark.slow

LADDER = [1, 8]
INPUT_LEN, OUTPUT_LEN = 128, 24
SWEEP = """[sweep]
strategy = "optimize"
on_crash = "auto"
seed = 0
max_trials = 7
startup_trials = 3
load_timeout = 30

[sweep.axes]
speculative_num_steps = { min = 1, max = 10 }
mem_fraction_static = { min = 0.80, max = 0.92, step = 0.04 }
"""
BENCH = f"""[bench]
ladder = {LADDER}
input_len = {INPUT_LEN}
output_len = {OUTPUT_LEN}
requests_per_level = 8
warmup_requests = 0
"""


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "specconsole", *args]


def model_score(plan: SweepPlan, config: object) -> float:
    """Peak aggregate tok/s over the ladder, from the pure model (0 when it does not load)."""
    best_value = 0.0
    for c in LADDER:
        p = predict(config, c, INPUT_LEN, OUTPUT_LEN)  # type: ignore[arg-type]
        if not p.ok:
            return 0.0
        best_value = max(best_value, p.aggregate_tok_s)
    return best_value


def test_optimize_headless_kill_and_resume(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    text = sim_plan_text(
        run_dir,
        extra_args=["--sim-load-seconds", "0.2"],
        sweep=SWEEP,
        bench=BENCH,
        name="optimize-e2e",
    )
    plan_path = tmp_path / "plan.toml"
    plan_path.write_text(text)
    sessions = tmp_path / "sessions"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        _cli("sweep", str(plan_path), "--headless", "--session", str(sessions)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    seen: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 90
        killed = False
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            if "] trial 4/" in line and "loading" in line:
                os.kill(proc.pid, signal.SIGKILL)
                killed = True
                break
        assert killed, "".join(seen)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    (session_dir,) = list(sessions.iterdir())
    session = Session.open(session_dir)
    before = session.trials_path.read_text().splitlines()
    assert len(before) == 3, "".join(seen)
    plan = resolve_local_placeholders(session.load_plan())
    recorded = session.load_trials()
    interrupted = next(ln for ln in seen if "] trial 4/" in ln)

    resumed = subprocess.run(
        _cli("resume", str(session_dir), "--on-crash", "auto"),
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = session.trials_path.read_text().splitlines()
    assert after[:3] == before  # nothing recorded was lost or rewritten
    trials = session.load_trials()
    assert len(trials) == 7, resumed.stdout
    configs = [t.config for t in trials]
    assert len(set(configs)) == len(configs), "a trial was repeated"
    # the same search: the resumed run's first proposal is the interrupted one, and it is
    # what the strategy proposes from the three records alone
    label = interrupted.split("] trial 4/7 ", 1)[1].split(":")[0]  # e.g. steps=10 draft=11
    assert label in resumed.stdout
    again = next_trial(plan, recorded)
    assert again is not None and again.config == trials[3].config
    # within 3% of the model's optimum over the space
    grid = {plan.derive(c) for c in plan.grid()}
    optimum = max(model_score(plan, c) for c in grid)
    found = best(trials, plan.goal)
    assert found is not None and found.status is TrialStatus.OK
    assert model_score(plan, found.config) >= 0.97 * optimum, (
        [(t.config.speculative_num_steps, t.config.mem_fraction_static) for t in trials],
        optimum,
    )
    assert "optimize (" in resumed.stdout  # each proposal explained
