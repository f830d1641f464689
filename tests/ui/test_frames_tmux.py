"""Issue 42's done-when: every distinct frame of ``specconsole demo`` (the seed's story and
``--story schedule``) at 80×24 and 120×40, read every 250 ms in a real tmux
(``tests/ui/framerecorder.py``), checked as a whole:

* no number is cut in any frame (a thousands group shorter than three digits at a cell's
  end, ``1,87`` for 1,879);
* once the first trial is recorded, every frame's header names the current best (★) and,
  while the sweep runs, its ETA;
* the schedule story's exit line launches the schedule, in the notation every view uses.

The demo runs the real pipeline (the console, the controller, the process backend, the
simulator as a real HTTP server process); the test only reads the pane and types keys. Each
test runs its own tmux server and kills only that server; the simulator the demo started is
stopped by the demo on quit, and by PID as a last resort. ``SPECCONSOLE_RECORD_BIN`` runs
another checkout's ``specconsole`` (the closing note's "before" figures);
``SPECCONSOLE_CAPTURE_DIR`` keeps the frames for reading.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures.lifecycle import free_port, unavailable
from tests.ui.framerecorder import Frame, FrameRecorder
from tests.ui.tmuxdriver import Tmux, stop_sims

pytestmark = [pytest.mark.tmux, pytest.mark.slow]

RUN_WAIT_S = 420.0
"""Bound on one whole demo (about 2-3 minutes on an idle 2-core machine)."""
CAPTURES = os.environ.get("SPECCONSOLE_CAPTURE_DIR", "")
SETTLE_S = 1.5
"""After a trial is recorded, the console's header follows within this long (one bridge
flush and a frame, with the other core busy)."""

CUT_GROUP = re.compile(r"(?<![\d,.:])(?<!c=)\d{1,3}(?:,\d{3})*,\d{1,2}(?![\d,:])")
"""A grouped number whose last group is short: ``1,87`` (1,879 cut at a cell's end). Lists
that read alike are not numbers: a figure right after a colon is a schedule's draft length
(``1-2:5,3-8:4,9+:3`` lists ``5,3`` and ``4,9`` as two pairs' ends and starts), one followed
by a colon starts a schedule's next pair (the contender's tiers ``1:3/4/5,3:3/4/5``), and
``c=2,3`` lists the levels an edge trial measures."""


def _specconsole() -> str:
    return os.environ.get("SPECCONSOLE_RECORD_BIN") or str(
        Path(sys.executable).parent / "specconsole"
    )


def _records(sessions: Path) -> list[dict[str, object]]:
    found = list(sessions.iterdir()) if sessions.exists() else []
    if not found:
        return []
    path = found[0] / "trials.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _record(
    tmux: Tmux, tmp_path: Path, story: str, size: tuple[int, int]
) -> tuple[list[Frame], list[dict[str, object]], str]:
    """Run the demo to its end and quit; (frames, trial records, the pane after exit)."""
    if shutil.which("tmux") is None:
        unavailable("tmux", "the tmux binary is not installed")
    port = free_port()
    home = tmp_path / "home"
    home.mkdir()
    sessions = tmp_path / "sessions"
    command = (
        f"env HOME={home} TERM=tmux-256color {_specconsole()} demo --story {story} "
        f"--port {port} --session {sessions}; echo DEMO-EXIT=$?; sleep 120"
    )
    columns, rows = size
    tmux.run("new-session", "-d", "-s", "demo", "-x", str(columns), "-y", str(rows), command)
    try:
        with FrameRecorder(tmux) as recorder:
            deadline = time.monotonic() + RUN_WAIT_S
            while time.monotonic() < deadline:
                screen = recorder.latest()
                header = screen.splitlines()[0] if screen else ""
                if "CRASHED" in header or "STOPPED" in header:
                    time.sleep(1.0)  # read the banner, as a user would
                    tmux.run("send-keys", "-t", "demo", "r")
                    time.sleep(2.0)
                elif header.lstrip().startswith("DONE") or "DEMO-EXIT" in screen:
                    break
                time.sleep(0.25)
            else:
                raise AssertionError(f"the demo did not finish; screen:\n{recorder.latest()}")
            time.sleep(2.0)
            frames = recorder.frames
            records = _records(sessions)
            if "DEMO-EXIT" not in recorder.latest():
                tmux.run("send-keys", "-t", "demo", "q")
                time.sleep(1.5)
                if "Quit?" in recorder.latest():
                    tmux.run("send-keys", "-t", "demo", "q")
            after = recorder.wait_for(r"DEMO-EXIT=\d+", 60.0)
    finally:
        stop_sims(port)
    if CAPTURES:
        folder = Path(CAPTURES) / f"{story}-{columns}x{rows}"
        folder.mkdir(parents=True, exist_ok=True)
        for i, frame in enumerate(frames):
            (folder / f"{i:05d}.txt").write_text(frame.text)
        (folder / "exit.txt").write_text(after)
    print(f"frames {story} {columns}x{rows}: {len(frames)} distinct of {recorder.reads} reads")
    return frames, records, after


def _first_recorded_at(records: list[dict[str, object]]) -> float:
    ends = [float(r["finished_at"]) for r in records if r.get("finished_at")]  # type: ignore[arg-type]
    assert ends, "no trial was recorded"
    return min(ends)


def _check_frames(frames: list[Frame], records: list[dict[str, object]]) -> None:
    cut = [(i, m.group(0), f) for i, f in enumerate(frames) for m in CUT_GROUP.finditer(f.text)]
    assert not cut, (
        f"{len(cut)} cut numbers, first {cut[0][1]!r} (frame {cut[0][0]}):\n{cut[0][2].text}"
    )
    first = _first_recorded_at(records) + SETTLE_S
    later = [f for f in frames if f.at >= first and f.lines]
    assert later, "no frame after the first trial"
    no_best = [f for f in later if "★" not in f.lines[0]]
    assert not no_best, f"{len(no_best)} of {len(later)} frames without ★:\n{no_best[0].text}"
    running = [f for f in later if not f.lines[0].lstrip().startswith("DONE")]
    no_eta = [f for f in running if "ETA" not in f.lines[0]]
    assert not no_eta, f"{len(no_eta)} of {len(running)} frames without ETA:\n{no_eta[0].text}"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_seed_story_every_frame(tmux: Tmux, tmp_path: Path, size: tuple[int, int]) -> None:
    frames, records, _after = _record(tmux, tmp_path, "seed", size)
    _check_frames(frames, records)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_schedule_story_every_frame_and_its_answer(
    tmux: Tmux, tmp_path: Path, size: tuple[int, int]
) -> None:
    frames, records, after = _record(tmux, tmp_path, "schedule", size)
    _check_frames(frames, records)
    launched = re.search(r"launch of the (?:result|best)[^\n]*", after)
    assert launched is not None, after
    assert re.search(r"schedule \d+-\d+:\d+(?:,\d+(?:-\d+|\+):\d+)+", launched.group(0)), after
    done = frames[-1].lines[0]
    assert re.search(r"★ #\d+ schedule \d", done), done
