"""Start-up pays only for what it uses: heavy libraries stay off the console's start path.

Why: the console opens many times a day over SSH inside tmux; Optuna and NumPy once cost 170
ms of every start although only ``strategy = "optimize"`` uses them. This checks, in a fresh
interpreter, which modules the real start path imports — the CLI's parser, the demo plan, the
controller wired to the box (local transport) and the console app — and that a heavy library
arrives only with the feature that needs it. The time itself is benchmarks/startup.py's figure
(never a timed test).
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
from specconsole.controller.localplan import resolve_local_placeholders
from specconsole.controller.wiring import wire_controller
from specconsole.core.machine.state import ControllerState
from specconsole.session.store import Session
from specconsole.ui.app import make_app
plan = resolve_local_placeholders(demo_plan())
session = Session.create(Path(tempfile.mkdtemp()), plan)
wired = wire_controller(plan, session, ControllerState(plan=plan))
make_app(wired.controller, theme="dark", tick_interval=None)
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
