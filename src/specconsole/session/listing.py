"""``specconsole sessions``: the session folders under a parent, newest first.

Why apart from the session (:mod:`.store`): listing reads many folders and must survive
every damaged one (an unreadable ``session.toml`` lists as ``unreadable``, a damaged
``trials.jsonl`` as ``damaged``), never stopping at the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specconsole.session.files import SessionError
from specconsole.session.store import Session

__all__ = ["SessionSummary", "list_sessions"]


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One line of ``specconsole sessions``."""

    path: Path
    name: str
    status: str
    trials: int
    updated_at: float | None


def list_sessions(parent: Path) -> list[SessionSummary]:
    """Session folders under ``parent``, most recently updated first."""
    if not parent.is_dir():
        return []
    out: list[SessionSummary] = []
    for child in sorted(parent.iterdir()):
        if not child.is_dir() or not Session.is_session(child):
            continue
        session = Session(child)
        try:
            meta = session.meta_section()
        except SessionError:
            meta = {"status": "unreadable"}
        try:
            trials = len(session.read_lines().records)
        except SessionError:
            trials, meta = 0, {**meta, "status": "damaged"}
        updated = meta.get("updated_at")
        out.append(
            SessionSummary(
                path=child,
                name=str(meta.get("name", "")),
                status=str(meta.get("status", "?")),
                trials=trials,
                updated_at=float(updated) if isinstance(updated, int | float) else None,
            )
        )
    out.sort(key=lambda s: s.updated_at or 0.0, reverse=True)
    return out
