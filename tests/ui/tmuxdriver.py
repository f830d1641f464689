"""A private tmux server for the console's end-to-end tests, and the simulators they start.

Each test runs its own tmux server (``tmux -L <unique>``) and kills only that server; the
simulator a test caused to start (found by its unique port) is stopped by PID as a last
resort.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from pathlib import Path


def _environment() -> dict[str, str]:
    """The test's environment as Python knows it, given explicitly: inherited as is, the
    process's C environment can carry ``COLUMNS=80``/``LINES=24`` (readline sets them when
    something imports it), which the tmux server passes on to every pane — and a console
    started there draws at 80×24 in a 120×40 pane."""
    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


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
            env=_environment(),
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


def sim_pids(port: int) -> list[int]:
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


def stop_sims(port: int) -> None:
    """SIGTERM every simulator still listening on ``port`` (ours by construction)."""
    for pid in sim_pids(port):
        try:
            os.kill(pid, 15)
        except ProcessLookupError:
            pass
