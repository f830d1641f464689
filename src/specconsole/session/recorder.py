"""The session recorder: the controller's ``TrialRecorder`` backed by a session folder.

Why a separate object: the runtime must not know about files, and the session folder must
not know about asyncio. The recorder turns what the runtime reports (a finished trial, the
progress snapshot, captured log lines, the box probe) into durable writes: trials are appended
and fsync'd before the controller moves on, progress and the probe (``box.toml``) are
rewritten atomically, logs are appended per trial.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import IO, Any

import tomli_w

from specconsole.core.boxfacts import BoxProbe, probe_table
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.secrets import scrub, secret_values
from specconsole.core.machine.state import ControllerState, TrialRecord
from specconsole.present.labels import record_label
from specconsole.session.files import atomic_write
from specconsole.session.store import Session

PROBE_FILE = "box.toml"
"""What the box probe found as the session's controller started (``core.boxfacts``)."""


class SessionRecorder:
    """Writes a controller's trials, progress and logs into one session folder."""

    def __init__(
        self,
        session: Session,
        *,
        host: str = "",
        service: str = "",
        base: ServerConfig | None = None,
    ) -> None:
        self.session = session
        self.base = base
        """The plan's base configuration (labels name what differs from it)."""
        self.host = host
        self.service = service
        self._logs: dict[int, IO[str]] = {}
        self._secrets = () if base is None else secret_values(base)
        """Secret values the server may echo in its log (never written to the trial logs)."""

    def record(self, record: TrialRecord, bench: dict[str, Any] | None) -> TrialRecord:
        record = replace(record, log_file=self.session.log_relpath(record.index))
        handle = self._logs.pop(record.index, None)
        if handle is not None:
            handle.close()
        self.session.append_trial(record, label=record_label(record, self.base), bench=bench)
        return record

    def save(self, state: ControllerState) -> None:
        status = state.phase.value
        if state.quitting and state.busy:
            status = "interrupted"
        self.session.write_meta(
            {
                "status": status,
                "trials": len(state.trials),
                "sweep_active": state.sweep_active,
                "finished_reason": state.finished_reason,
                "policy": state.policy.value,
                "host": self.host,
                "service": self.service,
                "sweep_started_at": state.sweep_started_at,
                "deployed_hash": None if state.deployed is None else state.deployed.artifact_hash,
            }
        )

    def record_probe(self, probe: BoxProbe) -> None:
        """What the box probe found, in the session's ``box.toml`` (rewritten atomically; no
        secret values: the probe's running configuration was redacted when it was built)."""
        data = tomli_w.dumps(probe_table(probe)).encode()
        atomic_write(self.session.path / PROBE_FILE, data)

    def log_lines(self, trial_index: int | None, lines: tuple[str, ...]) -> None:
        if trial_index is None:
            return
        handle = self._logs.get(trial_index)
        if handle is None:
            handle = self.session.open_log(trial_index)
            self._logs[trial_index] = handle
        handle.write("\n".join(scrub(line, self._secrets) for line in lines) + "\n")
        handle.flush()

    def close(self) -> None:
        for handle in self._logs.values():
            with contextlib.suppress(OSError):  # a full disk: the record is what counts
                handle.close()
        self._logs.clear()
