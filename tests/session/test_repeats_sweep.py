"""``[bench] repeats`` end to end: a real headless sweep of the simulated box (the simulator
as a real HTTP server process) runs the ladder twice per trial, prints each run's levels and
their means ± 95 % CI, records the intervals in trials.jsonl, and the report shows them."""

from __future__ import annotations

import json
from pathlib import Path

from specconsole.session.records import record_from_dict
from tests.fixtures.plans import sim_plan_text
from tests.session.sim_sessions import BENCH, SWEEP, cli, only_session


def test_a_repeated_ladder_is_printed_recorded_and_reported(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(
        sim_plan_text(
            tmp_path / "run-{port}",
            extra_args=["--sim-load-seconds", "0.2"],
            sweep=SWEEP.replace("[1, 2]", "[2]"),
            bench=BENCH + "repeats = 3\n",
            name="repeats e2e",
        )
    )
    done = cli("sweep", str(plan), "--headless", "--session", str(tmp_path / "s"))
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "run 2 c=1" in out and "run 3 c=2" in out
    assert "mean of 3 runs: c=1" in out and "mean of 3 runs: c=2" in out
    assert "mean ± 95% CI over 3 runs" in out
    session = only_session(tmp_path / "s")
    (line,) = (session / "trials.jsonl").read_text().splitlines()
    record = record_from_dict(json.loads(line))
    assert record.repeats == 3
    assert all(lv.repeats == 3 and lv.output_tok_s_ci is not None for lv in record.levels)
    single = record.single_request_spread
    assert single is not None and single.ci_low <= single.mean <= single.ci_high
    report = cli("report", str(session))
    assert report.returncode == 0, report.stderr
    assert "## Repeated runs" in report.stdout and "means over 3 runs" in report.stdout
