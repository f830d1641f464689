"""Issue 34 end to end at 80×24: ``specconsole demo`` in a real tmux (the console, the
controller, the process backend and the simulator as a real HTTP server process), read with
``capture-pane`` and driven with ``send-keys`` like a user.

* an edit applied while a trial benchmarks is queued with a sentence, not thrown away, and
  deploys once that trial ends (point 1);
* at the crash the footer starts with ``? help  q quit`` (2), the banner names what ``r``
  and ``o`` would deploy, ``k`` does nothing to the box and ``S`` asks first (4), no pop-up
  covers the journal's last lines (6);
* the trials table shows each figure whole or leaves its column out (3), and the help fits
  80 columns without the pool-only key.

Each test runs its own tmux server (``tmux -L <unique>``) and kills only that server; the
simulator the demo started is stopped by the demo on quit, and by PID as a last resort.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from specconsole.commands.tui import demo_plan
from specconsole.present.formats import format_rate
from tests.fixtures.lifecycle import free_port, unavailable
from tests.ui.tmuxdriver import Tmux, stop_sims

pytestmark = [pytest.mark.tmux, pytest.mark.slow]

COLUMNS, ROWS = 80, 24
START_WAIT_S = 40.0
CRASH_WAIT_S = 150.0
"""Bound on reaching the steps=10 crash (about 80 s on an idle 2-core machine)."""
QUEUED_DEPLOY_WAIT_S = 60.0
CAPTURES = os.environ.get("SPECCONSOLE_CAPTURE_DIR", "")
"""Where to write the 80×24 screens the test sees (unset: nowhere); for reading, not compared."""


@pytest.fixture
def demo(tmux: Tmux, tmp_path: Path) -> Iterator[tuple[Tmux, Path, int]]:
    """``specconsole demo`` at 80×24 in a private tmux server; (tmux, session dir, port)."""
    if shutil.which("tmux") is None:
        unavailable("tmux", "the tmux binary is not installed")
    port = free_port()
    home = tmp_path / "home"
    home.mkdir()
    specconsole = Path(sys.executable).parent / "specconsole"
    sessions = tmp_path / "sessions"
    command = (
        f"env HOME={home} TERM=tmux-256color {specconsole} demo --port {port} "
        f"--session {sessions}; echo DEMO-EXIT=$?; sleep 60"
    )
    tmux.run("new-session", "-d", "-s", "demo", "-x", str(COLUMNS), "-y", str(ROWS), command)
    yield tmux, sessions, port
    stop_sims(port)


def _keys(tmux: Tmux, *keys: str, settle: float = 0.6) -> str:
    for key in keys:
        tmux.run("send-keys", "-t", "demo", key)
        time.sleep(settle)
    return tmux.screen()


def _footer(screen: str) -> str:
    return screen.rstrip("\n").splitlines()[-1]


def _save(name: str, screen: str) -> None:
    if CAPTURES:
        Path(CAPTURES).mkdir(parents=True, exist_ok=True)
        (Path(CAPTURES) / f"{name}.txt").write_text(screen)


def test_an_edit_applied_while_a_trial_benchmarks_is_queued_then_deployed(
    demo: tuple[Tmux, Path, int],
) -> None:
    """Each step waits for the screen to show it (a loaded machine draws late), bounded by
    the time the trial benchmarks at least — its levels' windows — so the edit is made
    while it still does."""
    tmux, _sessions, port = demo
    bench = demo_plan(port).bench
    benchmarks_s = len(bench.ladder) * bench.window_s
    tmux.wait_for(r"BENCHMARKING", START_WAIT_S)
    tmux.run("send-keys", "-t", "demo", "e")
    tmux.wait_for(r"ctrl\+s queues", benchmarks_s)  # said before the key is pressed
    # speculative_num_steps is the second field: replace its value with 7
    _keys(tmux, "Tab", "End", "BSpace", "BSpace", "7", settle=0.3)
    tmux.run("send-keys", "-t", "demo", "C-s")
    screen = tmux.wait_for(r"Queued steps=7", benchmarks_s)
    assert "can't handle" not in screen
    _save("queued-edit-80x24", screen)
    # the trial ends, the sweep pauses after it, and the queued edit deploys: the header's
    # configuration line names it and the message line no longer says it is queued
    screen = _wait_until(tmux, lambda s: "steps=7 " in s.splitlines()[1], QUEUED_DEPLOY_WAIT_S)
    assert "Queued steps=7" not in screen, screen


def _wait_until(tmux: Tmux, ok: Callable[[str], bool], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux.screen()
        if screen.count("\n") > 2 and ok(screen):
            return screen
        time.sleep(0.5)
    raise AssertionError(f"not within {timeout:.0f} s; screen:\n{screen}")


def test_crash_at_80x24_keeps_the_way_out_names_targets_and_cuts_no_number(
    demo: tuple[Tmux, Path, int],
) -> None:
    tmux, sessions, _port = demo
    screen = tmux.wait_for(r"crashed while", CRASH_WAIT_S)
    time.sleep(2.0)  # the crash is recorded; the banner's choices are final
    screen = tmux.screen()
    _save("crash-80x24", screen)
    footer = _footer(screen)
    assert footer.startswith(" ? help  q quit"), footer
    assert "r resume:" in screen and "o roll back to steps=" in screen, screen
    assert "trial 6 crashed: RuntimeError" not in screen  # no pop-up repeating the banner
    journal = [line for line in screen.splitlines() if line.startswith("│")]
    assert any("Killed" in line for line in journal), screen  # the journal's last lines show
    # k is movement (vim, lazygit, k9s): the box is left alone
    screen = _keys(tmux, "k")
    assert "CRASHED" in screen and "Confirm" not in screen
    # skip asks first, naming what it skips; esc changes nothing
    screen = _keys(tmux, "S")
    assert "Confirm" in screen and "Skip steps=" in screen, screen
    _save("skip-confirm-80x24", screen)
    screen = _keys(tmux, "Escape")
    assert "CRASHED" in screen and "Confirm" not in screen
    # the trials table: each figure whole, or its column left out with a marker
    screen = _keys(tmux, "3")
    _save("trials-80x24", screen)
    _assert_whole_numbers(screen, sessions)
    # the help: 80 columns, no pool-only key outside a pool
    screen = _keys(tmux, "?")
    _save("help-80x24", screen)
    assert "Main screen" in screen and "show the next box" not in screen, screen
    assert all(len(line) <= COLUMNS for line in screen.splitlines())
    screen = _keys(tmux, "Escape", "q")
    tmux.wait_for(r"DEMO-EXIT=\d+", 30.0)


def _assert_whole_numbers(screen: str, sessions: Path) -> None:
    """Every peak figure the table shows is the whole recorded figure."""
    [session] = list(sessions.iterdir())
    records = [json.loads(line) for line in (session / "trials.jsonl").read_text().splitlines()]
    lines = screen.splitlines()
    header = next(line for line in lines if re.search(r"│ trial\s", line))
    assert "peak" in header or "cols →" in header, header
    assert "│ #6 " in header, header  # the details beside it: the newest trial (followed)
    shown_peak = "peak" in header
    for record in records:
        if record.get("peak_aggregate_tok_s") is None:
            continue
        peak = format_rate(record["peak_aggregate_tok_s"])
        row = next(
            line for line in lines if re.match(rf"│ (?:[★≈◆▸✖⊘!] )?#{record['index'] + 1} ", line)
        )
        if shown_peak:
            cell = row[header.index("peak") : header.index("peak") + len(peak) + 2]
            assert peak in cell, (peak, row)
