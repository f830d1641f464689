"""Pieces several subcommands share: the error line, the session options, session creation
and the session lock.

``sweep``, ``resume`` and ``tui``/``demo`` all write sessions, so the ``--session`` and
``--on-crash`` options, their help, the "cannot create the session folder" error and taking the
session lock (with its stale-lock notice) live here once.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from specconsole.core.plans.plan import CrashPolicy

if TYPE_CHECKING:
    from specconsole.core.plans.plan import SweepPlan
    from specconsole.session.lock import SessionLock
    from specconsole.session.store import Session


class SessionNotCreated(Exception):
    """The session folder could not be created; the message says where and why."""


def error(text: str) -> int:
    """Print ``specconsole: error: TEXT`` on stderr and return exit code 1."""
    print(f"specconsole: error: {text}", file=sys.stderr)
    return 1


def add_session_option(parser: argparse.ArgumentParser) -> None:
    """``--session DIR``: where the session folder goes."""
    parser.add_argument(
        "--session",
        type=Path,
        default=None,
        metavar="DIR",
        help="folder to create the session folder in (default: the user data dir)",
    )


def add_on_crash_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--on-crash pause|auto``: the crash policy, overriding the plan's."""
    parser.add_argument(
        "--on-crash", choices=[c.value for c in CrashPolicy], default=None, help=help_text
    )


def create_session(parent: Path | None, plan: SweepPlan) -> Session:
    """A new session folder for ``plan`` under ``parent`` (default: the user data dir)."""
    from specconsole.paths import sessions_dir
    from specconsole.session.store import Session

    where = parent if parent is not None else sessions_dir()
    try:
        return Session.create(where, plan)
    except OSError as exc:
        raise SessionNotCreated(f"cannot create the session folder under {where}: {exc}") from exc


def lock_session(session: Session) -> SessionLock:
    """Take ``session``'s lock (``SessionLocked`` if a live run holds it); a stale lock of a
    dead run is taken over with a notice on stderr. The caller releases it."""
    from specconsole.session.lock import SessionLock

    lock = SessionLock(session.path).acquire()
    if lock.notice:
        print(f"specconsole: notice: {lock.notice}", file=sys.stderr)
    return lock
