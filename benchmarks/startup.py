"""Cold start of the console to its first frame, beside a bare Textual app's in the same run.

Why: the console is opened over SSH inside tmux many times a day; it must appear at once
(target ≤ 350 ms, issue 26). Each run is a fresh interpreter (nothing cached in memory; the OS
file cache is warm after the first, as it is for users). The clock starts just before the
interpreter is launched (headless, so terminal speed is excluded) and the child prints:

* **first frame**: Textual's ``Ready`` event — "sent to the App when the DOM is ready and the
  first frame has been displayed" — the console's screen with its panes, header and keys;
* **settled**: the first ``pilot.pause()`` returning — every pending message processed, and
  the process idle by Textual's own wait (CPU time against wall time, sleeping in steps while
  it watches, so this figure carries some tens of milliseconds of that watching). Figures
  documented before 2026-12-06 are this one.

Bytecode is cached, as it is for a user: ``pip install`` compiles every module, and an
editable checkout writes ``__pycache__`` on its first start. The cache lives in a temporary
``-X pycache_prefix`` (the checkout is not touched) and the first, unmeasured run fills it;
``PYTHONDONTWRITEBYTECODE`` in the environment (set on some build machines, and on the one
that measured the figures documented before 2026-12-06) is ignored: without a cache every
start compiles all of specconsole's modules again, some 120 ms here, which no installed
console pays.

The console is measured twice: as the command line starts it (Python's collector held until
the first frame, ``specconsole.startup.collection``), and without that hold, so every run
shows what the hold is worth. Nothing is cached per user: the first start after an install
is every start.

The peer is Textual itself: the same harness starts an app with one ``Static``, the least any
Textual console can pay here, so the figures read as "ours against the floor" on this machine.
The variants are taken in turns, one run of each and then again, so a burst of load on the
machine touches them alike.

    .venv/bin/python benchmarks/startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

HARNESS = r"""
import sys, time
t0 = float(sys.argv[1])
{imports}
imported = time.time() - t0
first = []

def on_ready(self):  # Textual: the DOM is ready and the first frame has been displayed
    first.append(time.time() - t0)

type(app).on_ready = on_ready

async def settled(pilot):
    await pilot.pause()  # every pending message processed and the process idle
    print(f"{{first[0]:.4f}} {{time.time() - t0:.4f}} {{imported:.4f}}", flush=True)
    pilot.app.exit()

app.run(headless=True, size=(120, 40), auto_pilot=settled)
"""

HOLD = r"""
from specconsole.startup import hold_collection
hold_collection()  # as the console's entry point does (released at the first frame)
"""

ENTRY = HOLD
"""What ``specconsole.cli.main`` does before its first import."""

CONSOLE_APP = r"""
from specconsole.core.machine.state import ControllerState
from specconsole.ui.app import make_app

class Idle:
    state = ControllerState()
    def subscribe(self, callback):
        return lambda: None
    def send(self, event):
        pass

app = make_app(Idle(), theme="dark", tick_interval=None)
"""

CONSOLE = HARNESS.format(imports=ENTRY + CONSOLE_APP)

CONSOLE_COLLECTING = HARNESS.format(imports=CONSOLE_APP)
"""The console with Python's collector running through its start (as a test or an embedding
starts it): beside the console's row, what holding the collector saves."""

DEMO_APP = r"""
import atexit, shutil, tempfile
from pathlib import Path
from specconsole.cli import build_parser
build_parser()
from specconsole.commands.tui import demo_plan
from specconsole.controller.console import ConsoleController
from specconsole.controller.localplan import resolve_local_placeholders
from specconsole.core.machine.state import ControllerState
from specconsole.session.store import Session
from specconsole.ui.app import make_app

plan = resolve_local_placeholders(demo_plan())
parent = tempfile.mkdtemp(prefix="startup-session-")
atexit.register(shutil.rmtree, parent, True)
session = Session.create(Path(parent), plan)
controller = ConsoleController(plan, session, ControllerState(plan=plan), isolate_load=True)
app = make_app(controller, theme="dark", tick_interval=None, box=controller)
"""

