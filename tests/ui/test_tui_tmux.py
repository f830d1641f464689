"""End to end: ``specconsole tui PLAN --start`` in a real tmux on a simulated box on this
machine: the first deploy's diff comes up and waits, ``enter`` deploys, the sweep runs without
asking again, ``q`` after it finished carries out ``finally = "best"`` and the launcher prints
that the box serves (``/health`` answered 200 for the best trial's server).

The real launcher (``commands.tui``), console, controller, process backend and simulator
(a real HTTP process); the test reads the screen and types keys like a user.
"""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path

import pytest

from tests.fixtures.lifecycle import free_port
from tests.fixtures.plans import sim_plan_text
from tests.session.sim_sessions import BENCH, SWEEP
from tests.ui.tmuxdriver import Tmux, stop_sims

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
]

CONFIRM_WAIT_S = 40.0
SWEEP_WAIT_S = 120.0
FINALLY_WAIT_S = 90.0


def _serves(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_tui_confirms_the_first_deploy_then_quit_leaves_the_best_serving(
    tmux: Tmux, tmp_path: Path
) -> None:
    port = free_port()
    sweep = SWEEP.replace("max_wall_minutes = 5", 'max_wall_minutes = 5\nfinally = "best"')
    text = sim_plan_text(
        tmp_path / "run",
        port=port,
        extra_args=["--sim-load-seconds", "0.2"],
        sweep=sweep,
        bench=BENCH,
        name="tui box",
    )
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    home = tmp_path / "home"
    home.mkdir()
    specconsole = Path(sys.executable).parent / "specconsole"
    command = (
        f"env HOME={home} TERM=tmux-256color {specconsole} tui {plan} --start "
        f"--session {tmp_path / 'sessions'}; echo TUI-EXIT=$?; sleep 60"
    )
    tmux.run("new-session", "-d", "-s", "demo", "-x", "120", "-y", "40", command)
    try:
        screen = tmux.wait_for(r"First deploy: confirm", CONFIRM_WAIT_S)
        assert "--speculative-num-steps: 1" in screen, screen  # the flag summary leads
        assert not _serves(port), "nothing may be deployed before the confirmation"
        tmux.run("send-keys", "-t", "demo", "Enter")
        tmux.wait_for(r"DONE", SWEEP_WAIT_S)  # the second deploy did not ask
        assert "First deploy: confirm" not in tmux.screen()
        tmux.run("send-keys", "-t", "demo", "q")
        screen = tmux.wait_for(r"TUI-EXIT=\d+", FINALLY_WAIT_S)
        flat = screen.replace("\n", "")  # the printed message wraps at the pane's width
        assert "finally = best: deployed trial" in flat and "the box serves" in flat, screen
        assert "TUI-EXIT=0" in screen, screen
        # (the simulator then follows the console out: it watches the process that started it
        # on the local transport; the pilot test checks the port while the app still runs)
    finally:
        stop_sims(port)
    sessions = list((tmp_path / "sessions").iterdir())
    assert len(sessions) == 1
    assert len((sessions[0] / "trials.jsonl").read_text().splitlines()) == 2
