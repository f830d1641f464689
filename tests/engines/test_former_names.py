"""A plan in an engine's former key names still validates, each old name told with its new
one; the shipped examples use no former name.

Why: an engine whose ``[server]`` keys were renamed into its own words (vLLM's, issue 39)
must not break the plans users already have, and must not let them keep the old names
unnoticed. The old plan is built from the engine's own declarations (every key's ``former``
names), so an engine that renames a key later is covered without an edit here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from specconsole.cli import main
from specconsole.core.config.model import option_fields
from specconsole.core.config.options import OptionField
from specconsole.core.engine.registry import engine_names
from specconsole.core.plans.parse import loads_plan
from tests.engines.described import DRAFT, example_value

REPO = Path(__file__).resolve().parents[2]
RENAMING = [name for name in engine_names() if any(f.former for f in option_fields(name).values())]


def _old_value(engine: str, field: OptionField) -> Any:
    return DRAFT if field.kind == "str" else example_value(engine, field.name)


def _old_plan(engine: str) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """An old plan of ``engine``: every key's former name in ``[server]`` at its example, the
    numeric ones swept too; and former -> new name for each table."""
    server: dict[str, Any] = {"engine": engine, "model_path": "/models/target"}
    axes: dict[str, list[Any]] = {}
    in_server: dict[str, str] = {}
    in_axes: dict[str, str] = {}
    for field in option_fields(engine).values():
        for former in field.former:
            server[former] = _old_value(engine, field)
            in_server[former] = field.name
            if field.kind in ("int", "float"):
                axes[former] = [server[former]]
                in_axes[former] = field.name
    plan = {"server": server, "sweep": {"strategy": "grid", "axes": axes}}
    return plan, in_server, in_axes


@pytest.mark.parametrize("engine", RENAMING)
def test_an_old_plan_validates_telling_each_new_key(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan, in_server, in_axes = _old_plan(engine)
    assert in_server and in_axes, plan
    file = tmp_path / "old.toml"
    file.write_text(tomli_w.dumps(plan))
    assert main(["validate", str(file)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"configurations? OK \(0 errors, \d+ warnings?\)", out), out
    warnings = out.split("\nwarning: ")
    for former, key in in_server.items():
        said = [w for w in warnings if f": {former} is specconsole's former name" in w]
        assert len(said) == 1 and f"write {key} instead" in said[0], (former, out)
    for former, key in in_axes.items():
        said = [w for w in warnings if f": [sweep.axes] {former} is" in w]
        assert len(said) == 1 and f"write {key} instead" in said[0], (former, out)


@pytest.mark.parametrize("path", sorted((REPO / "examples").glob("*.toml")), ids=lambda p: p.name)
def test_every_example_uses_its_engines_own_names(path: Path) -> None:
    plan = loads_plan(path.read_text())
    assert plan.notices == (), [n.message for n in plan.notices]
