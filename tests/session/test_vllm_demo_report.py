"""End to end: the vLLM demo sweep as shipped, run headless, and the report of its session.

``specconsole sweep examples/vllm-sweep.toml --headless`` for real (the controller, the
plain-process backend and local transport, the simulator's vLLM face as a real HTTP server
process): ``num_speculative_tokens`` 1-8 at ``--gpu-memory-utilization`` 0.9 all load, the
shared-GPU launch (0.35) does not, and the findings say so in vLLM's words. The JSON report is
checked against docs/report-schema.json, every level's acceptance is vLLM's counters' own, and
the table tells the vLLM seed story within 3 % of the simulator's model: single-request tok/s
rising to a plateau around K 3-5 and falling after, the peak aggregate at a short draft and
falling as the draft grows.
"""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest

from specconsole.cli import main
from specconsole.session.store import Session
from specconsole.sim.forecast import peak_aggregate, predict
from specconsole.sim.physics.model import DEFAULT_INPUT_LEN, DEFAULT_OUTPUT_LEN
from tests.session.test_report_resolved import REPO

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # figures against the model

PLAN = REPO / "examples" / "vllm-sweep.toml"
SWEEP_TIMEOUT_S = 600.0
"""Bound on the whole demo (about 2.5 minutes on a loaded 2-core machine)."""


def test_the_vllm_demos_report_tells_its_story_in_vllms_words(
    tmp_path: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = tmp_path / "sessions"  # type: ignore[operator]
    argv = [sys.executable, "-m", "specconsole", "sweep", str(PLAN), "--headless"]
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
        "gpu_memory_utilization=0.9: num_speculative_tokens: every value tried loads "
        "(largest tried: 8); no boundary found",
        "gpu_memory_utilization=0.35: num_speculative_tokens: even 1 fails; nothing smaller "
        "was tried",
    ]
    statuses = [
        (t["config"]["num_speculative_tokens"], t["config"]["gpu_memory_utilization"], t["status"])
        for t in doc["trials"]
    ]
    assert statuses == [(k, 0.9, "ok") for k in range(1, 9)] + [(1, 0.35, "crashed")], statuses

    assert main(["report", str(session)]) == 0
    text = capsys.readouterr().out
    assert "| 4 | spec-tokens=4 gpu-mem=0.9 |" in text, text[:3000]
    assert "Acceptance per level" in text, text[:3000]

    records = {
        t.config.num_speculative_tokens: t
        for t in Session.open(session).load_trials()
        if t.status.value == "ok"
    }
    for k, record in records.items():
        for level in record.levels:
            c = level.counters
            assert level.measurement == "steady" and c is not None, (k, level)
            assert c.draft_tokens == k * c.drafts > 0, (k, level)
            assert level.accept_length == pytest.approx(1 + c.accepted / c.drafts)
    single = {k: records[k].single_request_tok_s or 0.0 for k in records}
    peak = {k: records[k].peak_aggregate_tok_s or 0.0 for k in records}
    table = "\n".join(f"K {k}: single {single[k]:.1f}, peak {peak[k]:.1f}" for k in sorted(single))
    for k, record in records.items():
        config = record.config
        model = predict(config, 1, DEFAULT_INPUT_LEN, DEFAULT_OUTPUT_LEN)
        _, model_peak = peak_aggregate(config)
        assert single[k] == pytest.approx(model.decode_tok_s_per_request, rel=0.03), table
        assert peak[k] == pytest.approx(model_peak, rel=0.03), table
        accept = record.levels[0].accept_length
        assert accept == pytest.approx(model.accept_length, rel=0.03), (k, accept)
    assert single[1] < single[2] < single[3], table
    assert max(single, key=lambda k: single[k]) in (3, 4, 5), table
    assert single[8] < max(single.values()), table
    assert max(peak, key=lambda k: peak[k]) in (1, 2, 3), table
    assert peak[3] > peak[5] > peak[7] > peak[8], table
