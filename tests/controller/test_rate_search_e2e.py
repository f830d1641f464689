"""``objective = "max_rate_under_slo"`` against the simulated seed box (real processes): the
rate search finds the simulator model's highest feasible rate within its tolerance.

The SLO is a per-request decode speed at the probes' in-flight cap (``per_request_at_64 >=
130``); the model's answer is ``sim.physics.ratemodel.max_rate`` — the same ``sim.physics``
model, under Poisson arrivals (Little's law for the batch, each arrival's prefill taking its share
of the step clock). Every probe is recorded, and the report shows them.
"""

from __future__ import annotations

import json
from pathlib import Path

from specconsole.session.store import Session
from specconsole.sim.forecast import profile_for, resolve_config
from specconsole.sim.physics.ratemodel import max_rate
from tests.fixtures.plans import sim_plan_text
from tests.session.sim_sessions import cli, only_session

SLO = 130.0
INPUT_LEN, OUTPUT_LEN, CAP = 128, 64, 64
TOLERANCE = 0.05
SWEEP = f"""[sweep]
strategy = "grid"
on_crash = "auto"
load_timeout = 30
objective = "max_rate_under_slo"
constraints = ["per_request_at_{CAP} >= {SLO:g}"]
finally = "stop"

[sweep.axes]
speculative_num_steps = [3]

[sweep.rate_search]
min = 4.0
max = 32.0
rounds = 10
tolerance = {TOLERANCE}
"""
BENCH = f"""[bench]
ladder = [{CAP}]
input_len = {INPUT_LEN}
output_len = {OUTPUT_LEN}
duration_s = 6.0
warmup_requests = 0
api = "generate"
"""


def test_the_rate_search_finds_the_models_highest_feasible_rate(tmp_path: Path) -> None:
    text = sim_plan_text(
        tmp_path / "run-{port}",
        extra_args=["--sim-load-seconds", "0.2"],
        sweep=SWEEP,
        bench=BENCH,
        name="rate search",
    )
    plan_path = tmp_path / "plan.toml"
    plan_path.write_text(text)
    run = cli("sweep", str(plan_path), "--headless", "--session", str(tmp_path / "s"), timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    session = Session.open(only_session(tmp_path / "s"))
    (trial,) = session.load_trials()
    found = trial.slo_rate
    assert found is not None, trial.note
    probes = trial.rate_probes
    assert 3 <= len(probes) <= 10
    above = min(p.rate for p in probes if not p.met and p.rate > found)
    assert above / found <= 1 + TOLERANCE  # bracketed within the tolerance
    profile = profile_for(trial.effective)
    args = resolve_config(trial.effective, profile)
    model = max_rate(args, profile, SLO, INPUT_LEN, OUTPUT_LEN, cap=CAP, high=64.0)
    assert abs(found - model) / model <= TOLERANCE, (
        found,
        model,
        [(p.rate, p.met) for p in probes],
    )
    report = json.loads(cli("report", str(session.path), "--format", "json").stdout)
    (shown,) = report["trials"]
    assert len(shown["rate_probes"]) == len(probes) and shown["slo_rate"] == found
    assert report["best"]["text"].startswith("max_rate_under_slo ")
    assert "## Highest rate under the SLOs" in cli("report", str(session.path)).stdout
