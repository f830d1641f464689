"""Service-manager lines (systemd's own messages about the unit): start, stop, exit, OOM kill.

Why it exists: an exit is only a crash when nobody asked for it; systemd's ``Stopping`` /
``Main process exited, code=..., status=...`` lines say which, and a ``Started`` line begins a
new server start (the target/draft order and the fatal-already-reported memory reset).
"""

from __future__ import annotations

from specconsole.core.logs.events import LogEvent, ServiceExited

from .fields import word_after
from .state import ParseState

__all__ = ["on_supervisor", "on_systemd"]


def on_systemd(s: ParseState, body: str, ts: str | None) -> list[LogEvent]:
    if body.startswith(("Stopping ", "Stopped ")):
        s.stopping = True
        return []
    if body.startswith(("Started ", "Starting ")):
        s.reset_start()
        return []
    i = body.find("Main process exited, code=")
    if i >= 0:
        code = word_after(body, "code=") or ""
        status = word_after(body, "status=") or ""
        status = status.rstrip(".")
        expected = s.stopping or status in ("0/SUCCESS", "15/TERM")
        out: list[LogEvent] = [
            ServiceExited(timestamp=ts, code=code, status=status, expected=expected)
        ]
        if not expected:
            out.extend(s.consequence(body, ts, None))
        return out
    if "OOM killer" in body or "oom-kill" in body:
        return s.consequence(body, ts, None)
    return []


_SIGNALS = {"SIGKILL": "9/KILL", "SIGTERM": "15/TERM", "SIGINT": "2/INT", "SIGABRT": "6/ABRT"}


def on_supervisor(s: ParseState, body: str, ts: str | None) -> list[LogEvent]:
    """supervisord's own lines about the program (``spawned:``, ``exited:``, ``stopped:``).

    ``exited: sglang (exit status 1; not expected)`` / ``(terminated by SIGKILL; not
    expected)`` is an unrequested exit; ``stopped:`` and ``...; expected)`` are not.
    """
    if body.startswith("spawned: "):
        s.reset_start()
        return []
    if body.startswith("waiting for ") and body.endswith(" to stop"):
        s.stopping = True
        return []
    if body.startswith(("exited: ", "stopped: ")):
        open_paren = body.find("(")
        detail = body[open_paren + 1 :].rstrip(")") if open_paren > 0 else ""
        why, _, verdict = detail.partition("; ")
        if why.startswith("exit status "):
            code, status = "exited", why[len("exit status ") :]
        elif why.startswith("terminated by "):
            sig = why[len("terminated by ") :]
            code, status = "killed", _SIGNALS.get(sig, sig)
        else:
            code, status = "exited", why
        expected = (
            body.startswith("stopped: ")
            or s.stopping
            or verdict.strip() == "expected"
            or status in ("0", "15/TERM")
        )
        out: list[LogEvent] = [
            ServiceExited(timestamp=ts, code=code, status=status, expected=expected)
        ]
        if not expected:
            out.extend(s.consequence(f"{body} status={status}", ts, None))
        return out
    if body.startswith("gave up: "):
        return s.consequence(body, ts, None)
    return []
