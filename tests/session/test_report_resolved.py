"""Reports read the session's plan as it ran: placeholders and the auto port resolved.

The demo plan says ``port = "auto"`` and ``launcher = "{python} -m specconsole.sim"``; its
trials carry the chosen port and this interpreter. A report that compared them with the plan
as written matched no trial ("nothing tried yet"); it must name 9 as the largest loading
``speculative_num_steps`` (10 fails).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest

from specconsole.cli import main
from specconsole.controller.localplan import resolve_local_placeholders
from specconsole.core.machine.state import CrashInfo, LevelSummary, Phase, TrialRecord, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.session.store import Session

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo-sweep.toml"


def _demo_session(tmp_path: Path) -> Session:
    text = DEMO.read_text()
    plan = resolve_local_placeholders(dataclasses.replace(loads_plan(text), source=text))
    session = Session.create(tmp_path, plan)
    steps_run = [1, 2, 3, 4, 5, 10, 7, 8, 9]  # what the boundary walk runs
    for index, steps in enumerate(steps_run):
        config = plan.at(plan.base, speculative_num_steps=steps)
        config = dataclasses.replace(config, speculative_num_draft_tokens=steps + 1)
        if steps == 10:
            record = TrialRecord(
                index=index,
                config=config,
                status=TrialStatus.CRASHED,
                crash=CrashInfo(cause="kv_cache_no_memory", message="m", phase=Phase.LOADING),
            )
        else:
            level = LevelSummary(
                concurrency=1, output_tok_s=100.0 + steps, per_request_tok_s=100.0, completed=4
            )
            record = TrialRecord(index=index, config=config, status=TrialStatus.OK, levels=(level,))
        session.append_trial(record)
    return session


def test_report_of_the_demo_session_names_9(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = _demo_session(tmp_path)
    assert "{python}" in session.plan_text() and '"auto"' in session.plan_text()
    assert main(["report", str(session.path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["findings"] == [
        "speculative_num_steps: the largest value that loads is 9 (10 fails)"
    ]
    assert main(["report", str(session.path)]) == 0
    assert "the largest value that loads is 9 (10 fails)" in capsys.readouterr().out


def test_json_report_of_the_demo_session_matches_its_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = json.loads((REPO / "docs" / "report-schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    session = _demo_session(tmp_path)
    assert main(["report", str(session.path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, schema)
    first = doc["trials"][0]
    assert first["config"]["speculative_num_steps"] == 1
    assert first["config"]["launcher"].split()[0] != "{python}"  # what ran, resolved
    assert first["levels"][0]["per_request_tok_s"] == 100.0
    # a report that breaks the schema is caught
    broken = dict(doc, trials=[dict(first, config="steps=1")])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_two_sessions_side_by_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _demo_session(tmp_path / "a")
    b = _demo_session(tmp_path / "b")
    # B ran steps=3 faster: its row shows both figures and the change
    records = [json.loads(line) for line in b.trials_path.read_text().splitlines()]
    for raw in records:
        for level in raw.get("levels", []):
            level["per_request_tok_s"] *= 1.1
    b.trials_path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["report", str(a.path), str(b.path)]) == 0
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.startswith("| steps=3 "))
    assert "| 100.0 | 110.0 | +10.0% |" in row
    assert "crashed" in next(line for line in text.splitlines() if "steps=10" in line)
    assert text.count("the largest value that loads is 9 (10 fails)") == 2
    assert main(["report", str(a.path), str(b.path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"a", "b", "rows"} and len(doc["rows"]) == 9
    assert main(["report", str(a.path), str(b.path), "--format", "csv"]) == 1


def test_the_demo_sessions_prompt_file_resolves_as_it_ran(tmp_path: Path) -> None:
    """``{plan_dir}`` in ``[bench] dataset`` is the plan's folder when the session is created,
    and the session re-resolves it from its record (``resume`` from any folder finds it)."""
    text = DEMO.read_text()
    parsed = dataclasses.replace(loads_plan(text), source=text)
    assert parsed.bench.prompts == "jsonl:{plan_dir}/demo-prompts.jsonl"
    plan = resolve_local_placeholders(parsed, plan_dir=DEMO.parent)
    expected = f"jsonl:{DEMO.parent.resolve()}/demo-prompts.jsonl"
    assert plan.bench.prompts == expected
    session = Session.create(tmp_path, plan)
    assert "{plan_dir}" in session.plan_text()
    reopened = Session.open(session.path).load_plan()
    assert reopened.bench.prompts == expected
    assert Path(expected.split(":", 1)[1]).is_file()
