"""The layering rules, enforced: a pure core and a UI that is the only Textual user.

Two independent checks: import-linter's contracts from pyproject.toml (static, every import
statement), and a runtime check that importing the modules in a fresh interpreter does not
pull the forbidden libraries into ``sys.modules`` (catches indirect imports too).
"""

from __future__ import annotations

import json
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import specconsole

PACKAGE_DIR = Path(specconsole.__file__).parent
REPO = PACKAGE_DIR.parent.parent


def _modules(prefix: str) -> list[str]:
    """All importable module names under ``specconsole.<prefix>`` (or the whole package)."""
    root = PACKAGE_DIR / prefix if prefix else PACKAGE_DIR
    base = f"specconsole.{prefix}." if prefix else "specconsole."
    names = [base.rstrip(".")]
    for info in pkgutil.walk_packages([str(root)], prefix=base):
        if info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return names


def _loaded_after_importing(modules: list[str], watched: list[str]) -> list[str]:
    """Import ``modules`` in a fresh interpreter and return which ``watched`` got loaded."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(json.dumps(sorted(w for w in {watched!r} if w in sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_import_linter_contracts_hold() -> None:
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint_imports, "import-linter is a dev dependency; run make test"
    result = subprocess.run(
        [lint_imports], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_core_imports_no_ui_ssh_or_http_library() -> None:
    core = _modules("core")
    assert len(core) > 1
    loaded = _loaded_after_importing(core, ["textual", "asyncssh", "httpx", "rich"])
    assert loaded == [], f"specconsole.core pulled in {loaded}"


def test_only_the_ui_imports_textual() -> None:
    outside_ui = [
        name
        for name in _modules("")
        if not (name == "specconsole.ui" or name.startswith("specconsole.ui."))
    ]
    loaded = _loaded_after_importing(outside_ui, ["textual", "textual_plotext"])
    assert loaded == [], f"a module outside specconsole.ui pulled in {loaded}"


def test_present_imports_no_textual_or_rich() -> None:
    present = _modules("present")
    assert len(present) > 1
    loaded = _loaded_after_importing(present, ["textual", "rich", "asyncssh", "httpx"])
    assert loaded == [], f"specconsole.present pulled in {loaded}"
