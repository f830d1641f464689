"""The demo's simulator goes with the run that started it (issue 18, defect 9): a killed
headless sweep takes its simulator down; the simulator started by hand keeps running."""

from __future__ import annotations

import os
import signal
import time
import tomllib
from pathlib import Path

from specconsole.sim.parentwatch import PARENT_PID_ENV, alive, parent_pid
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


def test_a_killed_headless_sweep_takes_its_simulator_down(tmp_path: Path) -> None:
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
        os.killpg(run.pid, signal.SIGKILL)  # the whole headless run, as kill -9 would
        run.wait(10)
    only_session(tmp_path / "s")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _sims_on(port):
        time.sleep(0.2)
    assert _sims_on(port) == [], "the simulator outlived the killed sweep"
