"""A plan made ready to run from this machine: its interpreter, its free port, its folder.

Why apart from the wiring (:mod:`.wiring`): every command that reads a plan resolves these
before anything else (``tui`` and ``demo`` before the console opens, ``sweep``, ``validate``),
and resolving them needs a socket and the interpreter's path, not the controller, its
transports and the session that the wiring brings.
"""

from __future__ import annotations

import socket
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from specconsole.core.plans.placeholders import resolve_placeholders

if TYPE_CHECKING:
    from specconsole.core.plans.plan import SweepPlan

__all__ = ["free_loopback_port", "resolve_local_placeholders"]


def free_loopback_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 right now (the OS's choice for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def resolve_local_placeholders(
    plan: SweepPlan, *, port: int | None = None, plan_dir: Path | None = None
) -> SweepPlan:
    """``plan`` ready to run from this machine: ``{python}`` is this interpreter and an
    ``"auto"`` port ``port`` if given, else a free loopback port (chosen here, before the
    session is created, which records it so ``resume`` reuses it; a port already chosen is
    kept). ``{plan_dir}`` (in ``[bench] dataset``) is ``plan_dir``, the plan file's folder,
    so a plan and its prompt file travel together."""
    values = {"python": sys.executable}
    if plan_dir is not None:
        values["plan_dir"] = str(plan_dir.resolve())
    auto = plan.auto_port
    if auto:
        values["port"] = str(port if port is not None else free_loopback_port())
    plan = resolve_placeholders(plan, values)
    if auto and plan.boxes:  # boxes sharing this machine: a free port each, not port + N
        boxes = tuple(
            replace(b, port=free_loopback_port()) if b.port is not None and b.port < 0 else b
            for b in plan.boxes
        )
        plan = replace(plan, boxes=boxes)
    return plan
