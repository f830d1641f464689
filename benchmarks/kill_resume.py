"""Kill -9 at random moments of the demo sweep, resume after each, and count what went wrong.

Prints (targets 0 / 0 / 0 / 0):

* lost trials: records seen in ``trials.jsonl`` before a kill that are gone afterwards;
* duplicates: configurations recorded more than once in the final ``trials.jsonl``;
* false crashes: configurations recorded ``crashed`` that the uninterrupted baseline sweep
  ran ``ok``;
* wrong final statuses: a final session status other than ``done``, or a configuration
  whose final status differs from the baseline's;

and the mean time from starting ``specconsole resume`` to its next trial starting.

The plan is ``examples/demo-sweep.toml`` (the simulated box on this machine), with its
benchmark shortened (``--quick``, the default: ladder 1/4/16, 0.3 s levels, 0.3 s loads) so
30 kills fit in a few minutes. Each kill is a SIGKILL of the whole headless run (the demo's
simulator goes with it: it watches its parent). Run:
``.venv/bin/python benchmarks/kill_resume.py [--kills 30] [--seed 1] [--full]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo-sweep.toml"


def quick_plan(text: str, run_dir: Path) -> str:
    text = text.replace("ladder = [1, 4, 16, 32, 64]", "ladder = [1, 4, 16]")
    text = text.replace("window_s = 1.5", "window_s = 0.3")
    text = text.replace('"--sim-load-seconds", "1.0"', '"--sim-load-seconds", "0.3"')
    return re.sub(r'run_dir = "[^"]*"', f'run_dir = "{run_dir}/run-{{port}}"', text)


_TRIAL = re.compile(r"trial \d+/\d+ .*: validating")

FIRST_TRIAL: dict[int, float] = {}
"""PID -> monotonic time its first trial started (a reader thread stamps lines as they come)."""


def start(*args: str) -> tuple[subprocess.Popen[str], float]:
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "specconsole", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        start_new_session=True,
    )

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if proc.pid not in FIRST_TRIAL and _TRIAL.search(line):
                FIRST_TRIAL[proc.pid] = time.monotonic()

    threading.Thread(target=read, daemon=True).start()
    return proc, t0


def records(session: Path) -> list[dict[str, object]]:
    path = session / "trials.jsonl"
    out = []
    for line in path.read_bytes().splitlines() if path.exists() else []:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a torn last line: resume moves it aside
    return out


def key(record: dict[str, object]) -> str:
    config = dict(record["config"])  # type: ignore[arg-type]
    config.pop("port", None)
    return json.dumps(config, sort_keys=True)


def statuses(session: Path) -> dict[str, str]:
    return {key(r): str(r["status"]) for r in records(session)}


def final_status(session: Path) -> str:
    try:
        return str(tomllib.loads((session / "session.toml").read_text())["session"]["status"])
    except (OSError, ValueError, KeyError):
        return "?"


def session_of(parent: Path) -> Path | None:
    if not parent.is_dir():  # killed before the session folder was made
        return None
    found = [p for p in parent.iterdir() if (p / "session.toml").is_file()]
    return found[0] if found else None


def run_to_end(args: list[str], timeout: float = 600) -> str:
    proc, _ = start(*args)
    proc.wait(timeout=timeout)
    return ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--full", action="store_true", help="the demo plan's own benchmark")
    opts = ap.parse_args()
    rng = random.Random(opts.seed)
    work = Path(tempfile.mkdtemp(prefix="kill-resume-"))
    text = DEMO.read_text()
    plan = work / "plan.toml"
    plan.write_text(text if opts.full else quick_plan(text, work))
    # the plan's dataset is "jsonl:{plan_dir}/demo-prompts.jsonl": it travels with the plan
    shutil.copy(DEMO.parent / "demo-prompts.jsonl", work)

    base_parent = work / "baseline"
    t0 = time.monotonic()
    run_to_end(["sweep", str(plan), "--headless", "--session", str(base_parent)])
    baseline_s = time.monotonic() - t0
    base_session = session_of(base_parent)
    assert base_session is not None
    baseline = statuses(base_session)
    status = final_status(base_session)
    print(f"baseline: {len(baseline)} trials in {baseline_s:.1f} s, status {status}")

    parent = work / "killed"
    proc, _ = start("sweep", str(plan), "--headless", "--session", str(parent))
    session: Path | None = None
    seen: dict[str, dict[str, object]] = {}
    lost = kills = 0
    to_next: list[float] = []
    deadline = time.monotonic() + 1800
    resumed_at: float | None = None
    while kills < opts.kills and time.monotonic() < deadline:
        wait = rng.uniform(0.2, max(0.5, baseline_s / max(len(baseline), 1)))
        end = time.monotonic() + wait
        while time.monotonic() < end and proc.poll() is None:
            time.sleep(0.02)
        if proc.poll() is not None:  # the sweep finished before this kill: it is complete
            break
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
        if resumed_at is not None and proc.pid in FIRST_TRIAL:
            to_next.append(FIRST_TRIAL[proc.pid] - resumed_at)
        session = session or session_of(parent)
        if session is None:
            proc, _ = start("sweep", str(plan), "--headless", "--session", str(parent))
            resumed_at = None
            continue
        now = {json.dumps(r, sort_keys=True): r for r in records(session)}
        lost += sum(1 for k in seen if k not in now)
        seen.update(now)
        proc, resumed_at = start("resume", str(session))
    proc.wait(timeout=600)
    time.sleep(0.1)
    if resumed_at is not None and proc.pid in FIRST_TRIAL:
        to_next.append(FIRST_TRIAL[proc.pid] - resumed_at)
    if session is None:
        session = session_of(parent)
    assert session is not None
    # finish whatever the last resume left (e.g. it was itself still running)
    if final_status(session) != "done":
        run_to_end(["resume", str(session)])
    final = records(session)
    now_keys = {json.dumps(r, sort_keys=True) for r in final}
    lost += sum(1 for k in seen if k not in now_keys)
    counts: dict[str, int] = {}
    for r in final:
        counts[key(r)] = counts.get(key(r), 0) + 1
    duplicates = sum(n - 1 for n in counts.values())
    got = statuses(session)
    false_crashes = sum(1 for k, s in got.items() if s == "crashed" and baseline.get(k) == "ok")
    wrong = (final_status(session) != "done") + sum(
        1 for k in set(baseline) | set(got) if baseline.get(k) != got.get(k)
    )
    mean = sum(to_next) / len(to_next) if to_next else float("nan")
    print(f"kills: {kills} (seed {opts.seed}); final session status {final_status(session)}")
    print(f"lost trials: {lost}")
    print(f"duplicates: {duplicates}")
    print(f"false crashes: {false_crashes}")
    print(f"wrong final statuses: {wrong}")
    print(f"mean time from resume to the next trial: {mean:.2f} s (over {len(to_next)} resumes)")
    print(f"(work folder: {work})")
    return 0 if (lost, duplicates, false_crashes, wrong) == (0, 0, 0, 0) else 1


if __name__ == "__main__":
    raise SystemExit(main())
