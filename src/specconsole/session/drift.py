"""The previous session of the same model and engine, and the build each session ran: what
the report's acceptance drift is compared against (``core.measure.drift``).

Why apart from the report: finding it reads many sibling folders that must survive every
damaged one (like ``history``); the report only gets the result. A session's *build* is the
engine's release when one was detected (``[session] engine_version``), else the fingerprint
of the server binary the flag check recorded (``flags/*.json``: the sha256 of llama-server
and its libraries, or a Python package's path and newest source file) — a source build of
llama.cpp says "build 0, commit unknown", so its bytes are its only name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from specconsole.core.measure.trials import TrialRecord
from specconsole.core.plans.plan import SweepPlan
from specconsole.session.files import SessionError
from specconsole.session.listing import list_sessions
from specconsole.session.store import Session

__all__ = ["PreviousSession", "engine_build", "previous_session"]

LOOK_BACK = 20
"""Sibling sessions read at most, newest first."""


@dataclass(frozen=True, slots=True)
class PreviousSession:
    """The session a report compares acceptance with."""

    name: str
    trials: tuple[TrialRecord, ...]
    build: str
    """Its engine build (:func:`engine_build`)."""
    this_build: str
    """The reported session's."""

    @property
    def same_build(self) -> bool:
        return self.build == self.this_build and self.build != "unknown"


def engine_build(session: Session) -> str:
    """The session's engine release, else its server binary's fingerprint, else
    ``unknown``."""
    try:
        version = session.meta_section().get("engine_version")
    except SessionError:
        version = None
    if isinstance(version, str) and version and version != "unknown":
        return f"release {version}"
    prints: list[str] = []
    for path in sorted((session.path / "flags").glob("*.json")):
        try:
            found = json.loads(path.read_text()).get("fingerprint")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(found, str) and found.strip():
            prints.append(found.split()[0][:12])
    return f"binary {', '.join(sorted(set(prints)))}" if prints else "unknown"


def _created(session: Session) -> float:
    try:
        stamp = session.meta_section().get("created_at")
    except SessionError:
        return 0.0
    return float(stamp) if isinstance(stamp, int | float) else 0.0


def previous_session(path: Path, plan: SweepPlan | None) -> PreviousSession | None:
    """The newest sibling of the session at ``path`` created before it, on the same model
    and engine, that recorded trials; None when there is none (or no plan to compare by)."""
    if plan is None:
        return None
    this = Session(path)
    created = _created(this)
    for summary in list_sessions(path.parent)[:LOOK_BACK]:
        if summary.path.resolve() == path.resolve() or summary.trials == 0:
            continue
        try:
            other = Session(summary.path)
            if _created(other) >= created:
                continue
            theirs = other.raw_plan()
            if (theirs.base.engine, theirs.base.model_path) != (
                plan.base.engine,
                plan.base.model_path,
            ):
                continue
            trials = tuple(other.load_trials())
        except (SessionError, ValueError, OSError):
            continue  # a damaged or foreign folder is no basis for a comparison
        return PreviousSession(summary.path.name, trials, engine_build(other), engine_build(this))
    return None
