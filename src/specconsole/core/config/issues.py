"""Findings about a server configuration: :class:`Issue`, its :class:`Severity` and a collector.

Why its own module: the general rules (:mod:`specconsole.core.config.validation`), the engines'
speculative-decoding rules (:mod:`specconsole.engines.sglang.rules`) and the server's own
adjustments (:mod:`specconsole.engines.sglang.normalize`) all report in this one shape, which the
editor, ``specconsole validate`` and the deploy gate show and count.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    """How much an issue matters: errors block a deploy."""

    ERROR = "error"
    WARNING = "warning"
    NOTICE = "notice"


@dataclass(frozen=True, slots=True)
class Issue:
    """One finding about a configuration."""

    field: str | None
    """The ``ServerConfig`` field (= TOML key) it is about; ``None`` for the whole config."""
    severity: Severity
    message: str
    """What is wrong, in the server's terms."""
    fix: str
    """What to change."""

    @property
    def blocking(self) -> bool:
        return self.severity is Severity.ERROR

    def __str__(self) -> str:
        where = self.field or "config"
        return f"{self.severity.value}: {where}: {self.message} Fix: {self.fix}"


class IssueReport:
    """Collects issues while the rules run."""

    def __init__(self) -> None:
        self.issues: list[Issue] = []

    def err(self, field: str | None, message: str, fix: str) -> None:
        self.issues.append(Issue(field, Severity.ERROR, message, fix))

    def warn(self, field: str | None, message: str, fix: str) -> None:
        self.issues.append(Issue(field, Severity.WARNING, message, fix))

    def note(self, field: str | None, message: str, fix: str) -> None:
        self.issues.append(Issue(field, Severity.NOTICE, message, fix))