DEMO_PATH = HARNESS.format(imports=ENTRY + DEMO_APP)
"""The demo's own start path: the parser, the demo plan read and validated, a session, the
console's handle on its controller (``controller.console``: wired by the controller worker
right after the first frame, which this harness does not start, so nothing is deployed) and
the console with that plan — what ``specconsole demo`` does before its first frame, less the
simulator it launches in a process of its own."""

BARE_TEXTUAL = HARNESS.format(
    imports=r"""
from textual.app import App
from textual.widgets import Static

class Bare(App):
    def compose(self):
        yield Static("specconsole")

app = Bare()
"""
)


LOADED = r"""
import dataclasses, sys
{imports}
loaded = []

def on_ready(self):  # the first frame is up: what has specconsole loaded for it?
    own = [m for name, m in list(sys.modules.items()) if name.startswith("specconsole")]
    records = {{
        c
        for m in own
        for c in vars(m).values()
        if isinstance(c, type) and c.__module__ == m.__name__ and dataclasses.is_dataclass(c)
    }}
    loaded.extend((len(own), len(records)))
    self.exit()

type(app).on_ready = on_ready
app.run(headless=True, size=(120, 40))
print(*loaded)
"""
"""Counts, at the first frame, specconsole's modules imported and the record types
(dataclasses) they created: what the time above is spent on."""


def loaded_at_first_frame(imports: str) -> tuple[int, int]:
    """(specconsole modules imported, record types created) once the first frame is up."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED.format(imports=imports)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    modules, records = (int(x) for x in done.stdout.split()[-2:])
    return modules, records


class Start(NamedTuple):
    """One start's times from the interpreter's launch, in seconds."""

    first: float
    settled: float
    imported: float


def one_run(code: str, env: dict[str, str], prefix: str) -> Start:
    start = time.time()
    result = subprocess.run(
        [sys.executable, "-X", f"pycache_prefix={prefix}", "-c", code, repr(start)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=env,
    )
    return Start(*(float(x) for x in result.stdout.split()[-3:]))


def measure(codes: list[str], runs: int) -> list[list[Start]]:
    """``runs`` starts of each of ``codes``, taken in turns (one of each, then again) so a
    burst of load on the machine touches every variant alike; each variant has its own
    bytecode cache, filled by one unmeasured warm-up run (which also warms the OS file
    cache)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="startup-") as scratch:
        env["SPECCONSOLE_HOME"] = str(Path(scratch) / "home")  # nothing lands in the user's
        prefixes = []
        for index, code in enumerate(codes):
            prefix = str(Path(scratch) / f"pycache-{index}")
            one_run(code, env, prefix)
            prefixes.append(prefix)
        starts: list[list[Start]] = [[] for _ in codes]
        for _ in range(runs):
            for index, code in enumerate(codes):
                starts[index].append(one_run(code, env, prefixes[index]))
        return starts


def median_ms(starts: list[Start], field: str) -> float:
    return statistics.median(getattr(s, field) for s in starts) * 1000


def line(name: str, starts: list[Start]) -> str:
    worst = max(s.first for s in starts) * 1000
    return (
        f"{name}: first frame median {median_ms(starts, 'first'):.0f} ms (worst {worst:.0f}), "
        f"settled {median_ms(starts, 'settled'):.0f} ms, "
        f"interpreter + imports {median_ms(starts, 'imported'):.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    console, collecting, demo, bare = measure(
        [CONSOLE, CONSOLE_COLLECTING, DEMO_PATH, BARE_TEXTUAL], args.runs
    )
    print(f"cold start over {args.runs} runs each (target: first frame ≤ 350 ms)")
    print(line("  the console", console))
    print(line("  the console, collector not held", collecting))
    print(line("  the demo's start path (plan, session, controller wired)", demo))
    print(line("  a bare Textual app (one Static)", bare))
    ratio = median_ms(console, "first") / median_ms(bare, "first")
    print(f"  the console's first frame is {ratio:.2f}× the bare app's")
    for name, app in (("the console", CONSOLE_APP), ("the demo's start path", DEMO_APP)):
        modules, records = loaded_at_first_frame(app)
        print(
            f"  at its first frame {name} has imported {modules} of specconsole's modules, "
            f"which created {records} record types (dataclasses)"
        )


if __name__ == "__main__":
    main()
