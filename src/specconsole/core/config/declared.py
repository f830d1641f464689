"""An engine's declared ``[server]`` keys, looked up by the engine's name.

Why its own module: every reader of a ``[server]`` table — the table itself
(:mod:`.model`), validation, the plan schema, labels — asks the same questions of the
registered engine's declarations (``Engine.option_fields``): its keys by name, the names that
read as one (aliases, former names), their bounds, the notice a former name gets, the
mappings it declares beside them (``retired_keys``, ``foreign_keys``). The answers are cached
per registered engine object, so a test that registers an engine of its own is answered for
it too.
"""

from __future__ import annotations

from collections.abc import Mapping

from specconsole.core.config.issues import Issue, Severity
from specconsole.core.config.options import OptionField
from specconsole.core.engine.registry import EngineNotFound, get_engine

__all__ = [
    "deprecation",
    "engine_attr",
    "engine_title",
    "key_limits",
    "key_names",
    "option_fields",
]

_FIELDS_CACHE: dict[str, tuple[object, dict[str, OptionField], dict[str, str]]] = {}


def _declared(engine: str) -> tuple[dict[str, OptionField], dict[str, str]]:
    """The engine's keys by name, and every name that reads as one (aliases and former
    names included) -> its key; cached per registered engine object."""
    try:
        obj = get_engine(str(engine))
    except EngineNotFound:
        return {}, {}
    cached = _FIELDS_CACHE.get(engine)
    if cached is None or cached[0] is not obj:
        own = {f.name: f for f in obj.option_fields}
        names = {n: f.name for f in obj.option_fields for n in reversed(f.names)}
        cached = (obj, own, names)
        _FIELDS_CACHE[engine] = cached
    return cached[1], cached[2]


def option_fields(engine: str) -> dict[str, OptionField]:
    """The engine's own ``[server]`` keys by name (none for an engine that is not registered:
    validation names that engine)."""
    return _declared(engine)[0]


def key_names(engine: str) -> dict[str, str]:
    """Every name that reads as one of ``engine``'s keys (its aliases and former names
    too) -> that key."""
    return _declared(engine)[1]


def key_limits(engine: str) -> dict[str, int]:
    """The upper bound of each of ``engine``'s integer keys that has one."""
    return {
        name: int(f.maximum)
        for name, f in option_fields(engine).items()
        if f.kind == "int" and f.maximum is not None
    }


def deprecation(engine: str, former: str, key: str, table: str = "") -> Issue:
    """The notice for a former key name read as ``key``; ``table`` (``[sweep.axes]``) where
    the name is not a ``[server]`` key, so a plan writing it in both gets two notices that
    say which is which."""
    title = engine_title(engine)
    written = f"{table} {former}" if table else former
    return Issue(
        former,
        Severity.WARNING,
        f"{written} is specconsole's former name for {title}'s {key}: it is read as {key}.",
        f"write {key} instead (the former name will stop being read).",
    )


def engine_title(engine: str) -> str:
    try:
        return get_engine(str(engine)).title
    except EngineNotFound:
        return str(engine)


def engine_attr(engine: str, name: str) -> Mapping[str, str]:
    """An optional mapping the engine declares (``retired_keys``, ``foreign_keys``)."""
    try:
        return getattr(get_engine(str(engine)), name, {})
    except EngineNotFound:
        return {}
