"""The collector held off while the console starts, and what start-up built frozen after.

Why: a start creates tens of thousands of objects that live as long as the process (modules,
classes and the methods ``@dataclass`` generates for them, the stylesheet, the first screen's
widgets), and Python's cyclic collector walks all of them again and again while they are
being made: tens of milliseconds of a start that should feel instant
(``benchmarks/startup.py`` prints the console's start with and without the hold). The
command-line entry calls :func:`hold_collection` before its first import and releases it at
once for every command but the console's; the app calls :func:`release_collection` once its
first frame is on the screen, which moves everything built so far to the permanent
generation (``gc.freeze``: never scanned again, which also keeps later collections of a
console open for hours short) and turns collection back on. Nothing is held when the entry
point did not hold it (tests, embedding).
"""

from __future__ import annotations

import gc

__all__ = ["hold_collection", "release_collection"]

_held = False


def hold_collection() -> None:
    """Turn the cyclic collector off until :func:`release_collection` (start-up only)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def release_collection() -> None:
    """Freeze what start-up built and collect again; a no-op unless :func:`hold_collection`
    held the collector (so it never turns on one that someone else turned off)."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
