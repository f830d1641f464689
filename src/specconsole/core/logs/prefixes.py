"""The prefix layer: strip what log collectors and process launchers put before a message.

Why it exists: users paste, and boxes stream, the same server output through many hands —
``journalctl`` in any of its output modes, ``docker`` / ``docker compose logs``, ``kubectl
logs`` or a node's CRI log file, Ray's process prefixes, supervisord — and each engine release
puts its own time/rank header before the message. The engines' handlers see only the message,
whatever wrapped it, in any combination.

It is table-driven: :data:`OUTER` lists the collector prefixes (each row: a name, the first
characters it can start with, its stripper and a real-shaped example that the tests check),
stripped repeatedly outermost first (a compose prefix around a docker timestamp around a
message); then a Ray process prefix; then the engine's own header, read by the header readers
of the grammars in use (:func:`strip_engine_header`, dispatched on the first character).

How it stays fast (every line pays for it): one dict lookup on the line's first character
selects the candidate rows, and each stripper is ``str.find`` / slicing, no regex on the
common path. A line no row recognises passes unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .grammar import Header

__all__ = [
    "GENERIC_HEADERS",
    "OUTER",
    "OuterPrefix",
    "json_record",
    "ray_prefix",
    "strip_engine_header",
    "strip_outer",
    "torch_rank",
]

# ---------------------------------------------------------------------------------------------
# Collector prefixes (outermost): (rest, timestamp, identifier) or None
# ---------------------------------------------------------------------------------------------

Stripped = tuple[str, "str | None", "str | None"]
"""(the rest of the line, the collector's timestamp, the journal identifier / source)."""

_MONTHS = frozenset(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
)
_DAYS = frozenset(("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"))
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_SUPERVISOR_LEVELS = frozenset(("CRIT", "ERRO", "WARN", "INFO", "DEBG", "TRAC", "BLAT"))


def split_journal(raw: str, ts_end: int) -> Stripped | None:
    """Split ``TS HOST IDENT[PID]: MESSAGE`` (journalctl short modes) at a known TS width.

    Returns (message, timestamp, identifier), or ``None`` when the line is not of that form.
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
    return raw[colon + 2 :], raw[:sp], ident


def _journal_short(raw: str) -> Stripped | None:
    # -o short / short-precise: "Jul 20 10:27:57[.123456] host ident[pid]: "
    if raw[:3] in _MONTHS and raw[3:4] == " " and raw[9:10] == ":":
        return split_journal(raw, 15)
    return None


def _journal_full(raw: str) -> Stripped | None:
    # -o short-full: "Mon 2026-07-20 10:27:57 UTC host ident[pid]: "
    if raw[:3] in _DAYS and raw[3:4] == " " and raw[8:9] == "-" and raw[14:15] == " ":
        return split_journal(raw, 24)
    return None


def _iso_timestamped(raw: str) -> Stripped | None:
    """``2026-07-20T10:27:57...`` first: journal short-iso, a CRI log file, or docker -t."""
    if raw[4:5] != "-" or raw[10:11] != "T" or raw[13:14] != ":":
        return None
    sp = raw.find(" ", 19)
    if sp < 0:
        return None
    ts = raw[:sp]
    rest = raw[sp + 1 :]
    # CRI (kubelet's /var/log/pods files): "TS stdout F message" (P = a partial line)
    if rest[:7] in ("stdout ", "stderr ") and rest[7:8] in ("F", "P") and rest[8:9] == " ":
        return rest[9:], ts, None
    # journalctl -o short-iso / short-iso-precise: "TS host ident[pid]: message"
    if not ts.endswith("Z"):
        split = split_journal(raw, 19)
        if split is not None:
            return split
    # docker logs -t / kubectl logs --timestamps: "TS message"
    return rest, ts, None


def _digit_first(raw: str) -> Stripped | None:
    if raw[4:5] == "-":
        if raw[10:11] == "T":
            return _iso_timestamped(raw)
        # supervisord's own log: "2026-07-20 10:27:57,123 INFO exited: sglang (...)"
        if raw[10:11] == " " and raw[19:20] == "," and raw[24:28] in _SUPERVISOR_LEVELS:
            return raw[29:].lstrip(), raw[:23], "supervisord"
        return None
    # -o short-unix: "1784543277.123456 host ident[pid]: "
    if raw[10:11] == "." and raw[:10].isdigit():
        return split_journal(raw, 11)
    return None


def _bracket_first(raw: str) -> Stripped | None:
    c1 = raw[1:2]
    if c1 == "p" and raw.startswith("[pod/"):
        # kubectl logs --prefix: "[pod/NAME/CONTAINER] message"
        end = raw.find("] ", 5)
        if end > 0 and " " not in raw[:end]:
            return raw[end + 2 :], None, None
        return None
    if c1 in _MONO_START and raw[5:6] != "-":
        # -o short-monotonic: "[  123.456789] host ident[pid]: " (not SGLang's "[2026-")
        end = raw.find("]")
        if end > 1 and raw[1:end].strip().replace(".", "", 1).isdigit():
            return split_journal(raw, end + 1)
    return None


_MONO_START = frozenset(" 0123456789")
_COMPOSE_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _compose(raw: str) -> Stripped | None:
    """``docker compose logs`` and its relatives: a container's name, padded, then ``|``.

    Compose names a container ``<service>-<n>`` (v2) or ``<project>_<service>_<n>`` (v1),
    or the ``container_name:`` its file sets (no instance number; compose v2 pads every name
    to the longest plus one, so at least two spaces come before the bar); podman-compose
    writes ``[service]`` (padded, or not at all: ``[vllm_1]| msg``). A name without an
    instance number needs the padding or the brackets, so a message that merely holds a
    ``word | word`` is never taken for a prefix.
    """
    bar = raw.find("|", 1, 96)
    if bar < 0:
        return None
    after = raw[bar + 1 : bar + 2]
    if after not in (" ", ""):
        return None
    name = raw[:bar].rstrip(" ")
    pad = bar - len(name)
    if name[:1] == "[" and name[-1:] == "]":  # podman-compose
        name = name[1:-1]
        if not name or any(ch not in _COMPOSE_NAME for ch in name):
            return None
        return raw[bar + 2 :], None, name
    if not name or pad < 1 or any(ch not in _COMPOSE_NAME for ch in name):
        return None
    k = len(name)
    while k > 0 and name[k - 1].isdigit():
        k -= 1
    numbered = 2 <= k < len(name) and name[k - 1] in "-_"
    if not numbered and (pad < 2 or not name[:1].isalpha()):
        return None
    return raw[bar + 2 :], None, name


@dataclass(frozen=True, slots=True)
class OuterPrefix:
    """One collector prefix: which first characters it can start with and how to strip it."""

    name: str
    starts: str
    strip: Callable[[str], Stripped | None]
    example: str
    """A real-shaped line (written for this project) whose message is ``MESSAGE``."""


_DIGITS = "0123456789"
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_NAME_STARTS = _LETTERS + _DIGITS

OUTER: tuple[OuterPrefix, ...] = (
    OuterPrefix(
        "journalctl -o short",
        "JFMASOND",
        _journal_short,
        "Jul 20 10:27:57 gpu-box python3[48211]: MESSAGE",
    ),
    OuterPrefix(
        "journalctl -o short-precise",
        "JFMASOND",
        _journal_short,
        "Jul 20 10:27:57.123456 gpu-box python3[48211]: MESSAGE",
    ),
    OuterPrefix(
        "journalctl -o short-full",
        "MTWFS",
        _journal_full,
        "Mon 2026-07-20 10:27:57 UTC gpu-box python3[48211]: MESSAGE",
    ),
    OuterPrefix(
        "journalctl -o short-iso",
        _DIGITS,
        _digit_first,
        "2026-07-20T10:27:57+0000 gpu-box python3[48211]: MESSAGE",
    ),
    OuterPrefix(
        "journalctl -o short-iso-precise",
        _DIGITS,
        _digit_first,
        "2026-07-20T10:27:57.123456+00:00 gpu-box llm-eagle.sh[48211]: MESSAGE",
    ),
    OuterPrefix(
        "journalctl -o short-unix",
        _DIGITS,
        _digit_first,
        "1784543277.123456 gpu-box python3[48211]: MESSAGE",
    ),
    OuterPrefix(
        "journalctl -o short-monotonic",
        "[",
        _bracket_first,
        "[  812.345678] gpu-box python3[48211]: MESSAGE",
    ),
    OuterPrefix(
        "docker logs -t / kubectl logs --timestamps",
        _DIGITS,
        _digit_first,
        "2026-07-20T10:27:57.123456789Z MESSAGE",
    ),
    OuterPrefix(
        "CRI log file (kubelet)",
        _DIGITS,
        _digit_first,
        "2026-07-20T10:27:57.123456789Z stdout F MESSAGE",
    ),
    OuterPrefix(
        "kubectl logs --prefix",
        "[",
        _bracket_first,
        "[pod/llm-eagle-7d9c4b-x2x5q/server] MESSAGE",
    ),
    OuterPrefix(
        "docker compose logs",
        _NAME_STARTS,
        _compose,
        "server-1  | MESSAGE",
    ),
    OuterPrefix(
        "docker-compose v1 logs",
        _NAME_STARTS,
        _compose,
        "deploy_server_1   | MESSAGE",
    ),
    OuterPrefix(
        "docker compose logs, container_name set",
        _NAME_STARTS,
        _compose,
        "vllm-server  | MESSAGE",
    ),
    OuterPrefix(
        "podman-compose logs",
        "[",
        _compose,
        "[vllm_1]     | MESSAGE",
    ),
    OuterPrefix(
        "supervisord",
        _DIGITS,
        _digit_first,
        "2026-07-20 10:27:57,123 INFO MESSAGE",
    ),
)
"""Collector prefixes; the JSON forms (journal ``-o json``, docker's json-file) are
:func:`json_record`."""


def _dispatch() -> dict[str, tuple[Callable[[str], Stripped | None], ...]]:
    table: dict[str, list[Callable[[str], Stripped | None]]] = {}
    for row in OUTER:
        for ch in row.starts:
            fns = table.setdefault(ch, [])
            if row.strip not in fns:
                fns.append(row.strip)
    return {ch: tuple(fns) for ch, fns in table.items()}


_BY_FIRST = _dispatch()
_MAX_LAYERS = 4


def strip_outer(raw: str) -> Stripped:
    """Strip collector prefixes (up to a few nested) from ``raw``.

    Returns (message, the outermost timestamp found, the innermost identifier found).
    """
    if "\x1b" in raw:
        raw = _ANSI_RE.sub("", raw)
    ts: str | None = None
    ident: str | None = None
    for _ in range(_MAX_LAYERS):
        fns = _BY_FIRST.get(raw[:1])
        if fns is None:
            break
        for fn in fns:
            got = fn(raw)
            if got is not None:
                raw = got[0]
                ts = ts or got[1]
                ident = got[2] or ident
                break
        else:
            break
    return raw, ts, ident


def json_record(raw: str) -> tuple[list[str], str | None, str | None] | None:
    """A JSON log record: journal ``-o json`` (``MESSAGE``) or docker's json-file (``log``).

    Returns (message lines, timestamp, identifier), ``([], None, None)`` for JSON that is not a
    log record, or ``None`` when ``raw`` is not JSON at all.
    """
    try:
        rec = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(rec, dict):
        return [], None, None
    ts: str | None = None
    msg = rec.get("MESSAGE")
    if msg is None and isinstance(rec.get("log"), str):
        msg = rec["log"].rstrip("\n")
        t = rec.get("time")
        ts = t if isinstance(t, str) else None
    if isinstance(msg, list):
        try:
            msg = bytes(b & 0xFF for b in msg if isinstance(b, int)).decode("utf-8", "replace")
        except (TypeError, ValueError):
            msg = ""
    if not isinstance(msg, str):
        return [], None, None
    us = rec.get("__REALTIME_TIMESTAMP")
    if isinstance(us, str) and us.isdigit():
        try:
            ts = datetime.fromtimestamp(int(us) / 1e6, UTC).isoformat()
        except (OverflowError, ValueError, OSError):
            ts = None
    ident = rec.get("SYSLOG_IDENTIFIER")
    parts = [p.rstrip("\r") for p in msg.split("\n")] if "\n" in msg else [msg]
    return parts, ts, ident if isinstance(ident, str) else None


# ---------------------------------------------------------------------------------------------
# Process prefixes (innermost but one): Ray's, PyTorch distributed's; then the engine's header
# ---------------------------------------------------------------------------------------------


def ray_prefix(msg: str) -> tuple[str, bool] | None:
    """Ray's (and multiprocessing launchers') process prefix: ``(pid=1234) ``,
    ``(APIServer pid=12) ``, ``(EngineCore_DP0 pid=7) ``, ``(RayWorkerWrapper pid=9,
    ip=10.0.0.2) ``; (rest, whether the process was named)."""
    j = msg.find(") ", 1, 120)
    if j < 0:
        return None
    inner = msg[1:j]
    p = inner.find("pid=")
    if p < 0 or not inner[p + 4 : p + 5].isdigit():
        return None
    return msg[j + 2 :], p > 0


def torch_rank(msg: str) -> Header | None:
    """PyTorch distributed's ``[rank0]: message``: it continues the record it belongs to."""
    if msg[1:5] != "rank":
        return None
    j = msg.find("]:", 5, 16)
    if j > 0 and msg[5:j].isdigit():
        rest = msg[j + 3 :] if msg[j + 2 : j + 3] == " " else msg[j + 2 :]
        return rest, None, msg[1:j], None, False
    return None


GENERIC_HEADERS: tuple[tuple[str, str], ...] = (
    ("PyTorch distributed rank", "[rank0]: MESSAGE"),
    ("Ray worker", "(pid=48211) MESSAGE"),
    ("Ray worker with ip", "(RayWorkerWrapper pid=48420, ip=10.0.0.2) MESSAGE"),
)
"""The process prefixes every engine's lines may carry, each with an example for the tests
(the engines' own headers are their grammars' ``header_examples``)."""

Reader = tuple[Callable[[str], "Header | None"], tuple[str, ...]]
"""A header reader and the engines it proves are speaking (``()``: proves none)."""


def strip_engine_header(
    msg: str, readers: dict[str, tuple[Reader, ...]], named: tuple[str, ...]
) -> tuple[Header, tuple[str, ...]]:
    """Strip a Ray process prefix, then PyTorch's ``[rankN]:`` or the first header ``readers``
    (keyed by the message's first character) recognises; with the engines the line shows
    are speaking (``named`` when the Ray prefix names its process)."""
    heard: tuple[str, ...] = ()
    c = msg[:1]
    if c == "(":
        got = ray_prefix(msg)
        if got is not None:
            msg, was_named = got
            if was_named:
                heard = named
            c = msg[:1]
    if c == "[" and msg[1:5] == "rank":
        header = torch_rank(msg)
        if header is not None:
            return header, heard
    for read, engines in readers.get(c, ()):
        header = read(msg)
        if header is not None:
            return header, (heard + engines if engines else heard)
    return (msg, None, None, None, False), heard
