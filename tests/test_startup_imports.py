"""Start-up pays only for what it uses: the console's first frame loads what it draws.

Why: the console opens many times a day over SSH inside tmux; Optuna and NumPy once cost 170
ms of every start although only ``strategy = "optimize"`` uses them, and the first frame once
created some 210 of specconsole's record types — the state machine's events and effects, the
log events, the plan's tables — that nothing on it shows. This checks, in a fresh
interpreter, what is imported once the console's first frame is on the screen (Textual's
``Ready``): its screen, the state snapshot's types, the intents its keys send — and not the
machine's table and handlers, the log parser and grammars, plans, search, the engines' rules,
the controller and its adapters, each of which arrives with its first use after that frame.
It also checks the real start path (the CLI's parser, the demo plan, the console's handle on
its controller, the console) for heavy libraries, and that a heavy library arrives only with the
feature that needs it. The time itself is benchmarks/startup.py's figure (never a timed test).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

HEAVY = (
    "optuna",
    "numpy",
    "scipy",
    "matplotlib",
    "asyncssh",
    "uvicorn",
    "starlette",
    "httpx",
    "plotext",
    "textual_plotext",
)
"""Libraries no plain console start needs before its first frame: the simulator's server runs
in its own process; httpx (60 ms with the command-line client it imports when click is
installed) comes with the controller's first request, which starts after the first frame;
plotext with a chart's first data."""

START_PATH = r"""
import json, sys, tempfile
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
session = Session.create(Path(tempfile.mkdtemp()), plan)
controller = ConsoleController(plan, session, ControllerState(plan=plan), isolate_load=True)
make_app(controller, theme="dark", tick_interval=None, box=controller)
print(json.dumps(sorted(m for m in sys.argv[1:] if m in sys.modules)))
"""


