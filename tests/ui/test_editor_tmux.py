"""Issue 42 (item 3) end to end: the parameter editor in a real tmux takes keys as fast as they
come. ``specconsole tui PLAN`` (the real launcher and console; nothing deployed) at 120×40;
``e`` opens the editor on the plan's base, and the issue's burst — ``Tab C-a C-k 2 Tab Tab C-a
C-k 3 Tab C-a C-k 0.8``: the second field 2, the fourth 3, the fifth 0.8 — is sent

* in one ``send-keys`` call (one write to the terminal, as a paste without bracketed-paste
  mode or a fast typist's read), and
* key by key with 0, 20 and 80 ms between the ``send-keys`` calls,

ten times each, and with ``e`` itself in the same ``send-keys`` call as the burst (the keys
arrive before the editor is open: they wait for its form). Emptying a field shows its error
line (the form re-lays out) while later keys are still arriving. Each try reads what the
editor would deploy from its side panel (the whole candidate configuration, since nothing is
deployed) and must be exactly the intended one; then ``esc`` and ``y`` discard it. A bracketed
paste (``paste-buffer -p``) lands in the focused field.

Each test runs its own tmux server (``tmux -L <unique>``) and kills only that server.
"""

from __future__ import annotations

import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.lifecycle import free_port, unavailable
from tests.fixtures.plans import sim_plan_text
from tests.session.sim_sessions import BENCH, SWEEP
from tests.ui.tmuxdriver import Tmux, stop_sims

pytestmark = [pytest.mark.tmux, pytest.mark.slow]

COLUMNS, ROWS = 120, 40
START_WAIT_S = 40.0
SETTLE_WAIT_S = 15.0
TRIES = 10
BURST = ["Tab", "C-a", "C-k", "2", "Tab", "Tab", "C-a", "C-k", "3", "Tab", "C-a", "C-k", "0.8"]
"""The issue's burst, one tmux key (or string) per item."""
INTENDED = {
    "--speculative-algorithm": "EAGLE3",
    "--speculative-num-steps": "2",
    "--speculative-eagle-topk": "1",
    "--speculative-num-draft-tokens": "3",
    "--mem-fraction-static": "0.8",
    "--cuda-graph-max-bs": "64",
    "--max-running-requests": "64",
    "--tp-size": "4",
}
"""The plan's base (``sim_plan_text``'s seed server) with the burst's three values."""


@pytest.fixture
def console(tmux: Tmux, tmp_path: Path) -> Iterator[Tmux]:
    """``specconsole tui PLAN`` at 120×40 in a private tmux server, idle (nothing deployed)."""
    if shutil.which("tmux") is None:
        unavailable("tmux", "the tmux binary is not installed")
    port = free_port()
    plan = tmp_path / "plan.toml"
    plan.write_text(
        sim_plan_text(
            tmp_path / "run", port=port, extra_args=[], sweep=SWEEP, bench=BENCH, name="keys"
        )
    )
    home = tmp_path / "home"
    home.mkdir()
    specconsole = Path(sys.executable).parent / "specconsole"
    # pytest's workers export COLUMNS=80 LINES=24, which tmux hands on to the pane's command
    # and Textual prefers to the terminal's own size: unset, the console is really 120×40.
    command = (
        f"env -u COLUMNS -u LINES HOME={home} TERM=tmux-256color {specconsole} tui {plan} "
        f"--session {tmp_path / 'sessions'}; echo TUI-EXIT=$?; sleep 60"
    )
    tmux.run("new-session", "-d", "-s", "demo", "-x", str(COLUMNS), "-y", str(ROWS), command)
    screen = tmux.wait_for(r"\? help", START_WAIT_S)
    widest = max(len(line.rstrip()) for line in screen.splitlines())
    assert widest > 100, f"the console is not drawn at {COLUMNS} columns:\n{screen}"
    yield tmux
    stop_sims(port)


def _settled(tmux: Tmux) -> str:
    """The screen once it stopped changing for 0.6 s (bounded)."""
    deadline = time.monotonic() + SETTLE_WAIT_S
    last = tmux.screen()
    while time.monotonic() < deadline:
        time.sleep(0.6)
        now = tmux.screen()
        if now == last:
            return now
        last = now
    return last


def _would_deploy(screen: str) -> dict[str, str] | str:
    """The editor's side panel read back: each ``--flag: value`` it would deploy, or the
    panel's text when it names no configuration (a field does not parse)."""
    panel = " ".join(
        line.split("││", 1)[1].rstrip().rstrip("│").strip()
        for line in screen.splitlines()
        if "││" in line
    )
    found = dict(re.findall(r"(--[a-z0-9-]+): (\S+)", panel))
    return found or panel


def _open_editor(tmux: Tmux) -> None:
    tmux.run("send-keys", "-t", "demo", "e")
    tmux.wait_for(r"Diff against deployed", 10.0)
    time.sleep(0.3)  # the form's first check is drawn


def _close_editor(tmux: Tmux) -> None:
    tmux.run("send-keys", "-t", "demo", "Escape")
    screen = tmux.wait_for(r"Discard your edits\?|\? help", 10.0)
    if "Discard your edits?" in screen:
        tmux.run("send-keys", "-t", "demo", "y")
    deadline = time.monotonic() + 10.0
    while "Diff against deployed" in tmux.screen() and time.monotonic() < deadline:
        time.sleep(0.2)


def _send(tmux: Tmux, gap_ms: int | str | None) -> None:
    if gap_ms == "with-e":  # ``e`` opens the editor in the same write as the burst
        tmux.run("send-keys", "-t", "demo", "e", *BURST)
        tmux.wait_for(r"Diff against deployed", 10.0)
        return
    if gap_ms is None:
        tmux.run("send-keys", "-t", "demo", *BURST)
        return
    assert isinstance(gap_ms, int)
    for key in BURST:
        tmux.run("send-keys", "-t", "demo", key)
        if gap_ms:
            time.sleep(gap_ms / 1000)


@pytest.mark.parametrize(
    "gap_ms",
    [None, 0, 20, 80, "with-e"],
    ids=["one-call", "0ms", "20ms", "80ms", "e-in-the-call"],
)
def test_a_burst_lands_in_the_fields_it_was_typed_into(
    console: Tmux, gap_ms: int | str | None
) -> None:
    tmux = console
    wrong: list[str] = []
    for attempt in range(TRIES):
        if gap_ms != "with-e":
            _open_editor(tmux)
        _send(tmux, gap_ms)
        screen = _settled(tmux)
        got = _would_deploy(screen)
        if got != INTENDED:
            wrong.append(f"try {attempt + 1}: {got}\n{screen}")
        _close_editor(tmux)
    print(
        f"editor burst, gap {gap_ms if gap_ms is not None else 'one call'}: "
        f"{TRIES - len(wrong)} of {TRIES} exact"
    )
    assert not wrong, "\n".join(wrong[:2])


def test_a_bracketed_paste_lands_in_the_focused_field(console: Tmux) -> None:
    tmux = console
    _open_editor(tmux)
    tmux.run("send-keys", "-t", "demo", "Tab", "C-a", "C-k", "2", "Tab", "Tab", "C-a", "C-k", "3")
    tmux.run("send-keys", "-t", "demo", "Tab", "C-a", "C-k")
    tmux.run("set-buffer", "-b", "value", "0.8")
    tmux.run("paste-buffer", "-p", "-b", "value", "-t", "demo")  # bracketed: the app asked
    got = _would_deploy(_settled(tmux))
    assert got == INTENDED, got
    _close_editor(tmux)
