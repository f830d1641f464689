"""Finding engines: the ``specconsole.engines`` entry-point group, looked up by name.

Why entry points: an engine is registered by one line in its distribution's
``pyproject.toml`` (``[project.entry-points."specconsole.engines"] NAME = "pkg:ENGINE"``), so
the engines shipped here and a third party's are found the same way, and the core never
imports an engine package (an import-linter contract). Discovery runs once, on the first
lookup; loading is lazy per engine, so a command that only needs SGLang never imports vLLM's
package. :func:`register` adds one by hand (tests, embedding).
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig
    from specconsole.core.engine.protocol import Engine

__all__ = [
    "DEFAULT_ENGINE",
    "ENTRY_POINT_GROUP",
    "EngineNotFound",
    "engine_for",
    "engine_names",
    "get_engine",
    "register",
    "unregister",
]

ENTRY_POINT_GROUP = "specconsole.engines"
DEFAULT_ENGINE = "sglang"
"""The engine a configuration runs when it names none (the product was built for it)."""

_loaded: dict[str, Engine] = {}
_points: dict[str, Any] | None = None
"""Entry points by name (``importlib.metadata.EntryPoint``), read on the first lookup."""


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