def imported(code: str, *modules: str) -> list[str]:
    """Which of ``modules`` a fresh interpreter has imported after running ``code``."""
    done = subprocess.run(
        [sys.executable, "-c", code, *modules],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=True,
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_console_start_path_imports_no_heavy_library() -> None:
    assert imported(START_PATH, *HEAVY) == []


def test_optuna_arrives_with_the_optimize_strategy_only() -> None:
    code = (
        "import json, sys\n"
        "from specconsole.core.search import strategy\n"
        "before = 'optuna' in sys.modules\n"
        "from specconsole.core.search import optimize\n"
        "print(json.dumps([m for m in sys.argv[1:] if m in sys.modules] + "
        "(['before'] if before else [])))\n"
    )
    assert imported(code, "optuna") == ["optuna"]


def test_httpx_arrives_with_the_controllers_first_request_only() -> None:
    code = (
        "import json, sys\n"
        "from specconsole.controller import runtime\n"
        "from specconsole.controller.probe.endpoint import ServerEndpoint\n"
        "before = 'httpx' in sys.modules\n"
        "ServerEndpoint(None, None).open()\n"
        "print(json.dumps([m for m in sys.argv[1:] if m in sys.modules] + "
        "(['before'] if before else [])))\n"
    )
    assert imported(code, "httpx") == ["httpx"]


FIRST_FRAME = r"""
import json, sys
from types import SimpleNamespace
from specconsole.core.machine.state import ControllerState
from specconsole.ui.app import make_app
idle = SimpleNamespace(state=ControllerState(), subscribe=lambda _: lambda: None, send=print)
app = make_app(idle, theme="dark", tick_interval=None)
drawn = []

def on_ready(self):  # Textual: the DOM is ready and the first frame has been displayed
    drawn.extend(sys.modules)
    self.exit()

type(app).on_ready = on_ready
app.run(headless=True, size=(120, 40))
print(json.dumps(sorted(drawn)))
"""

NOT_BEFORE_THE_FIRST_FRAME: dict[str, str] = {
    "specconsole.core.machine.table": "the state machine (step, the transition table)",
    "specconsole.core.machine.handlers": "the state machine's handlers",
    "specconsole.core.machine.events": "the runtime's outcomes (the intents stand alone)",
    "specconsole.core.machine.effects": "the machine's effects",
    "specconsole.core.machine.results": "what the runtime's results mean",
    "specconsole.core.logs.parser": "the log parser",
    "specconsole.core.logs.dialect": "the engines' log grammars, compiled",
    "specconsole.core.logs.grammar": "the log grammars",
    "specconsole.core.logs.events": "the log events (a load stage stands alone)",
    "specconsole.core.plans.parse": "reading plans",
    "specconsole.core.plans.tables": "reading plans' tables",
    "specconsole.core.plans.plan": "the plan's model (its modes stand alone)",
    "specconsole.core.plans.launch": "a trial's launch text",
    "specconsole.core.search.strategy": "the search strategies",
    "specconsole.core.search.per_level": "the per-level search (its schedule)",
    "specconsole.core.search.optimize": "the optimiser",
    "specconsole.core.config.validation": "the engines' rules",
    "specconsole.core.config.render": "rendering a launch",
    "specconsole.core.launch": "unit files, commands and job scripts",
    "specconsole.core.ports": "the transports' contract",
    "specconsole.engines": "an engine package (found through the registry when needed)",
    "specconsole.controller": "the controller (it starts after the first frame)",
    "specconsole.remote": "the box's adapters",
    "specconsole.bench": "load generation",
    "specconsole.session": "sessions and reports",
    "specconsole.sim": "the simulator",
    "specconsole.ui.editing": "the editor (with its first opening)",
    "specconsole.ui.editor_checks": "the editor's checks",
    "specconsole.ui.screens.editor": "the editor's screen",
    "specconsole.ui.linekinds": "the journal's highlighting (with its first line)",
    "importlib.metadata": "the engine registry's entry-point scan",
    **{lib: "a heavy library" for lib in HEAVY},
}
"""What the console's first frame must not have imported (a package stands for its modules),
and what each is."""


def _loaded_under(modules: list[str], package: str) -> list[str]:
    return [m for m in modules if m == package or m.startswith(package + ".")]


def test_the_consoles_first_frame_loads_only_what_it_draws() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FIRST_FRAME],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=True,
    )
    drawn = json.loads(done.stdout.strip().splitlines()[-1])
    assert "specconsole.ui.screens.main" in drawn  # the frame was drawn by the console
    early = {
        f"{package} ({what})": _loaded_under(drawn, package)
        for package, what in NOT_BEFORE_THE_FIRST_FRAME.items()
        if _loaded_under(drawn, package)
    }
    assert early == {}


def test_reading_a_plan_for_the_console_loads_no_controller() -> None:
    """``tui``/``demo`` read and resolve the plan before the console opens: that needs the
    plan's reader and its engine's rules, not the controller, the machine or the box's
    adapters (``controller.localplan`` stands apart from the wiring)."""
    code = (
        "import json, sys\n"
        "from specconsole.commands.tui import demo_plan\n"
        "demo_plan()\n"
        "print(json.dumps(sorted(m for m in sys.argv[1:] if m in sys.modules)))\n"
    )
    heavy = (
        "specconsole.controller.wiring",
        "specconsole.controller.runtime",
        "specconsole.core.machine.table",
        "specconsole.core.logs.parser",
        "specconsole.remote.factory",
        "specconsole.session.store",
    )
    assert imported(code, *heavy) == []


CONSOLE_ONLY = r"""
import json, sys
from types import SimpleNamespace
from specconsole.core.machine.state import ControllerState
from specconsole.ui.app import make_app
idle = SimpleNamespace(state=ControllerState(), subscribe=lambda _: lambda: None, send=print)
make_app(idle, theme="dark", tick_interval=None)
print(json.dumps(sorted(m for m in sys.argv[1:] if m in sys.modules)))
"""


def test_the_consoles_own_modules_do_no_engine_work_at_import() -> None:
    """The console's modules look no engine up while they load: the editor's default fields
    are built when first shown, so the registry's entry-point scan (``importlib.metadata``)
    and the default engine's package wait for the plan that needs them."""
    modules = ("importlib.metadata", "specconsole.engines.sglang", "specconsole.engines.vllm")
    assert imported(CONSOLE_ONLY, *modules) == []
