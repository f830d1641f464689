"""Fast positional constructors for the events of an engine's hottest lines.

Why it exists: a busy server logs mostly statistics lines, and building their frozen event
through the dataclass ``__init__`` cost more than matching the line (one
``object.__setattr__`` per field, keyword arguments; ``benchmarks/log_parser.py`` profiled it
as the largest single cost). An engine's grammar builds its statistics events with it
(SGLang's Decode and Prefill lines: ``engines/sglang/logbuild.py``).
:func:`positional_builder` makes a constructor that writes the slots directly through their
descriptors, in one generated function with no loop — the very technique ``dataclasses`` uses
for ``__init__`` — and gives every field it is not passed its declared default. The result is
the same frozen, slotted instance the class's own constructor makes (equal, hashable,
immutable); ``tests/core/test_logparse_build.py`` checks it field by field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["positional_builder"]

E = TypeVar("E")


def positional_builder(cls: type[E], names: tuple[str, ...]) -> Callable[..., E]:
    """``build(v1, v2, ...)`` making ``cls(**dict(zip(names, values)))``, faster.

    ``cls`` must be a slotted dataclass whose fields have plain defaults (no factories) and
    no ``__post_init__``; raises ``TypeError`` otherwise, or for a name it does not have.
    """
    if not dataclasses.is_dataclass(cls) or "__slots__" not in vars(cls):
        raise TypeError(f"{cls.__name__} is not a slotted dataclass")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__ the builder would skip")
    fields = dataclasses.fields(cls)
    known = {f.name for f in fields}
    unknown = [n for n in names if n not in known]
    if unknown or len(set(names)) != len(names):
        raise TypeError(f"{cls.__name__}: bad field names {names!r}")
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    body = ["    o = _new(_cls)"]
    for i, f in enumerate(fields):
        scope[f"_set{i}"] = getattr(cls, f.name).__set__
        if f.name in names:
            value = f"a{names.index(f.name)}"
        elif f.default is not dataclasses.MISSING:
            scope[f"_default{i}"] = f.default
            value = f"_default{i}"
        else:
            raise TypeError(f"{cls.__name__}.{f.name} has no plain default")
        body.append(f"    _set{i}(o, {value})")
    args = ", ".join(f"a{i}" for i in range(len(names)))
    source = f"def build({args}):\n" + "\n".join(body) + "\n    return o\n"
    exec(source, scope)  # generated from field names only, as dataclasses does
    build: Callable[..., E] = scope["build"]
    build.__doc__ = f"{cls.__name__}({', '.join(names)}) by position."
    return build
