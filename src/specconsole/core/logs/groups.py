"""Multi-line traceback groups: the lines of one crash, bounded, until the next record.

Why it exists: a Python traceback is many lines but one fatal event. A group opens on
``Traceback (most recent call last)`` (or a grammar's traceback opener, such as SGLang's ``...
hit an exception:`` header) and closes
when the next log record starts, when a blank line follows the exception line (unless a
chained traceback continues), or when the parser is settled/flushed. Memory stays bounded
however long the traceback is.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["TracebackGroup"]

_CHAIN_MARKERS = (
    "During handling of the above exception",
    "The above exception was the direct cause",
)
_VALIDATION_COUNT = re.compile(r"ValidationError: (\d+) validation errors? for ")
"""pydantic's exception line, which says how many errors its report lists."""
_VALIDATION_CLOSER = "For further information visit https://errors.pydantic.dev/"
"""The line that ends each error of a pydantic report (its last line for the last error)."""
_MAX_EVIDENCE = 8
_EXCERPT_HEAD = 12
_EXCERPT_TAIL = 48


@dataclass(slots=True)
class TracebackGroup:
    """An open traceback group (lines accumulate until it closes).

    Memory is bounded however long the traceback: the first lines, a sliding window of the
    last ones, and, from the lines that slid out, those that carry a fatal signature (they
    prove the cause, so they stay in the excerpt).
    """

    timestamp: str | None
    rank: str | None
    header_key: str | None
    """The opening line's header key (vLLM's ``[file.py:N]``): its continuation lines carry
    the same."""
    signature: Callable[[str], object]
    """The fatal-signature test of the grammars in use (a line that shows a cause is kept)."""
    fatal: bool = True
    head: list[str] = field(default_factory=list)
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=_EXCERPT_TAIL))
    evidence: list[str] = field(default_factory=list)
    """Signature lines (and the last exception line) that slid out of ``tail``."""
    dropped: int = 0
    seen_frame: bool = False
    seen_exception: bool = False
    pending_close: bool = False
    signed_since_exception: bool = False
    """A line from the exception line on names a fatal cause."""
    validation_errors_left: int | None = None
    """A pydantic report's errors whose closing line has not come yet (``None``: not one)."""

    def add(self, line: str) -> None:
        if self.seen_exception:
            self._follow_report(line)
        if len(self.head) < _EXCERPT_HEAD:
            self.head.append(line)
            return
        tail = self.tail
        if len(tail) == _EXCERPT_TAIL:
            out = tail[0]
            self.dropped += 1
            if self.signature(out) is not None and len(self.evidence) < _MAX_EVIDENCE:
                self.evidence.append(out)
        tail.append(line)

    def absorb(self, body: str, record: bool, vkey: str | None) -> bool:
        """Whether ``body`` belongs to this group (and if so, take it)."""
        if record and not (vkey is not None and vkey == self.header_key):
            return False
        if self.header_key is not None and self.seen_exception and vkey != self.header_key:
            # a keyed record's traceback (vLLM's logger.exception: every line repeats the
            # header) ends with its last keyed line; what follows unkeyed is another report
            return False
        if self.pending_close:
            if not body.strip():
                return True
            if body.startswith(_CHAIN_MARKERS):
                self.pending_close = False
                self.seen_exception = False
                self.seen_frame = False
                self.signed_since_exception = False
                self.validation_errors_left = None
                self.add(body)
                return True
            return False
        if not body.strip():
            if self.seen_exception:
                self.pending_close = True
            return True
        if body.startswith("  File ") or body.startswith("File "):
            self.seen_frame = True
        elif (
            self.seen_frame
            and not self.seen_exception
            and not body[0].isspace()
            and not body.startswith("Traceback")
        ):
            self.seen_exception = True
        self.add(body)
        return True

    def _follow_report(self, line: str) -> None:
        """Track what proves the report after the exception line complete: its cause named,
        and a pydantic report's every error closed."""
        if not self.signed_since_exception and self.signature(line) is not None:
            self.signed_since_exception = True
        left = self.validation_errors_left
        if left is None:
            found = _VALIDATION_COUNT.search(line)
            if found is not None:
                self.validation_errors_left = int(found.group(1))
        elif left > 0 and line.lstrip().startswith(_VALIDATION_CLOSER):
            self.validation_errors_left = left - 1

    @property
    def report_complete(self) -> bool:
        """A pydantic report (vLLM's argument checks) whose every error has its closing line
        and whose lines name the cause: nothing more belongs to it."""
        return self.validation_errors_left == 0 and self.signed_since_exception

    @property
    def last(self) -> str:
        """The last line taken."""
        return self.tail[-1] if self.tail else self.head[-1] if self.head else ""

    def classification_lines(self) -> list[str]:
        return [*self.head, *self.evidence, *self.tail]

    def excerpt(self) -> str:
        if not self.dropped:
            return "\n".join([*self.head, *self.tail])
        marker = f"... ({self.dropped} lines omitted) ..."
        return "\n".join([*self.head, marker, *self.evidence, *self.tail])
