"""Session folders (atomic session.toml, append-only trials.jsonl) and reports."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.cli import main
from specconsole.core.logs.events import LoadStage, SuggestedFix
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import (
    CapacityPrediction,
    CrashInfo,
    LevelSummary,
    Phase,
    PhaseStamp,
    TrialKind,
    TrialRecord,
    TrialStatus,
)
from specconsole.session.files import SessionError
from specconsole.session.listing import list_sessions
from specconsole.session.recorder import SessionRecorder
from specconsole.session.records import RecordError, record_from_dict, record_to_dict
from specconsole.session.reports.report import (
    best_per_concurrency,
    chart,
    pareto,
    render,
)
from specconsole.session.store import Session
from tests.controller.helpers import PLAN_TEXT, Driver, plan


def _levels(*pairs: tuple[int, float, float]) -> tuple[LevelSummary, ...]:
    return tuple(
        LevelSummary(concurrency=c, output_tok_s=agg, per_request_tok_s=single, completed=8)
        for c, single, agg in pairs
    )


def _trial(
    i: int, steps: int, single: float, aggs: tuple[float, float], **kw: object
) -> TrialRecord:
    p = plan()
    return TrialRecord(
        index=i,
        config=p.at(p.base, speculative_num_steps=steps),
        status=TrialStatus.OK,
        levels=_levels((1, single, single), (16, single / 4, aggs[1])),
        capacity=400_000 - steps * 50_000,
        accept_length=1 + steps * 0.8,
        **kw,  # type: ignore[arg-type]
    )


FULL = TrialRecord(
    index=3,
    config=plan().at(plan().base, speculative_num_steps=10),
    normalized=plan().at(plan().base, speculative_num_steps=10, max_running_requests=48),
    kind=TrialKind.RETRY,
    status=TrialStatus.CRASHED,
    started_at=1.5,
    finished_at=9.25,
    phases=(
        PhaseStamp(Phase.VALIDATING, 1.5, 2.0),
        PhaseStamp(Phase.LOADING, 2.0, None, "weights"),
    ),
    argv=("python3", "-m", "sglang.launch_server", "--speculative-num-steps", "10"),
    artifact_hash="ab" * 32,
    warnings=("w",),
    errors=("e",),
    capacity=12,
    max_running_requests=48,
    predicted=CapacityPrediction(-5, False, 80, ((2, 300), (3, 200)), -100.0, 500.0, 11, "nope"),
    server_info=(("tp_size", "4"),),
    levels=_levels((1, 10.0, 10.0)),
    accept_length=2.5,
    crash=CrashInfo(
        cause="kv_cache_no_memory",
        message="Not enough memory",
        phase=Phase.LOADING,
        load_stage=LoadStage.WEIGHTS,
        excerpt=("a", "b"),
        fixes=("raise",),
        exit_status=1,
        signal=None,
        capacity=12,
        detected_at=9.0,
        source_time=8.9,
    ),
    log_file="logs/trial-004.log",
    note="n",
)


def test_record_round_trip_is_exact() -> None:
    data = json.loads(json.dumps(record_to_dict(FULL, bench={"levels": []})))
    assert record_from_dict(data) == FULL
    assert data["single_request_tok_s"] == 10.0 and data["bench"] == {"levels": []}


def test_malformed_record_is_a_record_error() -> None:
    with pytest.raises(RecordError, match="malformed"):
        record_from_dict({"index": 1})


def test_session_create_append_reload(tmp_path: Path) -> None:
    p = replace(plan(), source=PLAN_TEXT)
    session = Session.create(tmp_path, p)
    assert Session.open(session.path).load_plan().axes == p.axes
    session.append_trial(FULL)
    session.append_trial(replace(FULL, index=4))
    assert [t.index for t in session.load_trials()] == [3, 4]
    # a writer killed mid-line leaves a torn last line: it is skipped and the next
    # append starts on a fresh line
    with open(session.trials_path, "a") as fh:
        fh.write('{"index": 5, "status": "o')
    assert [t.index for t in session.load_trials()] == [3, 4]
    session.append_trial(replace(FULL, index=6))
    assert [t.index for t in session.load_trials()] == [3, 4, 6]


def test_session_toml_is_rewritten_atomically(tmp_path: Path) -> None:
    session = Session.create(tmp_path, replace(plan(), source=PLAN_TEXT))
    session.write_meta({"status": "loading", "trials": 2, "nothing": None})
    meta = tomllib.loads((session.path / "session.toml").read_text())
    assert meta["session"]["status"] == "loading" and "nothing" not in meta["session"]
    assert not list(session.path.glob(".*.tmp"))


def test_open_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match="not a session folder"):
        Session.open(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SessionError, match=r"has no session\.toml"):
        Session.open(tmp_path / "empty")


def test_the_folder_given_to_session_is_refused_naming_the_session_inside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report``/``best`` on the ``--session`` folder say which session folder to give."""
    parent = tmp_path / "sessions"
    only = Session.create(parent, replace(plan(), source=PLAN_TEXT), name="first")
    with pytest.raises(SessionError) as one:
        Session.open(parent)
    assert f"holds sessions, it is not one: give {only.path}" in str(one.value)
    assert "sessions --dir" not in str(one.value)
    newer = Session.create(parent, replace(plan(), source=PLAN_TEXT), name="second")
    newer.write_meta({"status": "done"})  # written last: the one named
    with pytest.raises(SessionError) as two:
        Session.open(parent)
    assert f"give {newer.path} (or one of the 2 `specconsole sessions --dir {parent}`" in str(
        two.value
    )
    for command in (["report", str(parent)], ["best", str(parent)]):
        assert main(command) != 0
        assert f"give {newer.path}" in capsys.readouterr().err, command


