"""Every effect type the machine can emit is emitted somewhere and performed by the runtime.

The effect classes are enumerated from ``core.machine.effects.Effect``'s subclasses, so a new effect
cannot escape: it fails here until ``core/machine`` emits it and ``Controller._perform``
handles it (the runtime's fallback branch would raise ``TypeError`` at run time).
"""

from __future__ import annotations

import ast
import inspect
import pathlib

from specconsole.controller.runtime import Controller
from specconsole.core import machine
from specconsole.core.machine import effects as fx


def _effect_types() -> set[str]:
    out: set[str] = set()
    todo = list(fx.Effect.__subclasses__())
    while todo:
        sub = todo.pop()
        if getattr(fx, sub.__name__, None) is sub:  # not the pre-``slots=True`` copy
            out.add(sub.__name__)
        todo.extend(sub.__subclasses__())
    return out


def _fx_names(tree: ast.AST, *, calls: bool) -> set[str]:
    """Names ``X`` of ``fx.X(...)`` calls (or of any ``fx.X`` reference)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        target = node.func if calls and isinstance(node, ast.Call) else node
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "fx"
        ):
            found.add(target.attr)
    return found


def test_effect_types_are_enumerated() -> None:
    names = _effect_types()
    assert {"Validate", "Deploy", "RunBenchmark", "RecordTrial", "Shutdown"} <= names
    assert "Effect" not in names


def test_the_runtime_performs_every_effect_type() -> None:
    source = inspect.getsource(Controller._perform)
    tree = ast.parse(inspect.cleandoc("\n" + source))
    handled = _fx_names(tree, calls=False)
    missing = _effect_types() - handled
    assert not missing, f"Controller._perform does not handle {sorted(missing)}"


def test_the_machine_emits_every_effect_type() -> None:
    emitted: set[str] = set()
    for path in pathlib.Path(machine.__file__).parent.rglob("*.py"):
        emitted |= _fx_names(ast.parse(path.read_text("utf-8")), calls=True)
    never = _effect_types() - emitted
    assert not never, f"core/machine never emits {sorted(never)} (dead effect types)"
