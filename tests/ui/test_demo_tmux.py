"""End to end: ``specconsole demo`` in a real tmux, crash banner, ``r``, next trial.

The demo runs the real pipeline: the console, the controller, the plain-process backend and
local transport, and the simulator as a real HTTP server process. The test only reads the
screen (``tmux capture-pane``) and types keys, like a user. It runs its own tmux server
(``tmux -L <unique>``) and kills only that server; the simulator it caused to start is
stopped by the demo on quit, and by PID as a last resort.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures.lifecycle import free_port
from tests.ui.tmuxdriver import Tmux, sim_pids, stop_sims

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
]

CRASH_WAIT_S = 150.0
"""Bound on reaching the steps=10 crash (about 80 s on an idle 2-core machine)."""
NEXT_TRIAL_WAIT_S = 40.0
EXIT_WAIT_S = 40.0


BANNER_POLL_S = 0.02
"""How often the screen is read while waiting for the banner (a capture takes ~5 ms)."""

QUICK_PRESS_S = 0.1
"""The operator presses r within this long of the banner appearing (issue: keys never lost)."""


def _watch_banner(tmux: Tmux, timeout: float) -> tuple[float, str]:
    """The moment the crash banner first shows, and the screen then."""
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux.screen()
        if "crashed while" in screen:
            return time.monotonic(), screen
        time.sleep(BANNER_POLL_S)
    raise AssertionError(f"no crash banner within {timeout:.0f} s; screen:\n{screen}")


def _fatal_line_shown(screen: str) -> bool:
    return any(line.startswith("│") and "Not enough memory" in line for line in screen.splitlines())


def test_demo_crash_banner_then_r_starts_next_trial(tmux: Tmux, tmp_path: Path) -> None:
    port = free_port()
    home = tmp_path / "home"
    home.mkdir()
    specconsole = Path(sys.executable).parent / "specconsole"
    command = (
        f"env HOME={home} TERM=tmux-256color {specconsole} demo --port {port} "
        f"--session {tmp_path / 'sessions'}; echo DEMO-EXIT=$?; sleep 60"
    )
    tmux.run("new-session", "-d", "-s", "demo", "-x", "120", "-y", "40", command)
    tmux.run("set-option", "-t", "demo", "default-terminal", "tmux-256color", check=False)
    try:
        tmux.wait_for(r"trial 1/\d+", 30.0)
        # The banner appears and r is pressed at once, while the controller is still
        # stopping the server and recording the crash: the key must not be lost.
        banner_at, screen = _watch_banner(tmux, CRASH_WAIT_S)
        tmux.run("send-keys", "-t", "demo", "r")
        pressed_after = time.monotonic() - banner_at
        assert pressed_after < QUICK_PRESS_S, pressed_after
        assert "steps=10" in screen, screen
        # The fatal line reaches the journal pane within 2 s of the banner (the log batch
        # and the state snapshot travel by different routes).
        journal = tmux.wait_for(r"(?m)^│[^\n]*Not enough memory", 2.0)
        assert _fatal_line_shown(journal), journal
        screen = tmux.wait_for(r"trial 7/\d+", NEXT_TRIAL_WAIT_S)
        assert "crashed while" not in screen.splitlines()[2]
        # Leave: q (a trial runs, so the dialog asks), then q again = quit.
        tmux.run("send-keys", "-t", "demo", "q")
        time.sleep(1.0)
        if "Quit?" in tmux.screen():
            tmux.run("send-keys", "-t", "demo", "q")
        screen = tmux.wait_for(r"DEMO-EXIT=\d+", EXIT_WAIT_S)
        # quit while trial 7 runs: the plan did not finish, so the session says so (issue 18:
        # no way out of a sweep claims "done"); q is a deliberate quit, so it exits 0 (issue
        # 42: 130 is for an interrupt, ctrl+c)
        assert "DEMO-EXIT=0" in screen and "(interrupted)" in screen, screen
        assert "specconsole resume" in screen
    finally:
        stop_sims(port)
    sessions = list((tmp_path / "sessions").iterdir())
    assert len(sessions) == 1
    lines = (sessions[0] / "trials.jsonl").read_text().splitlines()
    assert len(lines) >= 6  # steps 1-5 and the crashed 10 at least
    assert 'status = "interrupted"' in (sessions[0] / "session.toml").read_text()
    assert not sim_pids(port), "the demo must stop its simulated server on exit"
