"""The simulator goes with the run that started it.

Why: the demo's "GPU box" is this machine, and the process backend detaches the server (a
``setsid`` wrapper) so a real box's server survives the console. For the simulator that meant
every killed console, headless run or test left a server behind (13 after one round of
tests). The local transport names the process that started the command in
``SPECCONSOLE_PARENT_PID``; the simulator polls that PID and shuts down cleanly (as on
SIGTERM) once it is gone. A real SGLang ignores the variable, and commands reaching a real box
over SSH never carry it, so a real box's server is left as it is. ``python -m specconsole.sim``
started by hand (no variable) runs until stopped.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping

from specconsole.core.ports import PARENT_PID_ENV

POLL_S = 0.5


def parent_pid(environ: Mapping[str, str] = os.environ) -> int | None:
    """The PID to watch, or ``None`` (no variable, or not a usable PID)."""
    raw = environ.get(PARENT_PID_ENV, "")
    return int(raw) if raw.isdigit() and int(raw) > 1 else None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, another user's
    return True


async def watch_parent(pid: int, on_gone: Callable[[], None], *, poll_s: float = POLL_S) -> None:
    """Call ``on_gone`` once ``pid`` no longer exists (polled; cancel to stop watching)."""
    while alive(pid):
        await asyncio.sleep(poll_s)
    on_gone()
