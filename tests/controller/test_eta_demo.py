"""The operator's glance on the demo plan, run headless against the simulator's processes (a
fixed load time, ``--sim-load-seconds 1.0``): after two trials the ETA is within ±20 % of the
sweep's actual end, and the current best shown equals the report's best at every moment it
is shown.

A test of the estimate, not of speed: the ETA printed after trial 2 is compared with the
time the sweep then really took (both read from the same printed elapsed clock), whatever
the machine's pace; the best is compared with the JSON report of the trials recorded by then.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from specconsole.cli import main
from specconsole.session.reports.report import render
from specconsole.session.store import Session
from tests.session.test_report_resolved import DEMO, REPO

pytestmark = pytest.mark.slow

SWEEP_TIMEOUT_S = 600.0
SWEEP = (sys.executable, "-m", "specconsole", "sweep")
GLANCE = re.compile(
    r"elapsed (?P<elapsed>\d+:\d\d(?::\d\d)?)(?: · ETA (?P<eta>\S+) \((?P<left>\d+)\+? trials? left"
    r"[^)]*\))? · (?P<best>best(?: #(?P<trial>\d+) .*|: none yet))$"
)
SUMMARY = re.compile(r"\] trial (?P<n>\d+) .*: (ok|crashed|pruned|failed|infeasible)")


def _seconds(clock: str) -> int:
    parts = [int(p) for p in clock.split(":")]
    total = 0
    for part in parts:
        total = total * 60 + part
    return total


def test_the_demo_eta_after_two_trials_and_the_best_at_every_moment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = tmp_path / "sessions"
    run = subprocess.run(
        [*SWEEP, str(DEMO), "--headless", "--session", str(sessions)],
        capture_output=True,
        text=True,
        timeout=SWEEP_TIMEOUT_S,
        check=False,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (folder,) = [p for p in sessions.iterdir() if p.is_dir()]
    trials = Session.open(folder).load_trials()
    recorded = 0
    seen: list[tuple[int, re.Match[str]]] = []  # (trials recorded, glance)
    for line in run.stdout.splitlines():
        if (summary := SUMMARY.search(line)) is not None:
            recorded = int(summary["n"])
        elif line.startswith("[") and (glance := GLANCE.search(line)) is not None:
            seen.append((recorded, glance))
    # the printer's glance: at the start and after each trial (the report repeats the last)
    assert [n for n, _g in seen] == list(range(len(trials) + 1))
    end = _seconds(seen[-1][1]["elapsed"])
    assert seen[-1][1]["eta"] is None  # finished: no ETA any more

    after_two = seen[2][1]
    now, eta = _seconds(after_two["elapsed"]), _seconds(after_two["eta"])
    actual = end - now
    assert abs(eta - actual) <= 0.2 * actual, (eta, actual, after_two.group(0))

    plan = Session.open(folder).load_plan()
    for n, glance in seen:  # the report of the trials recorded when the line was printed
        doc = json.loads(render(trials[:n], plan, "json"))
        shown = None if glance["trial"] is None else int(glance["trial"])
        expected = None if doc["best"] is None else doc["best"]["trial"]
        assert shown == expected, (n, glance.group(0), doc["best"])
    assert main(["report", str(folder), "--format", "json"]) == 0
    final = json.loads(capsys.readouterr().out)["best"]
    assert final["trial"] == int(seen[-1][1]["trial"])
