"""The load generator's event loop: uvloop when it can be imported, asyncio's otherwise.

Why: at c = 64 most of a streamed read's cost that is not parsing is the event loop's own —
the selector, the handle, the transport's read path — and uvloop does that part in C
(measured by ``benchmarks/loadgen_overhead.py``: about 12–15 % less CPU per streamed token).
The console host has it (a dependency); a GPU box running SGLang has it too (SGLang depends
on it), and the self-contained remote runner uses it there when it imports; a bare Python
falls back to asyncio's loop with the same behaviour. Timestamps never come from the loop
(the engine reads ``time.perf_counter``), so the choice changes no figure, only its cost.

Standard library only (bundled into the remote runner); uvloop is imported lazily.
"""

from __future__ import annotations

import asyncio


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A fresh event loop for one benchmark run (uvloop's when importable)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """``uvloop`` or ``asyncio``: which loop measured, for the run's settings."""
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"
