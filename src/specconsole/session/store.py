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
moves on, so the worst a crash of the console can do is tear the line being written. It is the
only truth about what ran: a torn final line is ignored when reading, and ``repair`` (run by
``resume`` under the session lock) moves it aside to ``trials.jsonl.torn`` (kept, never
deleted) so that trial runs again; any other unreadable line is an error naming its line and
byte offset, never skipped (a skipped record would be re-run as a duplicate).
``session.toml`` is a cache of what the records say plus the resolved port, rewritten whole
with temp-file + fsync + rename; ``reconcile`` checks it against the records and rebuilds it
when it is empty, corrupt, wrongly typed or disagrees. A failed write removes its temp file
and leaves the earlier bytes as they were. Every file is read as bytes and decoded with
``core.plans.decoding`` (an error names the file and byte offset). Both are plain text a person can
read.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import tomli_w

from specconsole.core.config.bounds import PLAN_LIMITS
from specconsole.core.config.inputs import load_toml
from specconsole.core.config.secrets import (
    REDACTED,
    fill_from_environ,
    missing_values,
    redact_args,
    redact_plan_source,
    scrub,
    secret_values,
    split_secrets,
    unredact_config,
)
from specconsole.core.machine.state import TrialRecord
from specconsole.core.plans.decoding import DecodeError
from specconsole.core.plans.parse import loads_plan, plan_document
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.core.plans.plan import PlanError, SweepPlan
from specconsole.session.files import (
    SessionError,
    TrialLines,
    atomic_write,
    fsync_dir,
    parse_trial_lines,
    read_text_file,
)
from specconsole.session.records import RecordError, dumps_record, record_from_dict

SESSION_FILE = "session.toml"
PLAN_FILE = "plan.toml"
TRIALS_FILE = "trials.jsonl"
TORN_FILE = "trials.jsonl.torn"
LOGS_DIR = "logs"


MAX_TRIAL_INDEX = int(PLAN_LIMITS["[sweep] max_trials"])
"""Highest trial index a record may carry (a sweep runs at most ``max_trials``' limit)."""


def index_problem(record: TrialRecord, before: list[TrialRecord]) -> str:
    """'' when ``record``'s index can number a trial after ``before``: a whole number from 0
    to :data:`MAX_TRIAL_INDEX`, not one an earlier record has, with finite timestamps."""
    index = record.index
    if not 0 <= index <= MAX_TRIAL_INDEX:
        return f"index {index} is not a trial number (0 to {MAX_TRIAL_INDEX:,})"
    if any(earlier.index == index for earlier in before):
        return f"index {index} is given twice (trial {index + 1} has two records)"
    for name in ("started_at", "finished_at"):
        value = getattr(record, name)
        if value is not None and not math.isfinite(value):
            return f"{name} = {value!r} is not a time"
    return ""


def session_plan_text(plan: SweepPlan) -> str:
    """The plan copy kept in the session: its text as given, every secret (a secret
    variable's value, a secret flag's, a credential-looking string) replaced by the redaction
    marker, comments and layout kept (checked: the copy holds none of the values; else it is
    written again from the plan's tables)."""
    source = plan.source or tomli_w.dumps(plan_document(plan))
    listed = plan.profile.service.secret_env
    _public, secret_env = split_secrets(plan.base.env, listed)
    secret = [name for name, _value in secret_env]
    values = secret_values(plan.base, listed)
    redacted = redact_plan_source(source, secret, listed)
    if any(v in redacted for v in values):
        document = plan_document(plan)
        server = document.get("server", {})
        for name in secret:
            server.get("env", {})[name] = REDACTED
        if server.get("extra_args"):
            server["extra_args"] = list(redact_args(server["extra_args"], listed))
        redacted = scrub(tomli_w.dumps(document), values)
    return redacted


