"""Incremental parser from inference-server log lines to typed events.

Why it exists: the console must see a load progress, a capacity line or a crash the moment
it is logged, from whatever the box gives us (``journalctl -o short``, ``short-iso``,
``cat`` or ``json``; SGLang with or without ``TP0``/``DP0`` prefixes, old and new line
formats; vLLM). It is pure: lines in, :mod:`specconsole.core.log_events` values out, no I/O.

How it stays fast (a log burst must never back up the console, target ≥ 200,000 lines/s):
each line pays for one journal-prefix check, one SGLang/vLLM header split and one dict
lookup on the message's first word; only lines that name something we know are examined
further, with ``str.find``/``split``. Statistics lines are parsed *by key*, never by
position, so fields added or reordered across releases are fine; the canonical Decode line
of v0.5.9 and later alone takes a one-regex fast path (with the by-key parse as fallback).

Multi-line tracebacks are grouped into one :class:`~specconsole.core.log_events.FatalError`:
a group opens on ``Traceback (most recent call last)`` (or SGLang's ``... hit an
exception:`` header) and closes when the next log record starts, when a blank line follows
the exception line (unless a chained traceback continues), on :meth:`LogParser.settle` or
:meth:`LogParser.flush`. The cause is classified from every line of the group, most
specific signature first, and carries SGLang's own remedies.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from specconsole.core.config import Engine
from specconsole.core.log_events import (
    Capacity,
    CudaGraphBegin,
    CudaGraphEnd,
    DecodeStats,
    FatalCause,
    FatalError,
    KVCacheAllocated,
    LogEvent,
    MemoryPoolEnd,
    PrefillStats,
    ProcessStarting,
    Ready,
    Role,
    ServiceExited,
    SpecStats,
    SuggestedFix,
    TuningWarning,
    WarningKind,
    WeightsBegin,
    WeightsEnd,
)

__all__ = ["FIXES", "LogParser", "classify_fatal", "parse_lines"]

# ---------------------------------------------------------------------------------------------
# Remedies (SGLang's "OOM Troubleshooting" recipe and CUDA_GRAPH_CAPTURE_FAILED_MSG)
# ---------------------------------------------------------------------------------------------

_LOWER_MEM = SuggestedFix(
    "Lower mem_fraction_static (e.g. 0.8, 0.7, or 0.5) so activations and graphs fit.",
    (("mem_fraction_static", "0.7"),),
)
_LOWER_GRAPH_BS = SuggestedFix(
    "Lower cuda_graph_max_bs (e.g. 16, or 4) so fewer CUDA graphs are captured.",
    (("cuda_graph_max_bs", "16"),),
)
_SHRINK_TREE = SuggestedFix(
    "Shrink the draft tree: speculative_num_steps=3, speculative_eagle_topk=1, "
    "speculative_num_draft_tokens=4.",
    (
        ("speculative_num_steps", "3"),
        ("speculative_eagle_topk", "1"),
        ("speculative_num_draft_tokens", "4"),
    ),
)
_LOWER_RUNNING = SuggestedFix(
    "Lower max_running_requests (e.g. 4) to bound per-request memory.",
    (("max_running_requests", "4"),),
)
_RAISE_MEM = SuggestedFix(
    "Raise mem_fraction_static: the weights leave no room for the KV cache (draft weights "
    "count too), or use a smaller model / more GPUs (tp_size).",
)
_DISABLE_GRAPH = SuggestedFix(
    "As a last resort disable CUDA graphs (--disable-cuda-graph, or "
    "--cuda-graph-backend-decode=disabled on the newest SGLang): a large slowdown.",
)

FIXES: dict[FatalCause, tuple[SuggestedFix, ...]] = {
    FatalCause.KV_CACHE_NO_MEMORY: (
        _RAISE_MEM,
        SuggestedFix(
            "Check that no other process holds GPU memory (nvidia-smi) before raising it.",
        ),
    ),
    FatalCause.CUDA_OOM: (_LOWER_MEM, _LOWER_GRAPH_BS, _SHRINK_TREE, _LOWER_RUNNING),
    FatalCause.CUDA_GRAPH_CAPTURE_FAILED: (
        _LOWER_MEM,
        _LOWER_GRAPH_BS,
        _SHRINK_TREE,
        _DISABLE_GRAPH,
    ),
    FatalCause.ILLEGAL_MEMORY_ACCESS: (
        SuggestedFix(
            "Keep speculative_num_draft_tokens <= speculative_num_steps x "
            "speculative_eagle_topk + 1 (SGLang does not check it; larger trees crash).",
        ),
        _SHRINK_TREE,
        _LOWER_GRAPH_BS,
    ),
    FatalCause.NCCL_ERROR: (
        SuggestedFix(
            "Check that every GPU of tp_size is free and visible (nvidia-smi, "
            "CUDA_VISIBLE_DEVICES); set NCCL_DEBUG=INFO in env to see why."
        ),
        SuggestedFix("Try a smaller tp_size (fewer GPUs in the NCCL group)."),
        SuggestedFix(
            "Set SGLANG_KILLPG_ON_SCHEDULER_EXCEPTION=1 so one rank's crash stops the others "
            "instead of flooding the log with NCCL timeouts."
        ),
    ),
    FatalCause.BAD_ARGUMENT: (
        SuggestedFix(
            "Fix the argument named in the message; `specconsole validate` checks SGLang's "
            "rules before deploying."
        ),
    ),
    FatalCause.SCHEDULER_KILLED: (
        SuggestedFix(
            "A process was SIGKILLed, usually by the OS OOM killer: check `dmesg -T | grep -i "
            "oom` and reduce host memory use (fewer parallel loads, lower "
            "max_running_requests or chunked prefill)."
        ),
        _LOWER_RUNNING,
    ),
    FatalCause.SCHEDULER_EXCEPTION: (
        SuggestedFix("Read the excerpt's last exception line; it names the failing component."),
        _SHRINK_TREE,
        _LOWER_MEM,
    ),
    FatalCause.UNKNOWN_TRACEBACK: (
        SuggestedFix("Read the excerpt; the last exception line says what failed."),
    ),
}
"""Suggested remedies for every fatal cause, most effective first."""

# ---------------------------------------------------------------------------------------------
# Fatal signatures, most specific first
# ---------------------------------------------------------------------------------------------

_SIGNATURES: tuple[tuple[FatalCause, tuple[str, ...]], ...] = (
    (
        FatalCause.KV_CACHE_NO_MEMORY,
        (
            "Not enough memory. Please try to increase --mem-fraction-static",
            "leave no GPU memory for the KV cache",
            "No available memory for the cache blocks",
            "than the available KV cache memory",
            "maximum number of tokens that can be stored in KV cache",
        ),
    ),
    (
        FatalCause.CUDA_GRAPH_CAPTURE_FAILED,
        ("Capture cuda graph failed", "Capture CUDA graph failed"),
    ),
    (FatalCause.ILLEGAL_MEMORY_ACCESS, ("illegal memory access",)),
    (
        FatalCause.CUDA_OOM,
        (
            "CUDA out of memory",
            "OutOfMemoryError",
            "is less than desired GPU memory utilization",
        ),
    ),
    (
        FatalCause.NCCL_ERROR,
        (
            "NCCL error",
            "ncclUnhandledCudaError",
            "ncclInternalError",
            "ncclSystemError",
            "ProcessGroupNCCL",
            "Watchdog caught collective operation timeout",
            "DistBackendError",
        ),
    ),
)
_SIG_RANK = {cause: i for i, (cause, _) in enumerate(_SIGNATURES)}
_ARG_EXCEPTIONS = ("ValueError", "AssertionError", "TypeError", "argparse.ArgumentError")
_KILLED_SIGNS = ("exit code: -9", "status=9/KILL", "OOM killer", "oom-kill")


def _signature(line: str) -> FatalCause | None:
    """The most specific known fatal signature in one line, if any."""
    for cause, needles in _SIGNATURES:
        for needle in needles:
            if needle in line:
                return cause
    return None


def classify_fatal(lines: Iterable[str], *, before_weights: bool = False) -> tuple[FatalCause, str]:
    """Classify fatal log text; returns (cause, the line that proves it).

    Used by the parser for each traceback group and usable on any excerpt.
    """
    best: FatalCause | None = None
    best_line = ""
    exc_line = ""
    header = ""
    scheduler = False
    killed_line = ""
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if not header:
            header = text
        cause = _signature(text)
        if cause is not None and (best is None or _SIG_RANK[cause] < _SIG_RANK[best]):
            best, best_line = cause, text
        if "hit an exception" in text or "Received sigquit" in text or "warmup error" in text:
            scheduler = True
        if any(k in text for k in _KILLED_SIGNS):
            killed_line = killed_line or text
        if _is_exception_line(line):
            exc_line = text
    if best is not None:
        return best, best_line
    if (
        exc_line
        and before_weights
        and not scheduler
        and exc_line.split(":", 1)[0].rsplit(".", 1)[-1]
        in {e.rsplit(".", 1)[-1] for e in _ARG_EXCEPTIONS}
    ):
        return FatalCause.BAD_ARGUMENT, exc_line
    if killed_line:
        return FatalCause.SCHEDULER_KILLED, killed_line
    if scheduler:
        return FatalCause.SCHEDULER_EXCEPTION, exc_line or header
    return FatalCause.UNKNOWN_TRACEBACK, exc_line or header


_EXC_RE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)\b")


def _is_exception_line(line: str) -> bool:
    """``ValueError: ...``-style lines that end a Python traceback."""
    return bool(line) and not line[0].isspace() and _EXC_RE.match(line) is not None


# ---------------------------------------------------------------------------------------------
# Line prefixes
# ---------------------------------------------------------------------------------------------

_MONTHS = frozenset(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
)
# vLLM: "INFO 07-20 10:27:57 [file.py:123] message" (after an optional "(Proc pid=N) ")
_VLLM_RE = re.compile(
    r"(INFO|WARNING|ERROR|DEBUG|CRITICAL) (\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)? \[([^\]]*)\] "
)
_MONO_START = frozenset(" 0123456789")
_VLLM_LEVEL_PREFIXES = frozenset(("INFO ", "WARNI", "ERROR", "DEBUG", "CRITI"))
_SYSTEMD_IDENTS = frozenset(("systemd",))
_SYSTEMD_PREFIXES = ("Started ", "Starting ", "Stopping ", "Stopped ")
_CHAIN_MARKERS = (
    "During handling of the above exception",
    "The above exception was the direct cause",
)
_MAX_EVIDENCE = 8
_CONSEQUENCE_TEXTS = (
    "See root cause above",
    "Please see the error messages above",
    "Engine core initialization failed",
)
"""Exception texts that only report an earlier failure (no second fatal event)."""
_EXCERPT_HEAD = 12
_EXCERPT_TAIL = 48


def _num_after(text: str, key: str) -> float | None:
    """The number right after ``key`` in ``text`` (``1,234`` and ``12.5`` allowed)."""
    i = text.find(key)
    if i < 0:
        return None
    i += len(key)
    n = len(text)
    while i < n and text[i] == " ":
        i += 1
    j = i
    while j < n and (text[j].isdigit() or text[j] in ".-,"):
        j += 1
    token = text[i:j].replace(",", "").rstrip(".")
    try:
        return float(token)
    except ValueError:
        return None


def _int_after(text: str, key: str) -> int | None:
    v = _num_after(text, key)
    return int(v) if v is not None else None


def _word_after(text: str, key: str) -> str | None:
    i = text.find(key)
    if i < 0:
        return None
    i += len(key)
    j = i
    n = len(text)
    while j < n and text[j] not in ", ":
        j += 1
    return text[i:j] or None


def _int_list_after(text: str, key: str) -> tuple[int, ...]:
    """``[1, 2, 4]`` right after ``key`` (which includes the ``[``) as ints; ``()`` if absent."""
    i = text.find(key)
    if i < 0:
        return ()
    i += len(key)
    j = text.find("]", i)
    if j < 0:
        return ()
    try:
        return tuple(int(p) for p in text[i:j].split(",") if p.strip())
    except ValueError:
        return ()


_INT, _FLOAT, _BOOL = 0, 1, 2
_STATS_HEADS = frozenset(("Decode", "Prefill"))
_Handler = Callable[["LogParser", str, "str | None", "str | None"], "list[LogEvent]"]

_DECODE_KEYS: dict[str, tuple[str, int]] = {
    "#running-req": ("running_req", _INT),
    "#token": ("num_tokens", _INT),
    "#full token": ("num_tokens", _INT),
    "token usage": ("token_usage", _FLOAT),
    "full token usage": ("token_usage", _FLOAT),
    "accept len": ("accept_len", _FLOAT),
    "accept rate": ("accept_rate", _FLOAT),
    "cuda graph": ("cuda_graph", _BOOL),
    "gen throughput (token/s)": ("gen_throughput", _FLOAT),
    "#queue-req": ("queue_req", _INT),
}
_PREFILL_KEYS: dict[str, tuple[str, int]] = {
    "#new-seq": ("new_seq", _INT),
    "#new-token": ("new_token", _INT),
    "#cached-token": ("cached_token", _INT),
    "token usage": ("token_usage", _FLOAT),
    "full token usage": ("token_usage", _FLOAT),
    "#running-req": ("running_req", _INT),
    "#queue-req": ("queue_req", _INT),
    "#pending-token": ("pending_token", _INT),
    "cuda graph": ("cuda_graph", _BOOL),
    "input throughput (token/s)": ("input_throughput", _FLOAT),
}


def _key_values(rest: str, keys: dict[str, tuple[str, int]]) -> dict[str, object]:
    """Parse ``key: value, key: value`` by key; unknown keys and bad values are skipped.

    This is the parser's hottest loop (every statistics line), hence the inlined
    conversions instead of a table of converter functions.
    """
    out: dict[str, object] = {}
    get = keys.get
    for piece in rest.split(", "):
        k, _, v = piece.partition(": ")
        spec = get(k)
        if spec is None:
            continue
        name, kind = spec
        try:
            if kind == _INT:
                out[name] = int(v)
            elif kind == _FLOAT:
                out[name] = float(v)
            else:
                out[name] = v.strip() == "True"
        except ValueError:
            pass
    return out


_DECODE_CANONICAL = re.compile(
    r"#running-req: (\d+), #token: (\d+), token usage: ([\d.]+), "
    r"(?:accept len: ([\d.]+), )?(?:accept rate: ([\d.]+), )?"
    r"cuda graph: (True|False), gen throughput \(token/s\): ([\d.]+), #queue-req: (\d+)\Z"
)
"""The Decode line as SGLang v0.5.9 and later print it (plain KV pool, with or without spec).

Only a fast path: anything else (older releases, hybrid pools, extra keys, reordering) falls
back to :func:`_key_values`, which parses by key and gives the same result for this form."""


def _decode_fast(rest: str) -> dict[str, object] | None:
    """Decode statistics from the canonical form in one regex match, else ``None``."""
    m = _DECODE_CANONICAL.match(rest)
    if m is None:
        return None
    g = m.groups()
    try:
        return {
            "running_req": int(g[0]),
            "num_tokens": int(g[1]),
            "token_usage": float(g[2]),
            "accept_len": float(g[3]) if g[3] is not None else None,
            "accept_rate": float(g[4]) if g[4] is not None else None,
            "cuda_graph": g[5] == "True",
            "gen_throughput": float(g[6]),
            "queue_req": int(g[7]),
        }
    except ValueError:  # e.g. "1.2.3"
        return None


def _split_journal(raw: str, ts_end: int) -> tuple[str, str, str] | None:
    """Split ``TS HOST IDENT[PID]: MESSAGE`` (journalctl short modes) at a known TS width.

    Returns (timestamp, identifier, message), or ``None`` when the line is not of that form.
    Hand-written instead of a regex: every journal line pays for it.
    """
    sp = raw.find(" ", ts_end)
    if sp < 0:
        return None
    host_end = raw.find(" ", sp + 1)
    if host_end < 0:
        return None
    colon = raw.find(": ", host_end + 1)
    if colon < 0:
        if not raw.endswith(":"):
            return None
        colon = len(raw) - 1
    ident = raw[host_end + 1 : colon]
    if not ident or " " in ident:
        return None
    b = ident.find("[")
    if b > 0:
        ident = ident[:b]
    return raw[:sp], ident, raw[colon + 2 :]


def _stats_rest(body: str, start: int) -> tuple[int | None, str] | None:
    """Split ``Decode batch [N], a: 1, ...`` after the label into (iteration, rest).

    ``None`` when the label is not followed by `` [N]``, ``.`` or ``,`` (not a stats line).
    """
    rest = body[start:]
    if rest[:1] not in (".", ",") and not rest.startswith(" ["):
        return None
    iteration: int | None = None
    if rest.startswith(" ["):
        j = rest.find("]")
        if j > 0:
            try:
                iteration = int(rest[2:j])
            except ValueError:
                iteration = None
            rest = rest[j + 1 :]
    if rest[:1] in (".", ","):
        rest = rest[1:]
    return iteration, rest.strip().rstrip(",")


@dataclass(slots=True)
class _Group:
    """An open traceback group (lines accumulate until it closes).

    Memory is bounded however long the traceback: the first lines, a sliding window of the
    last ones, and, from the lines that slid out, those that carry a fatal signature (they
    prove the cause, so they stay in the excerpt).
    """

    timestamp: str | None
    rank: str | None
    header_key: str | None
    """vLLM's ``[file.py:N]`` of the opening line: its continuation lines carry the same."""
    fatal: bool = True
    head: list[str] = field(default_factory=list)
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=_EXCERPT_TAIL))
    evidence: list[str] = field(default_factory=list)
    """Signature lines (and the last exception line) that slid out of ``tail``."""
    dropped: int = 0
    seen_frame: bool = False
    seen_exception: bool = False
    pending_close: bool = False

    def add(self, line: str) -> None:
        if len(self.head) < _EXCERPT_HEAD:
            self.head.append(line)
            return
        tail = self.tail
        if len(tail) == _EXCERPT_TAIL:
            out = tail[0]
            self.dropped += 1
            if _signature(out) is not None and len(self.evidence) < _MAX_EVIDENCE:
                self.evidence.append(out)
        tail.append(line)

    def classification_lines(self) -> list[str]:
        return [*self.head, *self.evidence, *self.tail]

    def excerpt(self) -> str:
        if not self.dropped:
            return "\n".join([*self.head, *self.tail])
        marker = f"... ({self.dropped} lines omitted) ..."
        return "\n".join([*self.head, marker, *self.evidence, *self.tail])


