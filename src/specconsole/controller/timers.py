"""The machine's timers (the load timeout, a steady window's end): one per key, on the loop.

Why its own small class: a timer the machine asks for replaces the one under the same key,
can be cancelled by key, and must all be cancelled when the run ends — never a fixed sleep.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["Timers"]


class Timers:
    """Timers by key on the running loop."""

    def __init__(self) -> None:
        self._handles: dict[str, asyncio.TimerHandle] = {}

    def start(self, key: str, seconds: float, fire: Callable[[], None]) -> None:
        """Call ``fire`` after ``seconds``, replacing the timer ``key`` had."""
        self.cancel(key)
        self._handles[key] = asyncio.get_running_loop().call_later(seconds, fire)

    def cancel(self, key: str) -> None:
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def cancel_all(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()
