"""End to end: the demo sweep as shipped, run headless, and the report of its session.

The other report tests build a session from the demo plan with records written by hand; this
one runs ``specconsole sweep examples/demo-sweep.toml --headless`` for real (the controller,
the plain-process backend and local transport, the simulator as a real HTTP server process),
so the finding comes from the boundary walk itself: steps 10 does not load, and the report of
what ran names 9 as the largest value that does. The JSON report of that session is checked
against docs/report-schema.json, and its table against the seed's story: single-request tok/s
rising over steps 1-5, the peak aggregate at steps 3, both within 3 % of the simulator's model.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from specconsole.cli import main
from specconsole.session.store import Session
from specconsole.sim.forecast import peak_aggregate, predict
from specconsole.sim.physics.model import DEFAULT_INPUT_LEN, DEFAULT_OUTPUT_LEN
from tests.session.test_report_resolved import DEMO, REPO

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # figures against the model

SWEEP_TIMEOUT_S = 600.0
"""Bound on the whole demo (about 3 minutes on a loaded 2-core machine)."""


def test_the_demo_sweeps_report_names_9_matches_the_schema_and_tells_the_seeds_story(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = tmp_path / "sessions"
    argv = [sys.executable, "-m", "specconsole", "sweep", str(DEMO), "--headless"]
    run = subprocess.run(
        [*argv, "--session", str(sessions)],
        capture_output=True,
        text=True,
        timeout=SWEEP_TIMEOUT_S,
        check=False,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (session,) = [p for p in sessions.iterdir() if p.is_dir()]

    assert main(["report", str(session), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, json.loads((REPO / "docs" / "report-schema.json").read_text()))
    assert doc["findings"] == [
        "speculative_num_steps: the largest value that loads is 9 (10 fails)"
    ]
    by_steps = {t["config"]["speculative_num_steps"]: t for t in doc["trials"]}
    assert by_steps[10]["status"] == "crashed"
    assert all(by_steps[s]["status"] == "ok" for s in (1, 2, 3, 4, 5, 7, 8, 9))

    # predictions checked against what ran (issue 41): the capacity line predicts the
    # simulator's KV pool exactly, and steps 10 was predicted not to load, rightly
    predictions = {row["trial"]: row for row in doc["predictions"]["trials"]}
    assert doc["predictions"]["mape_pct"] < 0.5, predictions
    ten = predictions[by_steps[10]["trial"]]
    assert ten["loads_predicted"] is False and ten["load_right"] is True, ten
    assert all(not row["misses"] for row in predictions.values()), predictions
    assert len(predictions) >= 6, predictions  # every trial after the line's first two

    assert main(["report", str(session)]) == 0
    text = capsys.readouterr().out
    assert "the largest value that loads is 9 (10 fails)" in text
    assert "## Predictions against what ran" in text and "mean absolute error 0.0 %" in text

    # The seed's story, at the model's calibration shape (1,024 in / 512 out), measured over
    # steady windows: single-request tok/s rises over steps 1-5 and the peak aggregate is at
    # steps 3, each within 3 % of the simulator's model for the configuration that ran.
    records = {t.config.speculative_num_steps: t for t in Session.open(session).load_trials()}
    assert all(lv.measurement == "steady" for s in range(1, 6) for lv in records[s].levels), (
        "the demo measures steady windows"
    )
    single = {s: by_steps[s]["single_request_tok_s"] for s in range(1, 6)}
    peak = {s: by_steps[s]["peak_aggregate_tok_s"] for s in range(1, 6)}
    table = "\n".join(f"steps {s}: single {single[s]:.1f}, peak {peak[s]:.1f}" for s in single)
    assert [single[s] for s in range(1, 6)] == sorted(single.values()), table
    assert len(set(single.values())) == 5, table
    assert max(peak, key=lambda s: peak[s]) == 3, table
    for steps in range(1, 6):
        config = records[steps].config
        model_single = predict(config, 1, DEFAULT_INPUT_LEN, DEFAULT_OUTPUT_LEN)
        _, model_peak = peak_aggregate(config)
        assert single[steps] == pytest.approx(model_single.decode_tok_s_per_request, rel=0.03), (
            table
        )
        assert peak[steps] == pytest.approx(model_peak, rel=0.03), table
