"""The incremental line parser: prefixes off, traceback groups, one dict lookup per message.

Why it exists: the console must see a load progress, a capacity line or a crash the moment it
is logged. This module routes each line: the prefix layer (:mod:`.prefixes`) strips what the
collectors put before the message and the grammars' header readers the engine's own header,
an open traceback group (:mod:`.groups`) takes its continuation lines, and the message's
first word selects a handler of the grammars in use (:mod:`.dialect` merges them) or the
service manager's (:mod:`.service`). The parser itself names no engine: what a line means is
its grammar's business (:class:`~specconsole.core.logs.grammar.LogGrammar`).

How it stays fast (target ≥ 200,000 lines/s, ``benchmarks/log_parser.py``): a line pays for
one first-character dispatch per prefix layer, one header split and one dict lookup; only
lines that name something known are examined further. A grammar's commonest lines (SGLang's
statistics under its bracket header, bare or after a ``short-iso`` journal prefix) are read
in place by its fast path (:meth:`LogParser._fast_line`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from specconsole.core.logs.events import (
    FatalCause,
    FatalError,
    LogEvent,
    ProcessStarting,
    TuningWarning,
)

from .dialect import Dialect, FastReader, dialect_for, grammars_for
from .fatal import is_exception_line, is_request_exception
from .grammar import LogGrammar
from .groups import TracebackGroup
from .prefixes import json_record, strip_engine_header, strip_outer
from .service import on_supervisor, on_systemd
from .state import ParseState

__all__ = ["LogParser", "parse_lines"]

_SYSTEMD_IDENTS = frozenset(("systemd",))
_SYSTEMD_PREFIXES = ("Started ", "Starting ", "Stopping ", "Stopped ")
_TRACEBACK = "Traceback (most recent call last)"
_SHORT_ISO = re.compile(r".{19}[^ ]* [^ ]+ ([^ \[]+)[^ ]*?: ")
"""``TS HOST IDENT[PID]: `` (journal short-iso), as :func:`.prefixes.split_journal` splits it:
the identifier is group 1, the message follows."""


class LogParser:
    """Turns log lines into events, one line (or chunk) at a time.

    ``grammars``: the engine grammars to read with — by default ``engine``'s when it is a
    registered engine, else every registered engine's. ``engine`` is the engine the caller
    knows the log is from; with ``None`` the parser decides from the lines it sees
    (:meth:`ParseState.speaks`: vLLM's ``Application startup complete.`` is its ready line,
    the same uvicorn line SGLang prints *before* its warm-up). The parser never raises on
    input: a line it cannot make sense of yields no event.
    """

    _MAX_LINE = 65536
    """Longer lines are cut (a 10 MB line of garbage must not cost 10 MB per copy)."""

    def __init__(
        self, grammars: Sequence[LogGrammar] | None = None, engine: str | None = None
    ) -> None:
        if isinstance(grammars, str):
            raise TypeError("LogParser takes grammars; name the engine with engine=")
        chosen = grammars_for(engine) if grammars is None else tuple(grammars)
        dialect = dialect_for(chosen)
        self.dialect: Dialect = dialect
        self._rules = dialect.rules
        self._s = ParseState(rules=dialect.rules, engine=engine)
        self._heads = dialect.heads
        self._quiet = dialect.quiet_heads
        self._openers = dialect.openers
        self._fast = dialect.fast
        self._fast_more = dialect.fast_more
        self._readers = dialect.readers
        self._named = dialect.named
        self._fatal_lines = dialect.fatal_lines
        self._consequences = dialect.rules.consequences
        self._buffer = ""
        self._group: TracebackGroup | None = None
        self._iso_tail = ""
        """The `` HOST IDENT[PID]: `` of the last short-iso line :data:`_SHORT_ISO` matched
        before a fast-path header: the next lines of the same process carry it again, so a
        ``startswith`` at the end of their timestamp replaces the regex (same split, by
        construction)."""

    # -- public API ---------------------------------------------------------------------------

    def feed(self, line: str) -> list[LogEvent]:
        """Parse one complete line (a trailing newline is ignored)."""
        try:
            if len(line) > self._MAX_LINE:
                line = line[: self._MAX_LINE]
            if line[-1:] in ("\n", "\r"):
                line = line.rstrip("\r\n")
            fast = self._fast
            if fast and self._group is None and "\x1b" not in line:
                c = line[:1]
                path = fast.get(c)
                if path is not None:
                    events = self._fast_line(line, 0, path)
                    if events is not None:
                        return events
                    for path in self._fast_more.get(c, ()):
                        events = self._fast_line(line, 0, path)
                        if events is not None:
                            return events
                if "0" <= c <= "9" and line[10:11] == "T" and not line.startswith("Z", 19):
                    # journalctl -o short-iso around a fast-path header (the console's own
                    # mode): the previous line's HOST IDENT[PID] tail, else split_journal's
                    # split in one match (anything else: the general path)
                    tail = self._iso_tail
                    sp = line.find(" ", 19)
                    end = sp + len(tail)
                    if not (tail and line.startswith(tail, sp) and line[end : end + 1] in fast):
                        end = self._short_iso_end(line)
                    if end > 0:
                        c = line[end]
                        events = self._fast_line(line, end, fast[c])
                        if events is not None:
                            return events
                        for path in self._fast_more.get(c, ()):
                            events = self._fast_line(line, end, path)
                            if events is not None:
                                return events
            return self._feed_line(line)
        except Exception:  # pragma: no cover - last-resort guard; input must never crash us
            return []

    def _short_iso_end(self, line: str) -> int:
        """Where the message starts after a short-iso journal prefix of a non-systemd
        process followed by a fast-path header, else 0; remembers the prefix's
        `` HOST IDENT[PID]: `` tail for the next lines (:attr:`_iso_tail`)."""
        m = _SHORT_ISO.match(line)
        if m is None or m.group(1) == "systemd":
            return 0
        end = m.end()
        if line[end : end + 1] not in self._fast:
            return 0
        self._iso_tail = line[line.find(" ", 19) : end]
        return end

    def _fast_line(self, line: str, at: int, path: FastReader) -> list[LogEvent] | None:
        """A grammar's commonest lines — its header read in place at ``line[at]``, then its
        statistics handler, or nothing for an HTTP access line — without copying the line
        first; ``None``: take the general path."""
        read, table, drops, width = path
        got = read(line, at)
        if got is None:
            return None
        start, ts, rank = got
        key = line[start : start + width]
        handler = table.get(key)
        if handler is None:
            escapes = drops.get(key)
            if escapes is not None:
                for text in escapes:
                    if line.find(text, start) >= 0:
                        break
                else:
                    return []  # what the general path makes of it: nothing
        if handler is None:
            return self._on_body(line[start:], ts, rank, True, False)
        events = handler(self._s, line[start:], ts, rank)
        if events:
            self._s.weights_started = True
        return events

    def feed_lines(self, lines: Iterable[str]) -> list[LogEvent]:
        """Parse complete lines."""
        out: list[LogEvent] = []
        for line in lines:
            out.extend(self.feed(line))
        return out

    def feed_chunk(self, text: str) -> list[LogEvent]:
        """Parse a chunk of a stream; an incomplete last line is kept for the next chunk.

        A partial line that grows beyond the line limit is parsed (cut) at once, so an
        endless line keeps memory bounded.
        """
        if not text:
            return []
        data = self._buffer + text
        lines = data.split("\n")
        self._buffer = lines.pop()
        out = self.feed_lines(lines)
        if len(self._buffer) > self._MAX_LINE:
            rest, self._buffer = self._buffer, ""
            out.extend(self.feed(rest))
        return out

    def settle(self) -> list[LogEvent]:
        """Close an open traceback group now (call when the stream has gone quiet).

        Safe mid-stream: unlike :meth:`flush` it keeps a buffered partial line.
        """
        return self._close_group()

    def flush(self) -> list[LogEvent]:
        """End of input: parse a buffered partial line and close any open group."""
        out: list[LogEvent] = []
        if self._buffer:
            rest, self._buffer = self._buffer, ""
            out.extend(self.feed(rest))
        out.extend(self._close_group())
        return out

    @property
    def in_traceback(self) -> bool:
        """True while a traceback group is open (its event is not emitted yet)."""
        return self._group is not None

    @property
    def traceback_proven(self) -> bool:
        """An open traceback that ends on its exception line, and that line names a fatal
        cause by itself (vLLM's ``ValueError: To serve at least one request ...``), or whose
        pydantic report has closed its every error with the cause named in it (vLLM's
        argument checks: ``... validation error for ModelConfig``, ``Value error, ...``,
        ``For further information visit ...``): only a chained traceback written with it
        could still change the verdict, so a watch may settle it sooner than an
        unexplained one."""
        group = self._group
        if group is None or not group.seen_exception or group.pending_close:
            return False
        if group.report_complete:
            return True
        last = group.last
        return is_exception_line(last) and self._rules.signature(last) is not None

    # -- line handling ------------------------------------------------------------------------

    def _feed_line(self, raw: str) -> list[LogEvent]:
        if not raw:
            return self._on_body("", None, None, False, False)
        c = raw[0]
        if c == "{":
            rec = json_record(raw)
            if rec is not None:
                parts, jts, ident = rec
                out: list[LogEvent] = []
                for part in parts:
                    out.extend(self._on_message(part, jts, ident))
                return out
        elif c == "-" and raw.startswith("-- "):
            return []  # journalctl's "-- Boot ... --" / "-- No entries --" markers
        msg, jts, ident = strip_outer(raw)
        return self._on_message(msg, jts, ident)

    def _on_message(self, msg: str, jts: str | None, ident: str | None) -> list[LogEvent]:
        """A message with any collector prefix removed: split the engine's header."""
        if ident is not None:
            if ident in _SYSTEMD_IDENTS:
                return self._on_body(msg, jts, None, True, True)
            if ident == "supervisord":
                return self._service(on_supervisor(self._s, msg, jts))
        (body, ts, rank, vkey, record), heard = strip_engine_header(msg, self._readers, self._named)
        s = self._s
        if heard and s.engine is None:
            s.heard.update(heard)
        systemd = False
        if not record and (
            body.startswith(_SYSTEMD_PREFIXES) or (".service: " in body and body[:1] != " ")
        ):
            systemd = record = True
        return self._on_body(body, ts or jts, rank, record, systemd, vkey)

    def _service(self, events: list[LogEvent]) -> list[LogEvent]:
        """A service-manager record: it closes an open group first."""
        return [*self._close_group(), *events]

    def _on_body(
        self,
        body: str,
        ts: str | None,
        rank: str | None,
        record: bool,
        systemd: bool,
        vkey: str | None = None,
    ) -> list[LogEvent]:
        out: list[LogEvent] = []
        group = self._group
        if group is not None:
            if group.absorb(body, record, vkey):
                return out
            out.extend(self._close_group())
        s = self._s
        if systemd:
            out.extend(on_systemd(s, body, ts))
            return out
        if not body:
            return out
        sp = body.find(" ")
        head = body[:sp] if sp > 0 else body
        # Statistics lines (the bulk of a busy log) cannot hold a traceback: skip the scan.
        if head not in self._quiet and _TRACEBACK in body:
            self._open_group(body, ts, rank, vkey)
            return out
        eq = head.find("=")
        if eq > 0:
            head = head[:eq]
        handler = self._heads.get(head)
        if handler is not None:
            events = handler(s, body, ts, rank)
            if events:
                if not s.weights_started and not isinstance(
                    events[0], ProcessStarting | TuningWarning | FatalError
                ):
                    s.weights_started = True  # the server got past argument handling
                out.extend(events)
            return out
        for opener in self._openers:
            if opener in body:
                # e.g. SGLang's "Scheduler hit an exception: <message>" without a traceback
                self._open_group(body, ts, rank, vkey)
                return out
        rules = self._rules
        if not rules.might_be_fatal(body):
            return out  # the common case: nothing below can match (a few substring scans)
        if rules.is_request_error(body):
            s.after_request_error = True
            return out
        for fatal_line in self._fatal_lines:
            cause = fatal_line(body)
            if cause is not None:
                out.append(s.fatal_now(cause, body, ts, rank))
                return out
        if "NCCL" in body and ("ProcessGroupNCCL" in body or "NCCL error" in body):
            out.extend(s.consequence(body, ts, rank))
        elif rules.signature(body) is not None and not rules.is_recoverable(body):
            s.evidence.append(body)
        return out

    # -- traceback groups ---------------------------------------------------------------------

    def _open_group(self, body: str, ts: str | None, rank: str | None, vkey: str | None) -> None:
        s = self._s
        group = TracebackGroup(
            timestamp=ts,
            rank=rank,
            header_key=vkey,
            signature=self._rules.signature,
            fatal=not s.after_request_error,
        )
        s.after_request_error = False
        group.add(body)
        self._group = group

    def _close_group(self) -> list[LogEvent]:
        group = self._group
        if group is None:
            return []
        self._group = None
        lines = group.classification_lines()
        if not group.fatal or is_request_exception(lines):
            return []
        s = self._s
        cause, proof, fixes = self._rules.classify(
            [*s.evidence, *lines], before_weights=not s.weights_started
        )
        s.evidence.clear()
        if (
            s.fatal_seen
            and cause == FatalCause.UNKNOWN_TRACEBACK
            and any(text in proof for text in self._consequences)
        ):
            return []  # e.g. vLLM's front end re-raising "See root cause above."
        if s.fatal_seen and cause == s.fatal_cause:
            return []  # the same death told again (multiprocessing re-prints the exception)
        s.fatal_seen = True
        s.fatal_cause = cause
        return [
            FatalError(
                timestamp=group.timestamp,
                rank=group.rank,
                cause=cause,
                summary=proof,
                excerpt=group.excerpt(),
                fixes=fixes,
                before_weights=not s.weights_started,
            )
        ]


def parse_lines(
    lines: Iterable[str],
    engine: str | None = None,
    grammars: Sequence[LogGrammar] | None = None,
) -> list[LogEvent]:
    """Parse a complete log (e.g. a saved file) into events, flushing at the end
    (``engine``, ``grammars``: as :class:`LogParser`)."""
    parser = LogParser(grammars, engine)
    out = parser.feed_lines(lines)
    out.extend(parser.flush())
    return out
