"""Session folders: the durable record of a sweep, written so a kill at any moment loses no
finished trial.

Layout of one session folder::

    SESSION/
      session.toml     what the session is and how far it got, and the server's port
                       (a plan's port = "auto" is resolved once and kept here; rewritten
                       atomically)
      plan.toml        the plan exactly as given (resume re-reads it)
      trials.jsonl     one JSON object per finished trial, append-only, fsync'd
      logs/trial-001.log   each trial's captured server log

Why this shape: ``trials.jsonl`` is append-only and each line is fsync'd before the controller
moves on, so the worst a crash of the console can do is tear the line being written (a torn
final line is ignored when reading and the next append starts on a fresh line).
``session.toml`` is small and rewritten whole with temp-file + fsync + rename, so it is either
the old or the new version, never half of each. Both are plain text a person can read.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import tomli_w

from specconsole.core.plan import SweepPlan, loads_plan, plan_document, resolve_placeholders
from specconsole.core.state import TrialRecord
from specconsole.session.records import RecordError, dumps_record, record_from_dict

SESSION_FILE = "session.toml"
PLAN_FILE = "plan.toml"
TRIALS_FILE = "trials.jsonl"
LOGS_DIR = "logs"


class SessionError(Exception):
    """A session folder is missing, incomplete or unreadable; the message names the fix."""


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder, fsync, rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)
    _fsync_dir(path.parent)


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
    return slug[:40] or "sweep"


def _clean(value: Any) -> Any:
    """TOML has no null: drop ``None`` values (recursively)."""
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value if v is not None]
    return value


@dataclass
class Session:
    """One session folder on disk."""

    path: Path

    # -- creation / opening -------------------------------------------------------------------

    @classmethod
    def create(cls, parent: Path, plan: SweepPlan, *, name: str | None = None) -> Session:
        """Make a new session folder under ``parent`` holding a copy of the plan."""
        parent.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        base = f"{stamp}-{_slug(name or plan.name)}"
        path = parent / base
        n = 1
        while path.exists():
            n += 1
            path = parent / f"{base}-{n}"
        path.mkdir()
        (path / LOGS_DIR).mkdir()
        session = cls(path)
        source = plan.source or tomli_w.dumps(plan_document(plan))
        atomic_write(path / PLAN_FILE, source.encode())
        (path / TRIALS_FILE).touch()
        session.write_meta(
            {
                "created_at": time.time(),
                "status": "created",
                "name": plan.name,
                "plan_file": PLAN_FILE,
                "strategy": plan.strategy.value,
                "planned_trials": plan.estimated_trials,
                "server_port": plan.base.port,
                "placeholders": dict(plan.placeholders),
            }
        )
        return session

    @classmethod
    def open(cls, path: Path) -> Session:
        """Open an existing session folder (``SessionError`` names what is missing)."""
        if not path.is_dir():
            raise SessionError(
                f"{path} is not a session folder; list them with `specconsole sessions`"
            )
        for required in (SESSION_FILE, PLAN_FILE):
            if not (path / required).is_file():
                raise SessionError(f"{path} has no {required}: not a specconsole session folder")
        return cls(path)

    @classmethod
    def is_session(cls, path: Path) -> bool:
        return (path / SESSION_FILE).is_file() and (path / PLAN_FILE).is_file()

    # -- files ---------------------------------------------------------------------------------

    @property
    def trials_path(self) -> Path:
        return self.path / TRIALS_FILE

    def plan_text(self) -> str:
        return (self.path / PLAN_FILE).read_text()

    def load_plan(self) -> SweepPlan:
        """The session's plan as it ran: a ``port = "auto"`` is the port recorded when the
        session was created (so a resumed session finds, and can reattach to, its server) and
        ``{python}``-style placeholders the values substituted then (so reports match the
        trials' configurations to the plan)."""
        plan = loads_plan(self.plan_text())
        meta = self.read_meta().get("session", {})
        values = {
            str(k): v for k, v in dict(meta.get("placeholders") or {}).items() if isinstance(v, str)
        }
        port = meta.get("server_port")
        if plan.auto_port and isinstance(port, int) and not isinstance(port, bool):
            values["port"] = str(port)
        return resolve_placeholders(plan, values) if values else plan

    def log_relpath(self, index: int) -> str:
        return f"{LOGS_DIR}/trial-{index + 1:03d}.log"

    def log_path(self, index: int) -> Path:
        return self.path / self.log_relpath(index)

    # -- session.toml -------------------------------------------------------------------------

    def read_meta(self) -> dict[str, Any]:
        import tomllib

        try:
            with open(self.path / SESSION_FILE, "rb") as fh:
                return tomllib.load(fh)
        except FileNotFoundError:
            return {}
        except tomllib.TOMLDecodeError as exc:
            raise SessionError(f"{self.path / SESSION_FILE} is not valid TOML: {exc}") from None

    def write_meta(self, fields: Mapping[str, Any]) -> None:
        """Merge ``fields`` into ``[session]`` and rewrite session.toml atomically."""
        meta = self.read_meta()
        section = dict(meta.get("session", {}))
        section.update(fields)
        section["updated_at"] = time.time()
        meta["session"] = section
        atomic_write(self.path / SESSION_FILE, tomli_w.dumps(_clean(meta)).encode())

    def write_table(self, name: str, table: Mapping[str, Any]) -> None:
        """Replace a top-level table (e.g. ``[progress]``, ``[host]``) atomically."""
        meta = self.read_meta()
        meta[name] = dict(table)
        atomic_write(self.path / SESSION_FILE, tomli_w.dumps(_clean(meta)).encode())

    # -- trials.jsonl -------------------------------------------------------------------------

    def append_trial(
        self,
        record: TrialRecord,
        *,
        label: str | None = None,
        bench: Mapping[str, Any] | None = None,
    ) -> None:
        """Append one record durably (the line is fsync'd before this returns)."""
        line = dumps_record(record, label=label, bench=bench)
        path = self.trials_path
        with open(path, "ab+") as fh:
            size = fh.seek(0, os.SEEK_END)
            prefix = b""
            if size:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    prefix = b"\n"  # a torn line from a killed writer: start afresh
            fh.seek(0, os.SEEK_END)
            fh.write(prefix + line.encode() + b"\n")
            fh.flush()
            os.fsync(fh.fileno())

    def iter_raw(self) -> Iterator[dict[str, Any]]:
        """Every complete JSON line (a torn or corrupt line is skipped)."""
        try:
            text = self.trials_path.read_text()
        except FileNotFoundError:
            return
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict):
                yield data

    def load_trials(self) -> list[TrialRecord]:
        """The finished trials, oldest first, renumbered densely if lines were lost."""
        out: list[TrialRecord] = []
        for data in self.iter_raw():
            try:
                out.append(record_from_dict(data))
            except RecordError:
                continue
        return out

    # -- logs ---------------------------------------------------------------------------------

    def open_log(self, index: int) -> IO[str]:
        """Append-mode text handle for trial ``index``'s server log."""
        path = self.log_path(index)
        path.parent.mkdir(exist_ok=True)
        return open(path, "a", encoding="utf-8", errors="replace")


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
            meta = session.read_meta().get("session", {})
        except SessionError:
            meta = {"status": "unreadable"}
        trials = sum(1 for _ in session.iter_raw())
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
