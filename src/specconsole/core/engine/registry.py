"""Finding engines: the ``specconsole.engines`` entry-point group, looked up by name.

Why entry points: an engine is registered by one line in its distribution's
``pyproject.toml`` (``[project.entry-points."specconsole.engines"] NAME = "pkg:ENGINE"``), so
the engines shipped here and a third party's are found the same way, and the core never
imports an engine package (an import-linter contract). Discovery runs once, on the first
lookup; loading is lazy per engine, so a command that only needs SGLang never imports vLLM's
package. :func:`register` adds one by hand (embedding), :func:`registered` for a block (a
test's engine, defined in the test itself).

Which engine a ``[server]`` table without ``engine`` runs is declared by the distribution too,
not here: the ``specconsole.settings`` entry point ``default_engine`` names it
(``"specconsole.engines:DEFAULT_ENGINE"``, a string).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig
    from specconsole.core.engine.protocol import Engine

__all__ = [
    "ENTRY_POINT_GROUP",
    "SETTINGS_GROUP",
    "EngineNotFound",
    "default_engine",
    "engine_for",
    "engine_names",
    "get_engine",
    "register",
    "registered",
    "unregister",
]

ENTRY_POINT_GROUP = "specconsole.engines"
SETTINGS_GROUP = "specconsole.settings"
"""Entry points naming the distribution's settings (``default_engine``: a string)."""

_loaded: dict[str, Engine] = {}
_points: dict[str, Any] | None = None
"""Entry points by name (``importlib.metadata.EntryPoint``), read on the first lookup."""
_default: list[str] = []
"""The default engine's name once read (a stack: :func:`registered` may push one)."""


class EngineNotFound(LookupError):
    """No engine is registered under a name; the message lists those that are."""

    def __init__(self, name: str) -> None:
        known = engine_names()
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        self.name = name
        super().__init__(
            f"no engine {name!r} is registered (known: {', '.join(known) or 'none'}).{hint}"
        )


def _entry_points() -> dict[str, Any]:
    global _points
    if _points is None:
        from importlib import metadata  # ~10 ms: paid on the first lookup, not at import

        _points = {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    return _points


def default_engine() -> str:
    """The engine a configuration runs when it names none: the ``default_engine`` setting of
    the installed distribution, else the first registered engine by name."""
    if not _default:
        from importlib import metadata

        points = {ep.name: ep for ep in metadata.entry_points(group=SETTINGS_GROUP)}
        point = points.get("default_engine")
        name = point.load() if point is not None else None
        if not isinstance(name, str) or not name:
            names = engine_names()
            if not names:
                raise EngineNotFound("(default)")
            name = names[0]
        _default.append(name)
    return _default[-1]


def engine_names() -> tuple[str, ...]:
    """Every registered engine's name, sorted."""
    return tuple(sorted(set(_entry_points()) | set(_loaded)))


def get_engine(name: str) -> Engine:
    """The engine registered as ``name``; raises :class:`EngineNotFound`."""
    engine = _loaded.get(name)
    if engine is not None:
        return engine
    point = _entry_points().get(name)
    if point is None:
        raise EngineNotFound(name)
    engine = point.load()
    if getattr(engine, "name", None) != name:
        raise EngineNotFound(name)  # a broken registration: the object names another engine
    _loaded[name] = engine
    return engine


def engine_for(config: ServerConfig) -> Engine:
    """The engine ``config`` runs (``[server] engine``)."""
    return get_engine(str(config.engine))


def register(engine: Engine) -> None:
    """Add (or replace) an engine by hand, under its own name."""
    _loaded[engine.name] = engine


def unregister(name: str) -> None:
    """Forget an engine added with :func:`register` (entry points stay discoverable)."""
    _loaded.pop(name, None)


@contextmanager
def registered(engine: Engine, *, default: bool = False) -> Iterator[Engine]:
    """``engine`` registered for the block (``default``: as the default engine too), then
    whatever was registered under its name before restored: a test's own engine needs no
    installed entry point."""
    before = _loaded.get(engine.name)
    register(engine)
    if default:
        default_engine()
        _default.append(engine.name)
    try:
        yield engine
    finally:
        if default:
            _default.pop()
        if before is None:
            unregister(engine.name)
        else:
            _loaded[engine.name] = before
