"""End to end: ``specconsole demo`` in a real tmux, crash banner, ``r``, next trial.

The demo runs the real pipeline: the console, the controller, the plain-process backend and
local transport, and the simulator as a real HTTP server process. The test only reads the
screen (``tmux capture-pane``) and types keys, like a user. It runs its own tmux server
(``tmux -L <unique>``) and kills only that server; the simulator it caused to start is
stopped by the demo on quit, and by PID as a last resort.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.lifecycle import free_port

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
]

CRASH_WAIT_S = 150.0
"""Bound on reaching the steps=10 crash (about 80 s on an idle 2-core machine)."""
NEXT_TRIAL_WAIT_S = 40.0
EXIT_WAIT_S = 40.0


class Tmux:
    """One private tmux server."""

    def __init__(self) -> None:
        self.socket = f"specconsole-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"

    def run(self, *args: str, check: bool = True) -> str:
        result = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {result.stderr}")
        return result.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "demo", check=False)

    def wait_for(self, pattern: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if re.search(pattern, text):
                return text
            time.sleep(0.5)
        raise AssertionError(f"{pattern!r} did not appear within {timeout:.0f} s; screen:\n{text}")

    def kill(self) -> None:
        self.run("kill-server", check=False)


def _sim_pids(port: int) -> list[int]:
    """PIDs of simulator processes listening on our unique port (ours by construction)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in cmdline]
        if "specconsole.sim" in args and f"{port}" in args:
            pids.append(int(entry.name))
    return pids


def _watch_crash(tmux: Tmux, timeout: float) -> tuple[float, float, str]:
    """When the fatal line first shows in the journal pane and when the banner first shows.

    The two arrive by different routes (the log batch every ~100 ms, the state snapshot at
    once), so either may be first; the caller bounds the gap.
    """
    deadline = time.monotonic() + timeout
    journal_at: float | None = None
    banner_at: float | None = None
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux.screen()
        now = time.monotonic()
        if journal_at is None and any(
            line.startswith("│") and "Not enough memory" in line for line in screen.splitlines()
        ):
            journal_at = now
        if banner_at is None and "r resume next" in screen:
            banner_at = now
            deadline = min(deadline, now + 5.0)  # the journal line must follow soon
        if journal_at is not None and banner_at is not None:
            return journal_at, banner_at, screen
        time.sleep(0.2)
    raise AssertionError(
        f"banner at {banner_at}, fatal line in the journal at {journal_at}; screen:\n{screen}"
    )


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    server = Tmux()
    try:
        yield server
    finally:
        server.kill()


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
        # The fatal line reaches the journal pane, and the banner follows within 2 s.
        journal_at, banner_at, screen = _watch_crash(tmux, CRASH_WAIT_S)
        assert abs(banner_at - journal_at) < 2.0, (banner_at - journal_at, screen)
        assert "crashed while" in screen, screen
        assert "steps=10" in screen, screen
        tmux.run("send-keys", "-t", "demo", "r")
        screen = tmux.wait_for(r"trial 7/\d+", NEXT_TRIAL_WAIT_S)
        assert "crashed while" not in screen.splitlines()[2]
        # Leave: q (a trial runs, so the dialog asks), then q again = quit.
        tmux.run("send-keys", "-t", "demo", "q")
        time.sleep(1.0)
        if "Quit?" in tmux.screen():
            tmux.run("send-keys", "-t", "demo", "q")
        screen = tmux.wait_for(r"DEMO-EXIT=\d+", EXIT_WAIT_S)
        assert "DEMO-EXIT=0" in screen
    finally:
        for pid in _sim_pids(port):
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                pass
    sessions = list((tmp_path / "sessions").iterdir())
    assert len(sessions) == 1
    lines = (sessions[0] / "trials.jsonl").read_text().splitlines()
    assert len(lines) >= 6  # steps 1-5 and the crashed 10 at least
    assert not _sim_pids(port), "the demo must stop its simulated server on exit"