def fill_secrets(plan: SweepPlan, environ: Mapping[str, str]) -> SweepPlan:
    """The plan with redacted values taken from ``environ`` where set: a variable by its
    own name, a secret flag by ``core.config.secrets.flag_variable`` (``SPECCONSOLE_API_KEY``)."""
    if not missing_values(plan.base):
        return plan
    return replace(plan, base=fill_from_environ(plan.base, environ))


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
        source = session_plan_text(plan)
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
        if not (path / SESSION_FILE).is_file() and (inside := cls._sessions_in(path)):
            # the folder given to --session: it holds the sessions; name the one meant
            newest = inside[-1]
            others = f" (or one of the {len(inside)} `specconsole sessions --dir {path}` lists)"
            raise SessionError(
                f"{path} holds sessions, it is not one: give {newest}"
                + (others if len(inside) > 1 else "")
            )
        for required in (SESSION_FILE, PLAN_FILE):
            if not (path / required).is_file():
                raise SessionError(f"{path} has no {required}: not a specconsole session folder")
        return cls(path)

    @classmethod
    def _sessions_in(cls, path: Path) -> list[Path]:
        """The session folders right inside ``path``, the most recently written last."""
        found = [child for child in path.iterdir() if child.is_dir() and cls.is_session(child)]
        return sorted(
            found, key=lambda child: ((child / SESSION_FILE).stat().st_mtime_ns, child.name)
        )

    @classmethod
    def is_session(cls, path: Path) -> bool:
        return (path / SESSION_FILE).is_file() and (path / PLAN_FILE).is_file()

    # -- files ---------------------------------------------------------------------------------

    @property
    def trials_path(self) -> Path:
        return self.path / TRIALS_FILE

    def plan_text(self) -> str:
        try:
            return read_text_file(self.path / PLAN_FILE)
        except OSError as exc:
            raise SessionError(f"cannot read {self.path / PLAN_FILE}: {exc}") from None
        except DecodeError as exc:
            raise SessionError(str(exc)) from None

    def raw_plan(self) -> SweepPlan:
        """The session's plan as written (``port = "auto"`` unresolved)."""
        try:
            return loads_plan(self.plan_text())
        except PlanError as exc:
            raise PlanError(f"{self.path / PLAN_FILE}: {exc}") from None

    def load_plan(self, *, secrets_from_env: bool = False) -> SweepPlan:
        """The session's plan as it ran: a ``port = "auto"`` is the port recorded when the
        session was created (so a resumed session finds, and can reattach to, its server) and
        ``{python}``-style placeholders the values substituted then (so reports match the
        trials' configurations to the plan).

        Secret environment values are not in the session's copy; ``secrets_from_env`` takes
        them from this process's environment (``export HF_TOKEN=...`` before resuming)."""
        plan = self.raw_plan()
        if secrets_from_env:
            plan = fill_secrets(plan, os.environ)
        meta = self.meta_section()
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
        """session.toml as a table (``SessionError`` when it cannot be read or is mistyped)."""
        path = self.path / SESSION_FILE
        try:
            meta = load_toml(read_text_file(path), str(path), SessionError)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise SessionError(f"cannot read {path}: {exc}") from None
        except DecodeError as exc:
            raise SessionError(str(exc)) from None
        for name, table in meta.items():
            if not isinstance(table, dict):
                raise SessionError(
                    f"{path}: {name} should be a table, not {type(table).__name__}; fix: "
                    "`specconsole resume` rebuilds session.toml from trials.jsonl"
                )
        return meta

    def meta_section(self) -> dict[str, Any]:
        """The ``[session]`` table ({} when session.toml is missing)."""
        return dict(self.read_meta().get("session", {}))

    def write_meta(self, fields: Mapping[str, Any]) -> None:
        """Merge ``fields`` into ``[session]`` and rewrite session.toml atomically."""
        meta = self.read_meta()
        section = dict(meta.get("session", {}))
        section.update(fields)
        section["updated_at"] = time.time()
        meta["session"] = section
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
        with contextlib.suppress(SessionError):
            self.repair()  # a torn line from a killed writer goes aside, not mid-file
        with open(path, "ab+") as fh:
            size = fh.seek(0, os.SEEK_END)
            prefix = b""
            if size:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    prefix = b"\n"  # a whole last record that lost only its newline
            fh.seek(0, os.SEEK_END)
            try:
                fh.write(prefix + line.encode() + b"\n")
                fh.flush()
                os.fsync(fh.fileno())
            except BaseException:
                # a full disk: take back the part of the line that reached the file
                with contextlib.suppress(OSError):
                    fh.truncate(size)
                raise

    def read_lines(self) -> TrialLines:
        """The records of trials.jsonl and its torn tail (``SessionError`` if damaged)."""
        try:
            data = self.trials_path.read_bytes()
        except FileNotFoundError:
            return TrialLines(())
        except OSError as exc:
            raise SessionError(f"cannot read {self.trials_path}: {exc}") from None
        return parse_trial_lines(data, str(self.trials_path))

    def iter_raw(self) -> Iterator[dict[str, Any]]:
        """Every complete JSON line (a torn last line is left out)."""
        yield from self.read_lines().records

    def load_trials(self) -> list[TrialRecord]:
        """The finished trials, oldest first (a malformed record is a ``SessionError``)."""
        out: list[TrialRecord] = []
        try:
            base = self.load_plan(secrets_from_env=True).base
            reference, args = base.env, base.extra_args
        except (PlanError, SessionError, OSError):  # the markers stay in place
            reference, args = (), ()
        for number, data in enumerate(self.iter_raw(), start=1):
            try:
                record = record_from_dict(data)
                out.append(
                    replace(
                        record,
                        config=unredact_config(record.config, reference, args),
                        normalized=None
                        if record.normalized is None
                        else unredact_config(record.normalized, reference, args),
                    )
                )
            except RecordError as exc:
                raise SessionError(
                    f"{self.trials_path}: record {number}: {exc}; fix: repair or remove it "
                    "by hand (it is never skipped, so its trial is not run twice)"
                ) from None
            if problem := index_problem(record, out[:-1]):
                raise SessionError(
                    f"{self.trials_path}: record {number}: {problem}; fix: repair or remove it "
                    "by hand (resume and report number trials by it)"
                )
        return out

    def repair(self) -> list[str]:
        """Move a torn last line of trials.jsonl aside to trials.jsonl.torn (appended, never
        deleted) so that trial runs again; returns the notices to show."""
        lines = self.read_lines()
        if lines.torn_offset is None:
            return []
        torn_path = self.path / TORN_FILE
        with open(torn_path, "ab") as fh:
            fh.write(lines.torn + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        with open(self.trials_path, "rb+") as fh:
            fh.truncate(lines.torn_offset)
            fh.flush()
            os.fsync(fh.fileno())
        fsync_dir(self.path)
        return [
            f"{self.trials_path} ended with a torn line ({len(lines.torn)} bytes at byte "
            f"offset {lines.torn_offset}, from a run that was killed while writing it): moved "
            f"to {torn_path}; that trial runs again"
        ]

    def reconcile(self, trials: list[TrialRecord], plan: SweepPlan) -> list[str]:
        """Check session.toml against the records and rebuild it when it is empty, corrupt,
        mistyped or disagrees (trial count, the auto port the trials ran on); returns the
        notices to show. ``plan`` is :meth:`raw_plan`."""
        problem = ""
        try:
            section = self.meta_section()
        except SessionError as exc:
            section, problem = {}, str(exc)
        if not problem and not section:
            problem = f"{self.path / SESSION_FILE} is empty"
        port = section.get("server_port")
        if port is not None and (not isinstance(port, int) or isinstance(port, bool)):
            problem = problem or f"server_port is {port!r}, not a port number"
            port = None
        recorded_ports = [t.config.port for t in trials]
        if plan.auto_port and recorded_ports and port != recorded_ports[-1]:
            problem = problem or (
                f"server_port {port} disagrees with the port the trials ran on "
                f"({recorded_ports[-1]})"
            )
            port = recorded_ports[-1]
        count = section.get("trials")
        if not problem and count != len(trials):
            problem = f"it counts {count} trials while trials.jsonl holds {len(trials)}"
        if not problem:
            return []
        fresh: dict[str, Any] = {
            k: v for k, v in section.items() if isinstance(v, str | int | float | bool)
        }
        placeholders = section.get("placeholders")
        if isinstance(placeholders, dict):
            fresh["placeholders"] = {
                str(k): v for k, v in placeholders.items() if isinstance(v, str)
            }
        created = fresh.get("created_at")
        fresh.update(
            {
                "created_at": created if isinstance(created, int | float) else time.time(),
                "status": fresh.get("status") if isinstance(fresh.get("status"), str) else "?",
                "name": plan.name,
                "plan_file": PLAN_FILE,
                "strategy": plan.strategy.value,
                "planned_trials": plan.estimated_trials,
                "trials": len(trials),
                "server_port": port
                if port is not None
                else (None if plan.auto_port else plan.base.port),
                "updated_at": time.time(),
            }
        )
        atomic_write(self.path / SESSION_FILE, tomli_w.dumps(_clean({"session": fresh})).encode())
        return [f"session.toml rebuilt from trials.jsonl ({problem})"]

    # -- logs ---------------------------------------------------------------------------------

    def open_log(self, index: int) -> IO[str]:
        """Append-mode text handle for trial ``index``'s server log."""
        path = self.log_path(index)
        path.parent.mkdir(exist_ok=True)
        return open(path, "a", encoding="utf-8", errors="replace")
