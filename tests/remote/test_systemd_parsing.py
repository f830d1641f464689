"""How the systemd backend reads systemd's own output, checked on outputs recorded from
systemd 252 (``data/systemd/``): ``systemctl show`` of a running, exited-with-code, killed,
stopped and missing unit, and ``journalctl -o json`` records (including a non-UTF-8 message,
which the journal exports as a byte array)."""

from __future__ import annotations

from pathlib import Path

from specconsole.core.ports import ServiceState
from specconsole.remote.systemd import parse_show, record_from_json, status_from_show

DATA = Path(__file__).parent / "data" / "systemd"


def show(name: str) -> dict[str, str]:
    return parse_show((DATA / name).read_text())


def test_running() -> None:
    status = status_from_show(show("show-running.txt"))
    assert (status.state, status.pid, status.result, status.restarts) == (
        ServiceState.RUNNING,
        105,
        "success",
        0,
    )


def test_exit_code() -> None:
    status = status_from_show(show("show-exit-code.txt"))
    assert (status.state, status.exit_status, status.signal, status.result, status.pid) == (
        ServiceState.FAILED,
        3,
        None,
        "exit-code",
        None,
    )


def test_killed_by_signal() -> None:
    status = status_from_show(show("show-killed.txt"))
    assert (status.state, status.exit_status, status.signal, status.result) == (
        ServiceState.FAILED,
        None,
        9,
        "signal",
    )


def test_stopped_and_missing() -> None:
    assert status_from_show(show("show-stopped.txt")).state is ServiceState.INACTIVE
    missing = status_from_show(show("show-not-found.txt"))
    assert (missing.state, missing.result) == (ServiceState.INACTIVE, "not-found")


def test_journal_records_of_one_invocation() -> None:
    invocation = show("show-running.txt")["InvocationID"]
    lines = (DATA / "journal-rec.jsonl").read_text().splitlines()
    records = [record_from_json(line, invocation) for line in lines]
    assert [r.text for r in records if r] == [
        "Started rec.service.",  # systemd's own line (INVOCATION_ID)
        "first line",  # the service's output (_SYSTEMD_INVOCATION_ID)
        "bad \ufffd byte",  # a byte-array MESSAGE
    ]
    assert all(r and r.source_time and r.source_time > 1.7e9 for r in records)
    assert all(r and r.cursor and r.cursor.startswith(invocation + "/s=") for r in records)


def test_other_invocations_and_garbage_are_dropped() -> None:
    lines = (DATA / "journal-recfail.jsonl").read_text().splitlines()
    assert [record_from_json(line, "0" * 32) for line in lines] == [None] * len(lines)
    assert record_from_json("not json", None) is None
    assert record_from_json("[1, 2]", None) is None
    texts = [r.text for line in lines if (r := record_from_json(line, None))]
    assert "RuntimeError: Not enough memory." in texts
