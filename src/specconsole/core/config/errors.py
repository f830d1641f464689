"""The one error a configuration raises when it cannot be read: it names the key and the fix.

Why its own module: the ``[server]`` model, the engine-specific keys (:mod:`.options`) and
every command-line reader raise it, and none of them should have to import the others for it.
"""

from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A configuration cannot be read; names the key and says how to fix it."""

    def __init__(self, key: str, message: str, fix: str) -> None:
        self.key = key
        self.message = message
        self.fix = fix
        super().__init__(f"{key}: {message} Fix: {fix}")
