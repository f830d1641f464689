"""The incremental line parser: prefixes off, traceback groups, one dict lookup per message.

Why it exists: the console must see a load progress, a capacity line or a crash the moment it
is logged. This module routes each line: the prefix layer (:mod:`.prefixes`) strips what the
collectors and the engine put before the message, an open traceback group
(:mod:`.groups`) takes its continuation lines, and the message's first word selects an SGLang
or vLLM handler (:mod:`.sglang`, :mod:`.vllm`) or the service manager's (:mod:`.service`).

How it stays fast (target ≥ 200,000 lines/s, ``benchmarks/log_parser.py``): a line pays for
one first-character dispatch per prefix layer, one header split and one dict lookup; only
lines that name something known are examined further. The commonest lines (SGLang's header,
bare or after a ``short-iso`` journal prefix) are read in place by :meth:`LogParser._fast`,
and their statistics events are built by :mod:`.build`'s positional constructors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from specconsole.core.logs.events import (
    FatalCause,
    FatalError,
    LogEvent,
    ProcessStarting,
    TuningWarning,
)

from . import sglang, vllm
from .fatal import (
    FIXES,
    classify_fatal,
    fatal_signature,
    is_recoverable,
    is_request_error,
    is_request_exception,
    might_be_fatal,
)
from .groups import CONSEQUENCE_TEXTS, TracebackGroup
from .prefixes import (
    json_record,
    sglang_bracket,
    strip_engine_header,
    strip_outer,
)
from .service import on_supervisor, on_systemd
from .state import Handler, ParseState

__all__ = ["LogParser", "parse_lines"]

_SYSTEMD_IDENTS = frozenset(("systemd",))
_SYSTEMD_PREFIXES = ("Started ", "Starting ", "Stopping ", "Stopped ")
_STATS_HEADS = frozenset(("Decode", "Prefill"))
_TRACEBACK = "Traceback (most recent call last)"
_SHORT_ISO_SGLANG = re.compile(r".{19}[^ ]* [^ ]+ ([^ \[]+)[^ ]*?: (?=\[)")
"""``TS HOST IDENT[PID]: [`` (journal short-iso before SGLang's header), as
:func:`.prefixes.split_journal` splits it: the identifier is group 1, the message follows."""


def _merge_heads(*tables: dict[str, Handler]) -> dict[str, Handler]:
    out: dict[str, Handler] = {}
    for table in tables:
        for head, handler in table.items():
            if head in out and out[head] is not handler:
                raise ValueError(f"two handlers for first word {head!r}")  # pragma: no cover
            out[head] = handler
    return out


_HEADS = _merge_heads(sglang.HEADS, vllm.HEADS)
"""First word of a message -> its handler: one dict lookup routes every line."""


def _access(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    raise AssertionError("a marker, never called")  # pragma: no cover


_ACCESS: Handler = _access
"""In :data:`_FAST_HEADS`: an HTTP access line (``INFO:     127.0.0.1:...``), dropped."""
_FAST_HEADS: dict[str, Handler] = {
    "Decode ": sglang.on_decode,
    "Prefill": sglang.on_prefill,
    "INFO:  ": _ACCESS,
}
"""The message's first 7 characters -> the fast path's handler (one slice, one lookup)."""


class LogParser:
    """Turns log lines into events, one line (or chunk) at a time.

    ``engine`` tells vLLM's ``Application startup complete.`` (its ready line) from the same
    uvicorn line SGLang prints *before* its warm-up; with ``None`` the parser decides from
    the lines it sees. The parser never raises on input: a line it cannot make sense of
    yields no event.
    """

    _MAX_LINE = 65536
    """Longer lines are cut (a 10 MB line of garbage must not cost 10 MB per copy)."""

    def __init__(self, engine: str | None = None) -> None:
        self._s = ParseState(engine=engine, vllm=engine == "vllm")
        self._buffer = ""
        self._group: TracebackGroup | None = None
        self._iso_tail = ""
        """The `` HOST IDENT[PID]: `` of the last short-iso line :data:`_SHORT_ISO_SGLANG`
        matched: the next lines of the same process carry it again, so a ``startswith`` at
        the end of their timestamp replaces the regex (same split, by construction)."""

    # -- public API ---------------------------------------------------------------------------

    def feed(self, line: str) -> list[LogEvent]:
        """Parse one complete line (a trailing newline is ignored)."""
        try:
            if len(line) > self._MAX_LINE:
                line = line[: self._MAX_LINE]
            if line[-1:] in ("\n", "\r"):
                line = line.rstrip("\r\n")
            if self._group is None and "\x1b" not in line:
                c = line[:1]
                if c == "[" and line[5:6] == "-":
                    events = self._fast(line, 0)
                    if events is not None:
                        return events
                elif "0" <= c <= "9" and line[10:11] == "T" and not line.startswith("Z", 19):
                    # journalctl -o short-iso around SGLang's header (the console's own mode):
                    # the previous line's HOST IDENT[PID] tail, else split_journal's split in
                    # one match (anything else: the general path)
                    tail = self._iso_tail
                    sp = line.find(" ", 19)
                    end = sp + len(tail)
                    if not (tail and line.startswith(tail, sp) and line.startswith("[", end)):
                        end = self._short_iso_end(line)
                    if end > 0:
                        events = self._fast(line, end)
                        if events is not None:
                            return events
            return self._feed_line(line)
        except Exception:  # pragma: no cover - last-resort guard; input must never crash us
            return []

    def _short_iso_end(self, line: str) -> int:
        """Where the message starts after a short-iso journal prefix of a non-systemd
        process followed by SGLang's ``[`` header, else 0; remembers the prefix's
        `` HOST IDENT[PID]: `` tail for the next lines (:attr:`_iso_tail`)."""
        m = _SHORT_ISO_SGLANG.match(line)
        if m is None or m.group(1) == "systemd":
            return 0
        self._iso_tail = line[line.find(" ", 19) : m.end()]
        return m.end()

    def _fast(self, line: str, at: int) -> list[LogEvent] | None:
        """The commonest lines — a statistics line under SGLang's ``[2026-07-20 10:27:57
        TP0] `` header starting at ``line[at]`` — straight to their handler, an HTTP access
        line to nothing, without copying the line first; ``None``: take the general path."""
        if line.startswith("] ", at + 20):
            rank = None
            start = at + 22
        elif line.startswith(" ", at + 20):
            j = line.find("] ", at + 21, at + 64)
            if j < 0:
                return None
            rank = line[at + 21 : j]
            start = j + 2
        else:
            return None
        handler = _FAST_HEADS.get(line[start : start + 7])
        if handler is _ACCESS:
            if line.find(_TRACEBACK, start) < 0 and line.find(vllm.UVICORN_READY, start) < 0:
                return []  # an HTTP access line: what _on_body's INFO: handler makes of it
            handler = None
        if handler is None:
            return self._on_body(line[start:], line[at + 1 : at + 20], rank, True, False)
        events = handler(self._s, line[start:], line[at + 1 : at + 20], rank)
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
        elif c == "[" and raw[5:6] == "-" and "\x1b" not in raw:
            # Fast path for the commonest line (SGLang's own header, no collector prefix).
            got = sglang_bracket(raw)
            if got is not None:
                return self._on_body(got[0], got[1], got[2], True, False)
        msg, jts, ident = strip_outer(raw)
        return self._on_message(msg, jts, ident)

    def _on_message(self, msg: str, jts: str | None, ident: str | None) -> list[LogEvent]:
        """A message with any collector prefix removed: split SGLang's or vLLM's header."""
        if ident is not None:
            if ident in _SYSTEMD_IDENTS:
                return self._on_body(msg, jts, None, True, True)
            if ident == "supervisord":
                return self._service(on_supervisor(self._s, msg, jts))
        body, ts, rank, vkey, record, vllm_hint = strip_engine_header(msg)
        s = self._s
        if vllm_hint and s.engine is None:
            s.vllm = True
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
        if head not in _STATS_HEADS and _TRACEBACK in body:
            self._open_group(body, ts, rank, vkey)
            return out
        eq = head.find("=")
        if eq > 0:
            head = head[:eq]
        handler = _HEADS.get(head)
        if handler is not None:
            events = handler(s, body, ts, rank)
            if events:
                if not s.weights_started and not isinstance(
                    events[0], ProcessStarting | TuningWarning | FatalError
                ):
                    s.weights_started = True  # the server got past argument handling
                out.extend(events)
        elif "hit an exception" in body:
            # "Scheduler hit an exception: <message>" without a traceback on the line.
            self._open_group(body, ts, rank, vkey)
        elif not might_be_fatal(body):
            pass  # the common case: nothing below can match (a few substring scans)
        elif is_request_error(body):
            s.after_request_error = True
        elif ": error: " in body and (".py: error:" in body or body.startswith("sglang")):
            out.append(s.fatal_now(FatalCause.BAD_ARGUMENT, body, ts, rank))
        elif "NCCL" in body and ("ProcessGroupNCCL" in body or "NCCL error" in body):
            out.extend(s.consequence(body, ts, rank))
        elif fatal_signature(body) is not None and not is_recoverable(body):
            s.evidence.append(body)
        return out

    # -- traceback groups ---------------------------------------------------------------------

    def _open_group(self, body: str, ts: str | None, rank: str | None, vkey: str | None) -> None:
        s = self._s
        group = TracebackGroup(
            timestamp=ts, rank=rank, header_key=vkey, fatal=not s.after_request_error
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
        cause, proof = classify_fatal([*s.evidence, *lines], before_weights=not s.weights_started)
        s.evidence.clear()
        if (
            s.fatal_seen
            and cause is FatalCause.UNKNOWN_TRACEBACK
            and any(text in proof for text in CONSEQUENCE_TEXTS)
        ):
            return []  # e.g. vLLM's front end re-raising "See root cause above."
        s.fatal_seen = True
        return [
            FatalError(
                timestamp=group.timestamp,
                rank=group.rank,
                cause=cause,
                summary=proof,
                excerpt=group.excerpt(),
                fixes=FIXES[cause],
                before_weights=not s.weights_started,
            )
        ]


def parse_lines(lines: Iterable[str], engine: str | None = None) -> list[LogEvent]:
    """Parse a complete log (e.g. a saved file) into events, flushing at the end."""
    parser = LogParser(engine)
    out = parser.feed_lines(lines)
    out.extend(parser.flush())
    return out
