"""Acceptance drift between builds (issue 41): the report compares each configuration's
acceptance per level with the previous session of the same model and engine, names both
builds (the release, else the server binary's fingerprint the flag check recorded), and
flags a drop beyond the noise — never one inside it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jsonschema
import pytest

from specconsole.cli import main as cli_main
from specconsole.core.measure.acceptance import CounterAcceptance
from specconsole.core.measure.drift import acceptance_drift
from specconsole.core.measure.trials import LevelSummary, TrialRecord, TrialStatus
from specconsole.core.plans.parse import parse_plan
from specconsole.session.drift import previous_session
from specconsole.session.store import Session

REPO = Path(__file__).resolve().parents[2]


def _plan(model: str = "/m/SmolLM2.gguf"):  # type: ignore[no-untyped-def]
    return parse_plan(
        {
            "name": "llama drift",
            "host": {"transport": "local"},
            "service": {"kind": "process"},
            "server": {
                "engine": "llamacpp",
                "model_path": model,
                "speculative_draft_model_path": "/m/draft.gguf",
                "spec_type": "draft-simple",
                "metrics": True,
            },
            "sweep": {"strategy": "grid", "axes": {"spec_draft_n_max": [2, 4]}},
            "bench": {"ladder": [1, 4]},
        }
    )


def _record(plan, index: int, n_max: int, rates: dict[int, tuple[int, int]]) -> TrialRecord:  # type: ignore[no-untyped-def]
    levels = tuple(
        LevelSummary(
            c,
            30.0,
            30.0 / c,
            4,
            counters=CounterAcceptance(drafts=drafted // n_max, draft_tokens=drafted, accepted=ok),
        )
        for c, (drafted, ok) in rates.items()
    )
    config = plan.at(plan.base, spec_draft_n_max=n_max)
    return TrialRecord(index=index, config=config, status=TrialStatus.OK, levels=levels)


def _session(parent: Path, plan, records: list[TrialRecord], fingerprint: str) -> Session:  # type: ignore[no-untyped-def]
    session = Session.create(parent, plan)
    for record in records:
        session.append_trial(record)
    (session.path / "flags").mkdir()
    (session.path / "flags" / "llamacpp-0123.json").write_text(
        json.dumps({"accepted": ["--port"], "fingerprint": f"{fingerprint}  -"})
    )
    time.sleep(0.01)  # created_at orders the sessions
    return session


def test_a_drop_beyond_the_noise_is_flagged_with_both_builds(tmp_path: Path) -> None:
    plan = _plan()
    before = [
        _record(plan, 0, 2, {1: (1000, 950), 4: (1000, 940)}),
        _record(plan, 1, 4, {1: (1000, 700), 4: (1000, 690)}),
    ]
    now = [
        _record(plan, 0, 2, {1: (1000, 830), 4: (1000, 935)}),  # 95 % -> 83 % at c=1
        _record(plan, 1, 4, {1: (1000, 705), 4: (1000, 688)}),
    ]
    old = _session(tmp_path, plan, before, "aaaaaaaaaaaaaaaa")
    other_model = _session(tmp_path, _plan("/m/other.gguf"), before, "cccc")
    new = _session(tmp_path, plan, now, "bbbbbbbbbbbbbbbb")
    found = previous_session(new.path, plan)
    assert found is not None and found.name == old.path.name != other_model.path.name
    assert (found.build, found.this_build) == ("binary aaaaaaaaaaaa", "binary bbbbbbbbbbbb")
    assert previous_session(old.path, plan) is None  # nothing older on this model
    rows = acceptance_drift(now, before)
    assert [(r.trial.index, r.concurrency, r.dropped) for r in rows] == [
        (0, 1, True),
        (0, 4, False),
        (1, 1, False),
        (1, 4, False),
    ]
    assert rows[0].change == pytest.approx(-0.12)
    lines = []
    assert cli_main(["report", str(new.path), "-o", str(tmp_path / "r.md")]) == 0
    lines = (tmp_path / "r.md").read_text().splitlines()
    head = next(line for line in lines if line.startswith("## Acceptance against the previous"))
    assert (
        old.path.name in head and "build binary aaaaaaaaaaaa then, binary bbbbbbbbbbbb now" in head
    )
    flagged = [line for line in lines if line.startswith("- ⚠ trial")]
    assert len(flagged) == 1 and "c=1: acceptance 95.0% → 83.0% (-12.0 points" in flagged[0]
    assert sum("within the noise" in line for line in lines) == 3
    assert (
        cli_main(["report", str(new.path), "--format", "json", "-o", str(tmp_path / "r.json")]) == 0
    )
    doc = json.loads((tmp_path / "r.json").read_text())
    jsonschema.validate(doc, json.loads((REPO / "docs" / "report-schema.json").read_text()))
    assert [row["dropped"] for row in doc["drift"]["rows"]] == [True, False, False, False]


def test_a_small_level_is_not_flagged_for_a_drop_its_counts_cannot_show() -> None:
    plan = _plan()
    before = [_record(plan, 0, 2, {1: (20, 19)})]  # 95 % of 20 drafted tokens
    now = [_record(plan, 0, 2, {1: (20, 17)})]  # 85 %: inside the binomial noise of 20
    (row,) = acceptance_drift(now, before)
    assert not row.dropped and row.band > 0.10
