"""Where the controller's results go: the recorder it writes trials and server logs to.

Why a module of its own: the runtime only knows this small interface (the session folder's
``session.recorder.SessionRecorder`` and a pool box's recorder implement it), and how a
failed log write is handled — it halts the run — is a rule of its own, not an effect.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from specconsole.core.machine.state import ControllerState, TrialRecord


class TrialRecorder(Protocol):
    """Where finished trials and captured logs go (``session.recorder.SessionRecorder``)."""

    def record(self, record: TrialRecord, bench: dict[str, Any] | None) -> TrialRecord:
        """Persist durably; may return the record with ``log_file`` filled in."""
        ...

    def save(self, state: ControllerState) -> None:
        """Rewrite the session's progress."""
        ...

    def log_lines(self, trial_index: int | None, lines: tuple[str, ...]) -> None:
        """Append captured server log lines for a trial."""
        ...


class HaltingSink:
    """The recorder as the watcher's log sink: a failed log write (a full disk) halts the run
    instead of being logged once per batch while the sweep goes on unrecorded."""

    def __init__(self, recorder: TrialRecorder, halt: Callable[[str], None]) -> None:
        self._recorder = recorder
        self._halt = halt

    def log_lines(self, trial_index: int | None, lines: tuple[str, ...]) -> None:
        try:
            self._recorder.log_lines(trial_index, lines)
        except OSError as exc:
            self._halt(f"could not write the server log: {exc}")
            raise
