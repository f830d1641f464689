"""The seam between the product and the inference servers it tunes.

Everything that is true of one server and no other — its flags per release, its rules, its
log grammar, its endpoints, its editor fields — lives in that engine's package under
``specconsole/engines/``; everything else asks for an engine through this package and works
with the :class:`~.protocol.Engine` it gets, never with an engine's name.

* :mod:`.protocol` — what an engine must provide (the protocol and its data parts);
* :mod:`.registry` — how engines are found: the ``specconsole.engines`` entry-point group
  (one line in a package's ``pyproject.toml`` registers an engine, ours or a third party's),
  looked up by name or for a configuration.

The core never imports an engine package (an import-linter contract); engines are found at
run time, the way harlequin finds its database adapters.
"""

from __future__ import annotations

from .protocol import Engine
from .registry import (
    EngineNotFound,
    default_engine,
    engine_for,
    engine_names,
    get_engine,
    register,
    registered,
    unregister,
)

__all__ = [
    "Engine",
    "EngineNotFound",
    "default_engine",
    "engine_for",
    "engine_names",
    "get_engine",
    "register",
    "registered",
    "unregister",
]
