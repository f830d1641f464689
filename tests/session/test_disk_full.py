"""A full disk stops the sweep within seconds (issue 18, defect 5): exit 1 with the reason,
the server left as it is, every recorded trial intact, no temp file left behind. The session
folder lives on a small tmpfs this test mounts (and unmounts) itself."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.session.sim_sessions import popen, write_plan


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "tmpfs"
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        reason = f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(folder: Path) -> None:
    with contextlib.suppress(OSError), open(folder / "filler", "wb") as fh:
        for _ in range(10_000):  # bounded: the tmpfs is 2 MB
            fh.write(b"\0" * 65536)
            fh.flush()


def test_a_full_disk_stops_the_sweep_with_the_reason(tmp_path: Path, small_tmpfs: Path) -> None:
    plan = write_plan(tmp_path, axes="[1, 2, 3, 4]")
    run = popen("sweep", str(plan), "--headless", "--session", str(small_tmpfs))
    try:
        deadline = time.monotonic() + 60
        trials: list[Path] = []
        while time.monotonic() < deadline:  # the first trial is recorded, then the disk fills
            trials = [p for p in small_tmpfs.glob("*/trials.jsonl") if p.stat().st_size]
            if trials:
                break
            time.sleep(0.1)
        assert trials, "no trial was recorded"
        before = trials[0].read_bytes()
        _fill(small_tmpfs)
        filled = time.monotonic()
        out, err = run.communicate(timeout=60)  # a hang fails here
        took = time.monotonic() - filled
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 1, (out, err)
    assert "No space left on device" in out and "the sweep stopped" in out, err[-3000:]
    assert took < 30, f"took {took:.1f} s to stop"
    session = trials[0].parent
    after = session.joinpath("trials.jsonl").read_bytes()
    assert after.startswith(before)  # nothing recorded was lost
    for line in after.splitlines():
        json.loads(line)  # and no torn line was left
    assert not [p.name for p in session.rglob("*.tmp")]