def test_list_sessions(tmp_path: Path) -> None:
    a = Session.create(tmp_path, replace(plan(), source=PLAN_TEXT), name="first")
    a.append_trial(FULL)
    (tmp_path / "not-a-session").mkdir()
    found = list_sessions(tmp_path)
    assert [s.path for s in found] == [a.path] and found[0].trials == 1
    assert list_sessions(tmp_path / "nope") == []


def test_recorder_writes_trials_logs_and_progress(tmp_path: Path) -> None:
    p = replace(plan(), source=PLAN_TEXT)
    session = Session.create(tmp_path, p)
    recorder = SessionRecorder(session, host="local", service="process", base=p.base)
    d = Driver()
    d.start(p)
    recorder.log_lines(0, ("line 1", "line 2"))
    d.finish_trial()
    recorder.save(d.state)
    record = recorder.record(d.state.trials[0], {"levels": []})
    assert record.log_file == "logs/trial-001.log"
    assert (session.path / record.log_file).read_text() == "line 1\nline 2\n"
    raw = json.loads(session.trials_path.read_text())
    assert raw["label"] == "steps=1 draft=2"
    meta = tomllib.loads((session.path / "session.toml").read_text())["session"]
    assert meta["host"] == "local" and meta["trials"] == 1 and meta["status"] == "validating"
    recorder.close()


def test_pareto_and_best_per_concurrency() -> None:
    trials = [
        _trial(0, 1, 100.0, (100.0, 1500.0)),
        _trial(1, 2, 150.0, (150.0, 1800.0)),  # dominates trial 0
        _trial(2, 3, 200.0, (200.0, 1700.0)),
        _trial(3, 4, 190.0, (190.0, 1600.0)),  # dominated by trial 2
        replace(_trial(4, 10, 0.0, (0.0, 0.0)), status=TrialStatus.CRASHED, levels=()),
        replace(_trial(5, 2, 500.0, (500.0, 9999.0)), kind=TrialKind.ROLLBACK),  # not a measurement
    ]
    assert [t.index for t in pareto(trials)] == [1, 2]
    best = [(c, t.index) for c, t, _v in best_per_concurrency(trials)]
    assert best == [(1, 2), (16, 1)]


def test_reports_in_three_formats() -> None:
    p = plan()
    d = Driver()
    d.start(p)
    for _ in range(3):
        d.finish_trial()
    d.to_phase(Phase.LOADING)
    d.send(
        ev.FatalSeen(
            cause="kv_cache_no_memory", message="Not enough memory", fixes=(SuggestedFix("raise"),)
        )
    )
    d.send(ev.ServerStopped())
    d.send(ev.TrialRecorded(index=3))
    md = render(d.state.trials, p, "md")
    assert md.splitlines()[2].startswith("| trial | config | single-request tok/s")
    assert (
        "| 4 | steps=10 draft=11 | — | — | — | — | "
        "crashed (kv_cache_no_memory in loading/starting) |" in md
    )
    assert "## Pareto set" in md and "## Best configuration per concurrency" in md
    assert (
        "| trial | config | c=1 | c=4 |" in md and "| 1 | steps=1 draft=2 | 100.0 | 1,000.0 |" in md
    )
    assert "between 3 (loads) and 10 (fails)" in md
    csv_text = render(d.state.trials, p, "csv")
    assert csv_text.splitlines()[0].endswith("c1_tok_s,c4_tok_s")
    doc = json.loads(render(d.state.trials, p, "json"))
    assert [r["status"] for r in doc["trials"]] == ["ok", "ok", "ok", "crashed"]
    crashed = doc["trials"][3]
    assert crashed["config"]["speculative_num_steps"] == 10  # the values, not a label
    assert crashed["config"]["model_path"] == p.base.model_path
    assert crashed["crash"]["cause"] == "kv_cache_no_memory"
    assert doc["trials"][0]["levels"][0]["concurrency"] == 1
    with pytest.raises(ValueError, match="unknown report format"):
        render(d.state.trials, p, "html")


def test_chart_is_plain_text_with_one_series_per_trial() -> None:
    trials = [_trial(0, 1, 100.0, (100.0, 1500.0)), _trial(1, 2, 150.0, (150.0, 1800.0))]
    text = chart(trials, plan())
    assert "\x1b[" not in text
    lines = text.splitlines()
    bottom = max(i for i, line in enumerate(lines) if "└" in line)
    legend = "\n".join(lines[bottom + 1 :])
    # the legend is under the plot (not over the data), names trials by their number and
    # gives each series its own marker (the text report has no colour)
    assert "● #1 steps=1 draft=2" in legend and "■ #2 steps=2 draft=3" in legend
    plot = "\n".join(lines[: bottom + 1])
    assert "●" in plot and "■" in plot and "steps=" not in plot
    assert "concurrency" in text
    assert chart([], plan()) == "(no successful trial to chart)"


def test_a_plan_built_in_code_is_kept_readable(tmp_path: Path) -> None:
    p = replace(plan(), source="", name="built in code")
    session = Session.create(tmp_path, p)
    assert replace(session.load_plan(), source="") == p
