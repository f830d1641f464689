"""The demo's simulator goes with the run that started it (issue 18, defect 9): a killed
headless sweep takes its simulator down; the simulator started by hand keeps running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from specconsole.sim.parentwatch import PARENT_PID_ENV, POLL_S, alive, parent_pid
from tests.fixtures.sim import simulator_argv
from tests.fixtures.sshd import free_port
from tests.session.sim_sessions import only_session, popen, write_plan


def _sims_on(port: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"specconsole.sim" in argv and str(port).encode() in argv:
            out.append(int(entry.name))
    return out


def test_parent_pid_reading() -> None:
    assert parent_pid({PARENT_PID_ENV: "1234"}) == 1234
    assert parent_pid({PARENT_PID_ENV: "1"}) is None  # init is never "gone"
    assert parent_pid({PARENT_PID_ENV: "x"}) is None and parent_pid({}) is None
    assert alive(os.getpid())


@pytest.mark.parametrize("target", ["pid", "group"])
def test_a_killed_headless_sweep_takes_its_simulator_down(tmp_path: Path, target: str) -> None:
    """``kill -9 PID`` of the headless process alone (the simulator is detached into its own
    session, so nothing else dies with it), or of its whole process group."""
    plan = write_plan(tmp_path, extra=("--sim-load-seconds", "30"))
    run = popen("sweep", str(plan), "--headless", "--session", str(tmp_path / "s"))
    try:
        deadline = time.monotonic() + 60
        sims: list[int] = []
        port = 0
        while time.monotonic() < deadline and not sims:
            time.sleep(0.2)
            found = list((tmp_path / "s").glob("*/session.toml"))
            if found:
                port = tomllib.loads(found[0].read_text())["session"]["server_port"]
                sims = _sims_on(port)
        assert sims, "the simulator never started"
    finally:
        if target == "pid":
            os.kill(run.pid, signal.SIGKILL)  # kill -9 of the headless process itself
        else:
            os.killpg(run.pid, signal.SIGKILL)  # the whole headless run
        run.wait(10)
    only_session(tmp_path / "s")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _sims_on(port):
        time.sleep(0.2)
    assert _sims_on(port) == [], "the simulator outlived the killed sweep"


def _orphaned_sim(port: int, env: dict[str, str]) -> None:
    """Start the simulator detached from a shell that exits at once (as the process backend's
    ``setsid`` wrapper does), so its starter is gone while it keeps running."""
    argv = simulator_argv("--port", str(port), load_seconds=0.1)
    code = (
        f"import subprocess; subprocess.Popen({argv!r}, start_new_session=True, "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"
    )
    starter = subprocess.run([sys.executable, "-c", code], env=env, timeout=30)
    assert starter.returncode == 0


def test_a_simulator_without_a_parent_to_watch_is_left_running(tmp_path: Path) -> None:
    """A server reached any other way (started by hand, or over SSH, where the variable is
    never sent) is left as it is when the run that started it is gone; with the variable
    naming a process that died, it goes."""
    quiet = {k: v for k, v in os.environ.items() if k != PARENT_PID_ENV}
    kept, gone = free_port(), free_port()
    _orphaned_sim(kept, quiet)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(10)  # a PID that no longer exists
    _orphaned_sim(gone, {**quiet, PARENT_PID_ENV: str(dead.pid)})
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (not _sims_on(kept) or _sims_on(gone)):
            time.sleep(0.2)
        assert _sims_on(gone) == [], "the simulator outlived the run named as its parent"
        time.sleep(3 * POLL_S)  # several polls later, the one without a parent still runs
        assert _sims_on(kept), "a simulator without a parent to watch stopped by itself"
    finally:
        for pid in _sims_on(kept) + _sims_on(gone):
            os.kill(pid, signal.SIGTERM)


def test_the_demo_plan_stops_its_simulator_when_the_sweep_ends() -> None:
    """Defect 9's other half: a demo sweep that finishes stops its server ([sweep] finally)."""
    from specconsole.commands.tui import demo_plan

    assert demo_plan().finally_action == "stop"
