"""Session files that were torn, emptied, mistyped or made binary: trials.jsonl stays the
truth, every file is decoded with an error naming it and the byte offset, and nothing
recorded is lost or run twice (issue 18, defects 3 and 4)."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.cli import main
from specconsole.core.plans.decoding import DecodeError, decode_text
from specconsole.session.files import SessionError, parse_trial_lines
from specconsole.session.store import Session
from tests.controller.helpers import PLAN_TEXT, Driver, plan
from tests.session.sim_sessions import unit_session


def _session(tmp_path: Path, *, trials: int = 2) -> Session:
    return unit_session(tmp_path, trials=trials)


def test_decode_names_file_and_offset() -> None:
    assert decode_text(b"\xef\xbb\xbfok", "f") == "ok"
    with pytest.raises(DecodeError, match=r"plan\.toml: not UTF-8 text at byte offset 3"):
        decode_text(b"abc\xff", "plan.toml")
    with pytest.raises(DecodeError, match=r"byte offset 12 \(a NUL byte\)"):
        decode_text(b"\x00", "x", base_offset=12)


def test_torn_binary_last_line_report_and_resume_repair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = _session(tmp_path)
    size = session.trials_path.stat().st_size
    with open(session.trials_path, "ab") as fh:
        fh.write(b'{"index": 2, "status": "\xff')
    # report (read-only) leaves the torn line out and says so; no UnicodeDecodeError
    assert main(["report", str(session.path)]) == 0
    captured = capsys.readouterr()
    assert f"torn line (byte offset {size})" in captured.err
    assert "| 2 | steps=2 draft=3 |" in captured.out
    # repair moves it aside (kept) and the file holds only whole records
    notices = session.repair()
    assert notices and "moved to" in notices[0] and "runs again" in notices[0]
    assert session.trials_path.stat().st_size == size
    assert (session.path / "trials.jsonl.torn").read_bytes() == b'{"index": 2, "status": "\xff\n'
    assert [t.index for t in session.load_trials()] == [0, 1]
    assert session.repair() == []


def test_a_damaged_middle_line_is_an_error_not_a_skip(tmp_path: Path) -> None:
    data = b'{"a": 1}\n\xfe\xfe\n{"b": 2}\n'
    with pytest.raises(SessionError, match=r"line 2 \(byte offset 9\).*never skipped"):
        parse_trial_lines(data, "trials.jsonl")
    with pytest.raises(SessionError, match=r"line 1 \(byte offset 0\)"):
        parse_trial_lines(b"[1]\n{}\n", "trials.jsonl")
    whole = parse_trial_lines(b'{"a": 1}\n{"b": 2}', "t")  # lost only its newline
    assert len(whole.records) == 2 and whole.torn_offset is None


@pytest.mark.parametrize(
    "content",
    [b"", b"\xff\xfe\x00binary", b'session = "not a table"\n', b"[session]\ntrials = 7\n"],
    ids=["empty", "binary", "wrong-type", "disagrees"],
)
def test_session_toml_is_a_cache_rebuilt_from_the_records(tmp_path: Path, content: bytes) -> None:
    p = replace(plan(), source=PLAN_TEXT)
    session = _session(tmp_path)
    (session.path / "session.toml").write_bytes(content)
    notices = session.reconcile(session.load_trials(), p)
    assert len(notices) == 1 and "rebuilt from trials.jsonl" in notices[0]
    meta = tomllib.loads((session.path / "session.toml").read_text())["session"]
    assert meta["trials"] == 2 and meta["name"] == "unit"
    assert session.reconcile(session.load_trials(), p) == []  # now it agrees


def test_auto_port_is_recovered_from_the_records(tmp_path: Path) -> None:
    """An emptied session.toml lost the auto port: without the records' port a resume picked
    a new port, so no recorded configuration matched and every trial ran again."""
    raw = plan()
    auto = replace(raw, auto_port=True)
    session = Session.create(tmp_path, replace(auto, source=PLAN_TEXT))
    d = Driver()
    d.start(replace(raw, base=replace(raw.base, port=31234)))
    d.finish_trial()
    for record in d.state.trials:
        session.append_trial(replace(record, config=replace(record.config, port=31234)))
    (session.path / "session.toml").write_bytes(b"")
    notices = session.reconcile(session.load_trials(), auto)
    assert notices
    assert session.meta_section()["server_port"] == 31234


def test_binary_plan_and_session_files_give_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"name = 'x'\n\x80\x81\xff")
    assert main(["sweep", str(binary), "--headless", "--session", str(tmp_path / "s")]) == 1
    err = capsys.readouterr().err
    assert "binary.toml: not UTF-8 text at byte offset 11" in err
    session = _session(tmp_path)
    (session.path / "plan.toml").write_bytes(b"\xff\xff")
    assert main(["resume", str(session.path)]) == 1
    err = capsys.readouterr().err
    assert "plan.toml: not UTF-8 text at byte offset 0" in err and "Traceback" not in err
    assert main(["report", str(session.path)]) == 0  # the records alone still report
    assert "reporting without the plan" in capsys.readouterr().err


def test_a_failed_write_leaves_no_temp_file_and_the_old_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _session(tmp_path)
    before = (session.path / "session.toml").read_bytes()
    trials_before = session.trials_path.read_bytes()
    import os

    def no_space(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(OSError, match="No space"):
        session.write_meta({"status": "x"})
    with pytest.raises(OSError, match="No space"):
        session.append_trial(session.load_trials()[0])
    monkeypatch.undo()
    assert (session.path / "session.toml").read_bytes() == before
    assert session.trials_path.read_bytes() == trials_before
    assert not [p.name for p in session.path.iterdir() if p.name.endswith(".tmp")]
