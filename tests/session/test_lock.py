"""The session lock (issue 18, defect 2): two runs of one session at once are refused, a lock
left by a killed run is taken over with a notice, and two concurrent ``resume`` leave one
record per trial."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specconsole.session.lock import SessionLock, SessionLocked
from tests.session.sim_sessions import cli, only_session, popen, write_plan

HOLD = """
import sys, time
from pathlib import Path
from specconsole.session.lock import SessionLock
lock = SessionLock(Path(sys.argv[1])).acquire()
print("locked", flush=True)
time.sleep(60)
"""


def _holder(folder: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_a_live_owner_is_named_and_a_dead_one_is_taken_over(tmp_path: Path) -> None:
    holder = _holder(tmp_path)
    try:
        with pytest.raises(SessionLocked, match=rf"in use by PID {holder.pid} on "):
            SessionLock(tmp_path).acquire()
    finally:
        holder.kill()  # like kill -9: the kernel drops the flock, the file stays
        holder.wait(10)
    assert (tmp_path / "lock").is_file()
    with SessionLock(tmp_path) as lock:
        assert f"stale lock of PID {holder.pid}" in lock.notice
        assert (tmp_path / "lock").read_text().startswith(f"pid={lock_pid()} ")
    assert not (tmp_path / "lock").exists()  # released
    with SessionLock(tmp_path) as again:
        assert again.notice == ""


def lock_pid() -> int:
    import os

    return os.getpid()


def test_resume_of_a_session_in_use_is_refused(tmp_path: Path) -> None:
    plan = write_plan(tmp_path)
    done = cli("sweep", str(plan), "--headless", "--session", str(tmp_path / "s"))
    assert done.returncode == 0, done.stderr
    session = only_session(tmp_path / "s")
    holder = _holder(session)
    try:
        refused = cli("resume", str(session), timeout=30)
    finally:
        holder.kill()
        holder.wait(10)
    assert refused.returncode == 1
    assert f"is in use by PID {holder.pid}" in refused.stderr


def test_two_concurrent_resumes_record_each_trial_once(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, axes="[1, 2, 3]")
    parent = tmp_path / "s"
    first = popen("sweep", str(plan), "--headless", "--session", str(parent))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # wait for the first trial's record
            found = [p for p in parent.glob("*/trials.jsonl") if p.stat().st_size]
            if found:
                break
            time.sleep(0.1)
        first.kill()  # kill -9 mid-sweep: the lock file stays behind, the flock goes
        first.wait(10)
        session = only_session(parent)
        a, b = popen("resume", str(session)), popen("resume", str(session))
        outs = [p.communicate(timeout=120) for p in (a, b)]
        codes = sorted(p.returncode for p in (a, b))
    finally:
        for proc in (first,):
            if proc.poll() is None:
                proc.kill()
    assert codes == [0, 1], outs
    loser = next(err for (_, err), p in zip(outs, (a, b), strict=True) if p.returncode == 1)
    assert "is in use by PID" in loser
    lines = [json.loads(line) for line in (session / "trials.jsonl").read_text().splitlines()]
    indices = [line["index"] for line in lines]
    assert indices == sorted(set(indices)) and len(indices) == 3
    steps = [line["config"]["speculative_num_steps"] for line in lines]
    assert sorted(steps) == [1, 2, 3]
