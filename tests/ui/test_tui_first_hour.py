"""Issue 33 #7, the console's dead ends in the first hour: ``specconsole tui ALIAS`` names
the next command (``import``), and a console that only looked (opened, probed the box, quit
without a deploy) leaves no idle session folder behind.

The real launcher (``commands.tui``) in a real tmux, the console, the controller's probe and
the process backend on this machine; the test reads the screen and types keys like a user.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import sys
from pathlib import Path

import pytest

from specconsole.cli import main as cli_main
from tests.fixtures.lifecycle import free_port
from tests.fixtures.plans import sim_plan_text
from tests.session.sim_sessions import BENCH, SWEEP
from tests.ui.tmuxdriver import Tmux, stop_sims

OPEN_WAIT_S = 40.0
EXIT_WAIT_S = 40.0


def test_tui_with_an_ssh_alias_names_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no file named like the alias here
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli_main(["tui", "gpu-box"])
    assert code == 1
    said = err.getvalue()
    assert "specconsole import gpu-box -o plan.toml" in said, said
    assert "specconsole tui plan.toml" in said and "No such file" not in said, said


@pytest.mark.tmux
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_a_console_that_only_looked_keeps_no_session_folder(tmux: Tmux, tmp_path: Path) -> None:
    port = free_port()
    plan = tmp_path / "plan.toml"
    plan.write_text(
        sim_plan_text(
            tmp_path / "run",
            port=port,
            extra_args=["--sim-load-seconds", "0.2"],
            sweep=SWEEP,
            bench=BENCH,
            name="looking",
        )
    )
    home = tmp_path / "home"
    home.mkdir()
    sessions = tmp_path / "sessions"
    specconsole = Path(sys.executable).parent / "specconsole"
    command = (
        f"env HOME={home} TERM=tmux-256color {specconsole} tui {plan} "
        f"--session {sessions}; echo TUI-EXIT=$?; sleep 60"
    )
    tmux.run("new-session", "-d", "-s", "demo", "-x", "120", "-y", "40", command)
    try:
        tmux.wait_for(r"│ +connected", OPEN_WAIT_S)  # the probe answered: the console looked
        tmux.run("send-keys", "-t", "demo", "q")
        screen = tmux.wait_for(r"TUI-EXIT=\d+", EXIT_WAIT_S)
    finally:
        stop_sims(port)
    assert "TUI-EXIT=0" in screen, screen
    assert "no session folder is kept" in screen, screen
    assert not sessions.exists() or not any(sessions.iterdir()), list(sessions.iterdir())