class LogParser:
    """Turns log lines into events, one line (or chunk) at a time.

    ``engine`` tells vLLM's ``Application startup complete.`` (its ready line) from the same
    uvicorn line SGLang prints *before* its warm-up; with ``None`` the parser decides from
    the lines it sees. The parser never raises on input: a line it cannot make sense of
    yields no event.
    """

    def __init__(self, engine: Engine | None = None) -> None:
        self._engine = engine
        self._vllm = engine is Engine.VLLM
        self._buffer = ""
        self._group: _Group | None = None
        self._weights_begin: dict[str, int] = {}
        self._weights_end: dict[str, int] = {}
        self._kv: dict[str, int] = {}
        self._weights_started = False
        self._fatal_seen = False
        self._stopping = False
        self._after_asgi_error = False

    # -- public API ---------------------------------------------------------------------------

    def feed(self, line: str) -> list[LogEvent]:
        """Parse one complete line (a trailing newline is ignored)."""
        try:
            return self._feed_line(line.rstrip("\r\n"))
        except Exception:  # pragma: no cover - last-resort guard; input must never crash us
            return []

    def feed_lines(self, lines: Iterable[str]) -> list[LogEvent]:
        """Parse complete lines."""
        out: list[LogEvent] = []
        for line in lines:
            out.extend(self.feed(line))
        return out

    def feed_chunk(self, text: str) -> list[LogEvent]:
        """Parse a chunk of a stream; an incomplete last line is kept for the next chunk."""
        if not text:
            return []
        data = self._buffer + text
        lines = data.split("\n")
        self._buffer = lines.pop()
        return self.feed_lines(lines)

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
            return self._on_json(raw)
        jts: str | None = None
        systemd = False
        split: tuple[str, str, str] | None = None
        if c in "JFMASOND" and raw[3:4] == " " and raw[:3] in _MONTHS and raw[9:10] == ":":
            split = _split_journal(raw, 15)  # "Jul 20 10:27:57[.123456] host ident[pid]: "
        elif c.isdigit() and raw[4:5] == "-" and raw[10:11] == "T" and raw[13:14] == ":":
            split = _split_journal(raw, 19)  # "2026-07-20T10:27:57[.us]+0000 host ident[pid]: "
        elif c == "[" and raw[5:6] != "-" and raw[1:2] in _MONO_START:
            # -o short-monotonic: "[  123.456789] host ident[pid]: " (not SGLang's "[2026-")
            end = raw.find("]")
            if end > 1 and raw[1:end].strip().replace(".", "", 1).isdigit():
                split = _split_journal(raw, end + 1)
        elif c == "-" and raw.startswith("-- "):
            return []  # journalctl's "-- Boot ... --" / "-- No entries --" markers
        if split is not None:
            jts, ident, raw = split
            systemd = ident in _SYSTEMD_IDENTS
        return self._on_message(raw, jts, systemd)

    def _on_json(self, raw: str) -> list[LogEvent]:
        try:
            rec = json.loads(raw)
        except ValueError:
            return self._on_message(raw, None, False)
        if not isinstance(rec, dict):
            return []
        msg = rec.get("MESSAGE")
        if isinstance(msg, list):
            try:
                msg = bytes(b & 0xFF for b in msg if isinstance(b, int)).decode("utf-8", "replace")
            except (TypeError, ValueError):
                msg = ""
        if not isinstance(msg, str):
            return []
        jts = None
        us = rec.get("__REALTIME_TIMESTAMP")
        if isinstance(us, str) and us.isdigit():
            try:
                jts = datetime.fromtimestamp(int(us) / 1e6, UTC).isoformat()
            except (OverflowError, ValueError, OSError):
                jts = None
        ident = rec.get("SYSLOG_IDENTIFIER")
        systemd = ident in _SYSTEMD_IDENTS
        out: list[LogEvent] = []
        for part in msg.split("\n") if "\n" in msg else (msg,):
            out.extend(self._on_message(part.rstrip("\r"), jts, systemd))
        return out

    def _on_message(self, msg: str, jts: str | None, systemd: bool) -> list[LogEvent]:
        """A message with any journal prefix removed: split SGLang's or vLLM's header."""
        ts = jts
        rank: str | None = None
        record = systemd
        vkey: str | None = None
        if msg[:1] == "(" and " pid=" in msg[:64]:
            j = msg.find(") ")
            if j > 0:
                msg = msg[j + 2 :]
                self._vllm = self._vllm or self._engine is None
        c = msg[:1]
        if c == "[" and msg[5:6] == "-":
            j = msg.find("] ")
            if j > 0:
                head = msg[1:j]
                ts = head[:19]
                tail = head[19:]
                if tail[:1] == ".":
                    k = tail.find(" ")
                    ts = head[: 19 + (k if k >= 0 else len(tail))]
                    tail = tail[k:] if k >= 0 else ""
                rank = tail.strip() or None
                msg = msg[j + 2 :]
                record = True
        elif c in "IWEDC" and msg[:5] in _VLLM_LEVEL_PREFIXES:
            m = _VLLM_RE.match(msg)
            if m is not None:
                ts = m.group(2)
                vkey = m.group(3)
                msg = msg[m.end() :]
                record = True
                if self._engine is None:
                    self._vllm = True
        if not record and (
            msg.startswith(_SYSTEMD_PREFIXES) or (".service: " in msg and msg[:1] != " ")
        ):
            systemd = record = True
        return self._on_body(msg, ts, rank, record, systemd, vkey)

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
            if self._continues(group, body, record, vkey):
                return out
            out.extend(self._close_group())
        if systemd:
            out.extend(self._on_systemd(body, ts))
            return out
        if not body:
            return out
        sp = body.find(" ")
        head = body[:sp] if sp > 0 else body
        # Statistics lines (the bulk of a busy log) cannot hold a traceback: skip the scan.
        if head not in _STATS_HEADS and "Traceback (most recent call last)" in body:
            self._open_group(body, ts, rank, vkey)
            return out
        eq = head.find("=")
        if eq > 0:
            head = head[:eq]
        handler = _HEADS.get(head)
        if handler is not None:
            events = handler(self, body, ts, rank)
            if events:
                if not self._weights_started and not isinstance(
                    events[0], ProcessStarting | TuningWarning | FatalError
                ):
                    self._weights_started = True  # the server got past argument handling
                out.extend(events)
        elif "hit an exception" in body:
            # "Scheduler hit an exception: <message>" without a traceback on the line.
            self._open_group(body, ts, rank, vkey)
        elif record and "Exception in ASGI application" in body:
            self._after_asgi_error = True
        elif ": error: " in body and (".py: error:" in body or body.startswith("sglang")):
            out.append(self._fatal_now(FatalCause.BAD_ARGUMENT, body, ts, rank))
        elif "NCCL" in body and ("ProcessGroupNCCL" in body or "NCCL error" in body):
            out.extend(self._consequence(body, ts, rank))
        return out

    # -- traceback groups ---------------------------------------------------------------------

    def _open_group(self, body: str, ts: str | None, rank: str | None, vkey: str | None) -> None:
        group = _Group(timestamp=ts, rank=rank, header_key=vkey, fatal=not self._after_asgi_error)
        self._after_asgi_error = False
        group.add(body)
        self._group = group

    def _continues(self, group: _Group, body: str, record: bool, vkey: str | None) -> bool:
        """Whether ``body`` belongs to the open group (and if so, absorb it)."""
        if record and not (vkey is not None and vkey == group.header_key):
            return False
        if group.pending_close:
            if not body.strip():
                return True
            if body.startswith(_CHAIN_MARKERS):
                group.pending_close = False
                group.seen_exception = False
                group.seen_frame = False
                group.add(body)
                return True
            return False
        if not body.strip():
            if group.seen_exception:
                group.pending_close = True
            return True
        if body.startswith("  File ") or body.startswith("File "):
            group.seen_frame = True
        elif (
            group.seen_frame
            and not group.seen_exception
            and not body[0].isspace()
            and not body.startswith("Traceback")
        ):
            group.seen_exception = True
        group.add(body)
        return True

    def _close_group(self) -> list[LogEvent]:
        group = self._group
        if group is None:
            return []
        self._group = None
        if not group.fatal:
            return []
        cause, proof = classify_fatal(
            group.classification_lines(), before_weights=not self._weights_started
        )
        if (
            self._fatal_seen
            and cause is FatalCause.UNKNOWN_TRACEBACK
            and any(text in proof for text in _CONSEQUENCE_TEXTS)
        ):
            return []  # e.g. vLLM's front end re-raising "See root cause above."
        self._fatal_seen = True
        return [
            FatalError(
                timestamp=group.timestamp,
                rank=group.rank,
                cause=cause,
                summary=proof,
                excerpt=group.excerpt(),
                fixes=FIXES[cause],
                before_weights=not self._weights_started,
            )
        ]

    def _fatal_now(
        self, cause: FatalCause, text: str, ts: str | None, rank: str | None
    ) -> FatalError:
        self._fatal_seen = True
        return FatalError(
            timestamp=ts,
            rank=rank,
            cause=cause,
            summary=text.strip(),
            excerpt=text,
            fixes=FIXES[cause],
            before_weights=not self._weights_started,
        )

    def _consequence(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        """A line that reports a death: a fatal event unless one was already reported."""
        if self._fatal_seen:
            return []
        cause, _ = classify_fatal((body,), before_weights=not self._weights_started)
        return [self._fatal_now(cause, body, ts, rank)]

    def _reset_start(self) -> None:
        self._weights_begin.clear()
        self._weights_end.clear()
        self._kv.clear()
        self._weights_started = False
        self._fatal_seen = False
        self._stopping = False

    # -- SGLang handlers ----------------------------------------------------------------------

    def _on_decode(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if not body.startswith("Decode batch"):
            return []
        if body[12:14] == ", ":  # the common (v0.5.5+) form, without the iteration counter
            rest = body[14:].rstrip(", ")
            kv = _decode_fast(rest) or _key_values(rest, _DECODE_KEYS)
        else:
            split = _stats_rest(body, 12)
            if split is None:
                return []
            kv = _key_values(split[1], _DECODE_KEYS)
            kv["iteration"] = split[0]
        return [DecodeStats(timestamp=ts, rank=rank, **kv)]  # type: ignore[arg-type]

    def _on_prefill(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if not body.startswith("Prefill batch"):
            return []
        if body[13:15] == ", ":
            kv = _key_values(body[15:].rstrip(", "), _PREFILL_KEYS)
        else:
            split = _stats_rest(body, 13)
            if split is None:
                return []
            kv = _key_values(split[1], _PREFILL_KEYS)
            kv["iteration"] = split[0]
        return [PrefillStats(timestamp=ts, rank=rank, **kv)]  # type: ignore[arg-type]

    def _on_load_weight(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        key = rank or ""
        if body.startswith("Load weight begin"):
            n = self._weights_begin.get(key, 0)
            self._weights_begin[key] = n + 1
            self._weights_started = True
            return [
                WeightsBegin(
                    timestamp=ts,
                    rank=rank,
                    role=Role.TARGET if n == 0 else Role.DRAFT,
                    avail_mem_gb=_num_after(body, "avail mem="),
                )
            ]
        if body.startswith("Load weight end"):
            n = self._weights_end.get(key, 0)
            self._weights_end[key] = n + 1
            self._weights_started = True
            return [
                WeightsEnd(
                    timestamp=ts,
                    rank=rank,
                    role=Role.TARGET if n == 0 else Role.DRAFT,
                    elapsed_s=_num_after(body, "elapsed="),
                    model_type=_word_after(body, "type="),
                    dtype=_word_after(body, "dtype="),
                    avail_mem_gb=_num_after(body, "avail mem="),
                    mem_usage_gb=_num_after(body, "mem usage="),
                )
            ]
        return self._on_vllm_model_loading(body, ts, rank)

    def _on_kv(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if not body.startswith("KV Cache is allocated"):
            return []
        key = rank or ""
        n = self._kv.get(key, 0)
        self._kv[key] = n + 1
        k = _num_after(body, ", K size: ")
        v = _num_after(body, ", V size: ")
        kv = _num_after(body, "KV size: ")
        if kv is None and k is not None and v is not None:
            kv = round(k + v, 4)
        return [
            KVCacheAllocated(
                timestamp=ts,
                rank=rank,
                role=Role.TARGET if n == 0 else Role.DRAFT,
                num_tokens=_int_after(body, "#tokens: "),
                dtype=_word_after(body, "dtype: "),
                k_size_gb=k,
                v_size_gb=v,
                kv_size_gb=kv,
            )
        ]

    def _on_memory_pool(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if body.startswith("Memory pool end"):
            return [
                MemoryPoolEnd(timestamp=ts, rank=rank, avail_mem_gb=_num_after(body, "avail mem="))
            ]
        return []

    def _on_capture(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        lower = body.lower()
        g = lower.find("cuda graph")
        if g < 0:
            return []
        after = lower[g + 10 :].lstrip()
        if after.startswith("failed"):
            # "Capture cuda graph failed: ..." outside a traceback: the graph OOM recipe.
            return [self._fatal_now(FatalCause.CUDA_GRAPH_CAPTURE_FAILED, body, ts, rank)]
        stage = body[8:g].strip()
        role = Role.DRAFT if "draft" in stage.lower() else Role.TARGET
        if after.startswith("begin"):
            return [
                CudaGraphBegin(
                    timestamp=ts,
                    rank=rank,
                    stage=stage,
                    role=role,
                    avail_mem_gb=_num_after(body, "avail mem="),
                    backend=_word_after(body, "backend="),
                    num_tokens_per_req=_int_after(body, "num_tokens_per_req="),
                    batch_sizes=_int_list_after(body, "bs=["),
                )
            ]
        if after.startswith("end"):
            elapsed = _num_after(body, "elapsed=")
            if elapsed is None:
                elapsed = _num_after(body, "Time elapsed:")
            return [
                CudaGraphEnd(
                    timestamp=ts,
                    rank=rank,
                    stage=stage,
                    role=role,
                    elapsed_s=elapsed,
                    mem_usage_gb=_num_after(body, "mem usage="),
                    avail_mem_gb=_num_after(body, "avail mem="),
                )
            ]
        return []

    def _on_capacity(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        values: dict[str, str] = {}
        for piece in body.split(", "):
            k, sep, v = piece.partition("=")
            if sep:
                values[k.strip()] = v.strip()

        def as_int(name: str) -> int | None:
            raw = values.get(name)
            if raw is None:
                return None
            try:
                return int(raw)
            except ValueError:
                return None

        mem_raw = values.get("available_gpu_mem", values.get("available_cpu_mem"))
        mem: float | None = None
        if mem_raw is not None:
            try:
                mem = float(mem_raw.split()[0])
            except (ValueError, IndexError):
                mem = None
        return [
            Capacity(
                timestamp=ts,
                rank=rank,
                max_total_num_tokens=as_int("max_total_num_tokens"),
                chunked_prefill_size=as_int("chunked_prefill_size"),
                max_prefill_tokens=as_int("max_prefill_tokens"),
                max_running_requests=as_int("max_running_requests"),
                context_len=as_int("context_len"),
                available_gpu_mem_gb=mem,
            )
        ]

    def _on_the(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if body.startswith("The server is fired up and ready to roll"):
            return [Ready(timestamp=ts, rank=rank)]
        if body.startswith("The memory capacity is unbalanced"):
            return [
                TuningWarning(
                    timestamp=ts, rank=rank, warning=WarningKind.MEMORY_UNBALANCED, text=body
                )
            ]
        return []

    def _on_init(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        # Logged once per model runner: target and draft each print it, so it does not reset
        # the target/draft order (``server_args=`` and systemd's ``Started`` do).
        if body.startswith("Init torch distributed begin"):
            return [ProcessStarting(timestamp=ts, rank=rank, text=body)]
        return []

    def _on_server_args(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        # The first line a new SGLang process logs: a new start begins.
        if body.startswith("server_args="):
            self._reset_start()
        return []

    def _on_max_reset(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if body.startswith("Max running requests is reset to"):
            return [
                TuningWarning(
                    timestamp=ts,
                    rank=rank,
                    warning=WarningKind.MAX_RUNNING_REQUESTS_RESET,
                    text=body,
                    value=_int_after(body, "reset to "),
                )
            ]
        return []

    def _on_max_reduced(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if body.startswith("max_running_requests was reduced"):
            return [
                TuningWarning(
                    timestamp=ts,
                    rank=rank,
                    warning=WarningKind.MAX_RUNNING_REQUESTS_REDUCED,
                    text=body,
                    requested=_int_after(body, "requested "),
                    value=_int_after(body, " to "),
                )
            ]
        return []

    def _on_draft_adjusted(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if body.startswith("speculative_num_draft_tokens is adjusted"):
            return [
                TuningWarning(
                    timestamp=ts, rank=rank, warning=WarningKind.DRAFT_TOKENS_ADJUSTED, text=body
                )
            ]
        return []

    def _on_mixed(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if body.startswith("Mixed chunked prefill is disabled"):
            return [
                TuningWarning(
                    timestamp=ts, rank=rank, warning=WarningKind.MIXED_CHUNK_DISABLED, text=body
                )
            ]
        return []

    def _on_overlap(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if body.startswith("Overlap scheduler is disabled") or body.startswith("Spec v1 is used"):
            return [
                TuningWarning(
                    timestamp=ts, rank=rank, warning=WarningKind.OVERLAP_DISABLED, text=body
                )
            ]
        return []

    def _on_not_enough(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if _signature(body) is FatalCause.KV_CACHE_NO_MEMORY:
            return [self._fatal_now(FatalCause.KV_CACHE_NO_MEMORY, body, ts, rank)]
        return []

    def _on_rank_died(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if "died during initialization" not in body:
            return []
        if "exit code: -9" in body:
            # SIGKILL leaves no traceback: this line is the primary evidence.
            return [self._fatal_now(FatalCause.SCHEDULER_KILLED, body, ts, rank)]
        return self._consequence(body, ts, rank)

    def _on_sigquit(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if body.startswith("Received sigquit"):
            return self._consequence(body, ts, rank)
        return []

    def _on_init_failed(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if body.startswith("Initialization failed"):
            return self._consequence(body, ts, rank)
        return []

    def _on_health(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if body.startswith("Health check failed"):
            return [
                TuningWarning(
                    timestamp=ts, rank=rank, warning=WarningKind.HEALTH_CHECK_FAILED, text=body
                )
            ]
        return []

    def _on_systemd(self, body: str, ts: str | None) -> list[LogEvent]:
        if body.startswith(("Stopping ", "Stopped ")):
            self._stopping = True
            return []
        if body.startswith(("Started ", "Starting ")):
            self._reset_start()
            return []
        i = body.find("Main process exited, code=")
        if i >= 0:
            code = _word_after(body, "code=") or ""
            status = _word_after(body, "status=") or ""
            status = status.rstrip(".")
            expected = self._stopping or status in ("0/SUCCESS", "15/TERM")
            out: list[LogEvent] = [
                ServiceExited(timestamp=ts, code=code, status=status, expected=expected)
            ]
            if not expected:
                out.extend(self._consequence(body, ts, None))
            return out
        if "OOM killer" in body or "oom-kill" in body:
            return self._consequence(body, ts, None)
        return []

    # -- vLLM handlers ------------------------------------------------------------------------

    def _on_vllm_kv(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if body.startswith("GPU KV cache size:"):
            return [
                KVCacheAllocated(
                    timestamp=ts, rank=rank, num_tokens=_int_after(body, "GPU KV cache size:")
                )
            ]
        return []

    def _on_vllm_concurrency(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if body.startswith("Maximum concurrency for"):
            return [
                Capacity(
                    timestamp=ts,
                    rank=rank,
                    context_len=_int_after(body, "Maximum concurrency for"),
                    max_concurrency=_num_after(body, "per request:"),
                )
            ]
        return []

    def _on_vllm_spec(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if not body.startswith("SpecDecoding metrics"):
            return []
        # "Avg Draft acceptance rate: 56.4%" (newer) / "Draft acceptance rate: 56.4%" (older)
        rate = _num_after(body, "Draft acceptance rate:")
        if rate is not None:
            rate = rate / 100.0
        per_pos: tuple[float, ...] = ()
        i = body.find("Per-position acceptance rate:")
        if i >= 0:
            tail = body[i + 29 :]
            end = tail.find(", Avg")
            if end >= 0:
                tail = tail[:end]
            vals: list[float] = []
            for piece in tail.split(","):
                try:
                    vals.append(float(piece.strip()))
                except ValueError:
                    break
            per_pos = tuple(vals)
        return [
            SpecStats(
                timestamp=ts,
                rank=rank,
                accept_len=_num_after(body, "Mean acceptance length:"),
                accept_rate=rate,
                accepted_tokens=_int_after(body, "Accepted:"),
                drafted_tokens=_int_after(body, "Drafted:"),
                per_position=per_pos,
            )
        ]

    def _on_vllm_engine(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if "Avg generation throughput" not in body:
            return []
        usage = _num_after(body, "GPU KV cache usage:")
        return [
            DecodeStats(
                timestamp=ts,
                rank=rank,
                running_req=_int_after(body, "Running:"),
                queue_req=_int_after(body, "Waiting:"),
                token_usage=usage / 100.0 if usage is not None else None,
                gen_throughput=_num_after(body, "Avg generation throughput:"),
            )
        ]

    def _on_uvicorn(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if "Application startup complete" in body and (self._vllm or self._engine is Engine.VLLM):
            return [Ready(timestamp=ts, rank=rank)]
        return []

    def _on_vllm_starting(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if body.startswith("Starting to load model"):
            key = rank or ""
            n = self._weights_begin.get(key, 0)
            self._weights_begin[key] = n + 1
            self._weights_started = True
            return [
                WeightsBegin(timestamp=ts, rank=rank, role=Role.TARGET if n == 0 else Role.DRAFT)
            ]
        return []

    def _on_vllm_model_loading(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        # "Model loading took 15.23 GiB and 5.31 seconds" (the summed target + draft load).
        if body.startswith("Model loading took"):
            key = rank or ""
            n = self._weights_end.get(key, 0)
            self._weights_end[key] = n + 1
            self._weights_started = True
            return [
                WeightsEnd(
                    timestamp=ts,
                    rank=rank,
                    role=Role.TARGET,
                    mem_usage_gb=_num_after(body, "took"),
                    elapsed_s=_num_after(body, "GiB and"),
                )
            ]
        return []

    def _on_vllm_graph(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        if body.startswith("Graph capturing finished"):
            return [
                CudaGraphEnd(
                    timestamp=ts,
                    rank=rank,
                    elapsed_s=_num_after(body, "finished in"),
                    mem_usage_gb=_num_after(body, "took"),
                )
            ]
        if body.startswith("Capturing CUDA graph"):
            return [CudaGraphBegin(timestamp=ts, rank=rank)]
        return []


_HEADS: dict[str, _Handler] = {
    "Decode": LogParser._on_decode,
    "Prefill": LogParser._on_prefill,
    "Load": LogParser._on_load_weight,
    "KV": LogParser._on_kv,
    "Memory": LogParser._on_memory_pool,
    "Capture": LogParser._on_capture,
    "max_total_num_tokens": LogParser._on_capacity,
    "The": LogParser._on_the,
    "Init": LogParser._on_init,
    "server_args": LogParser._on_server_args,
    "Max": LogParser._on_max_reset,
    "max_running_requests": LogParser._on_max_reduced,
    "speculative_num_draft_tokens": LogParser._on_draft_adjusted,
    "Mixed": LogParser._on_mixed,
    "Overlap": LogParser._on_overlap,
    "Spec": LogParser._on_overlap,
    "Not": LogParser._on_not_enough,
    "Loaded": LogParser._on_not_enough,
    "Rank": LogParser._on_rank_died,
    "Received": LogParser._on_sigquit,
    "Initialization": LogParser._on_init_failed,
    "Health": LogParser._on_health,
    # vLLM
    "GPU": LogParser._on_vllm_kv,
    "Maximum": LogParser._on_vllm_concurrency,
    "SpecDecoding": LogParser._on_vllm_spec,
    "Engine": LogParser._on_vllm_engine,
    "INFO:": LogParser._on_uvicorn,
    "Application": LogParser._on_uvicorn,
    "Starting": LogParser._on_vllm_starting,
    "Model": LogParser._on_vllm_model_loading,
    "Loading": LogParser._on_vllm_model_loading,
    "Graph": LogParser._on_vllm_graph,
    "Capturing": LogParser._on_vllm_graph,
}
"""First word of a message -> its handler: one dict lookup routes every line."""


def parse_lines(lines: Iterable[str], engine: Engine | None = None) -> list[LogEvent]:
    """Parse a complete log (e.g. a saved file) into events, flushing at the end."""
    parser = LogParser(engine)
    out = parser.feed_lines(lines)
    out.extend(parser.flush())
    return out
