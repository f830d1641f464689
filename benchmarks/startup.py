"""Cold start of the console to its first frame; prints the median and worst of N runs.

Why: the console is opened over SSH inside tmux many times a day; it must appear at once
(target < 1 s). Each run is a fresh interpreter (nothing cached in memory; the OS file cache
is warm after the first, as it is for users). The clock starts just before the interpreter
is launched and stops when the app's first screen has been composed and painted (headless,
so terminal speed is excluded), measured by the child and printed.

    .venv/bin/python benchmarks/startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CHILD = r"""
import sys, time
t0 = float(sys.argv[1])
from specconsole.core.machine.state import ControllerState
from specconsole.ui.app import make_app

class Idle:
    state = ControllerState()
    def subscribe(self, callback):
        return lambda: None
    def send(self, event):
        pass

app = make_app(Idle(), theme="dark", tick_interval=None)
imported = time.time() - t0

async def first_frame(pilot):
    await pilot.pause()  # the first screen is mounted and a refresh has been processed
    print(f"{time.time() - t0:.4f} {imported:.4f}", flush=True)
    pilot.app.exit()

app.run(headless=True, size=(120, 40), auto_pilot=first_frame)
"""


def one_run() -> tuple[float, float]:
    start = time.time()
    result = subprocess.run(
        [sys.executable, "-c", CHILD, repr(start)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    first, imported = (float(x) for x in result.stdout.split()[-2:])
    return first, imported


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    one_run()  # warm the OS file cache, as a user's second start would be
    runs = [one_run() for _ in range(args.runs)]
    firsts = [r[0] for r in runs]
    imports = [r[1] for r in runs]
    print(
        f"cold start to first frame: median {statistics.median(firsts) * 1000:.0f} ms, "
        f"worst {max(firsts) * 1000:.0f} ms over {args.runs} runs (target < 1000 ms)"
    )
    median_imports = statistics.median(imports) * 1000
    print(f"  of which interpreter start + imports: median {median_imports:.0f} ms")


if __name__ == "__main__":
    main()
