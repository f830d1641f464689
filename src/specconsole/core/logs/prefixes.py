"""The prefix layer: strip what log collectors and the engines put before a message.

Why it exists: users paste, and boxes stream, the same server output through many hands —
``journalctl`` in any of its output modes, ``docker`` / ``docker compose logs``, ``kubectl
logs`` or a node's CRI log file, Ray's process prefixes, supervisord — and each SGLang or vLLM
release puts its own time/rank header before the message. The engine parsers (:mod:`.sglang`,
:mod:`.vllm`) see only the message, whatever wrapped it, in any combination.

It is table-driven: :data:`OUTER` lists the collector prefixes (each row: a name, the first
characters it can start with, its stripper and a real-shaped example that the tests check),
stripped repeatedly outermost first (a compose prefix around a docker timestamp around a
message); then a Ray process prefix; then the engine's own header (:data:`ENGINE_HEADERS`).

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

__all__ = [
    "ENGINE_HEADERS",
    "OUTER",
    "Header",
    "OuterPrefix",
    "json_record",
    "sglang_bracket",
    "strip_engine_header",
    "strip_outer",
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
    # docker compose logs: "sglang-1  | message" (name padded to the longest service name)
    bar = raw.find(" | ", 1, 96)
    if bar < 0:
        bar = raw.find(" |", 1, 96)
        if bar < 0 or bar + 2 != len(raw):
            return None
    name = raw[:bar].rstrip(" ")
    # compose names its containers "<service>-<n>" (v2) or "<project>_<service>_<n>" (v1)
    k = len(name)
    while k > 0 and name[k - 1].isdigit():
        k -= 1
    if k < 2 or k == len(name) or name[k - 1] not in "-_":
        return None
    if any(ch not in _COMPOSE_NAME for ch in name):
        return None
    return raw[bar + 3 :], None, name


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
        "2026-07-20T10:27:57.123456+00:00 gpu-box sglang-eagle.sh[48211]: MESSAGE",
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
        "[pod/sglang-eagle-7d9c4b-x2x5q/server] MESSAGE",
    ),
    OuterPrefix(
        "docker compose logs",
        _NAME_STARTS,
        _compose,
        "sglang-1  | MESSAGE",
    ),
    OuterPrefix(
        "docker-compose v1 logs",
        _NAME_STARTS,
        _compose,
        "deploy_sglang_1   | MESSAGE",
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
# Engine headers (innermost): a Ray process prefix, then SGLang's or vLLM's own header
# ---------------------------------------------------------------------------------------------

Header = tuple[str, "str | None", "str | None", "str | None", bool, bool]
"""(message, timestamp, rank, vLLM ``[file.py:N]`` key, whether a new log record starts here,
whether it looked like vLLM)."""

# vLLM: "INFO 07-20 10:27:57[.123] [file.py:123] message" (older: "... file.py:123] message")
_VLLM_RE = re.compile(
    r"(INFO|WARNING|ERROR|DEBUG|CRITICAL) (\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)? "
    r"(?:\[([^\]]*)\]|([\w.]+\.py:\d+)\]) "
)
_VLLM_LEVEL_PREFIXES = frozenset(("INFO ", "WARNI", "ERROR", "DEBUG", "CRITI"))
_RANK_WORDS = ("TP", "DP", "PP", "EP", "CP")


def _is_rank_word(word: str) -> bool:
    return len(word) > 2 and word[:2] in _RANK_WORDS and word[2:].isdigit()


def _ray(msg: str) -> tuple[str, bool] | None:
    """Ray's process prefix: ``(pid=1234) ``, ``(APIServer pid=12) ``, ``(EngineCore_DP0 pid=7) ``,
    ``(RayWorkerWrapper pid=9, ip=10.0.0.2) ``; (rest, whether the process was named)."""
    j = msg.find(") ", 1, 120)
    if j < 0:
        return None
    inner = msg[1:j]
    p = inner.find("pid=")
    if p < 0 or not inner[p + 4 : p + 5].isdigit():
        return None
    return msg[j + 2 :], p > 0


def sglang_bracket(msg: str) -> tuple[str, str | None, str | None] | None:
    """SGLang's ``[...] `` header of any release; (rest, timestamp, rank) or ``None``.

    ``[2026-07-20 10:27:57 TP0] `` (0.4+, ``.123`` with SGLANG_LOG_MS, ``DP0 TP0 EP0`` ranks),
    ``[10:27:57 TP0] `` (0.3), ``[gpu_id=0] `` (0.2), ``[TP0] ``.
    """
    j = msg.find("] ", 1, 96)
    if j < 0:
        return None
    head = msg[1:j]
    if head[4:5] == "-" and head[:4].isdigit():
        ts = head[:19]
        tail = head[19:]
        if tail[:1] in (".", ","):
            k = tail.find(" ")
            ts = head[: 19 + (k if k >= 0 else len(tail))]
            tail = tail[k:] if k >= 0 else ""
        return msg[j + 2 :], ts, tail.strip() or None
    if head[2:3] == ":" and head[5:6] == ":" and head[:2].isdigit():
        sp = head.find(" ")
        ts = head if sp < 0 else head[:sp]
        rank = None if sp < 0 else head[sp + 1 :].strip() or None
        return msg[j + 2 :], ts, rank
    if head.startswith("gpu_id="):
        return msg[j + 2 :], None, head
    words = head.split(" ")
    if words and all(_is_rank_word(w) for w in words):
        return msg[j + 2 :], None, head
    return None


def _bare_ranks(msg: str) -> tuple[str, str | None, str | None] | None:
    """``DP0 TP0 EP0 message`` (rank words without brackets)."""
    words: list[str] = []
    pos = 0
    while len(words) < 5:
        sp = msg.find(" ", pos)
        if sp < 0 or not _is_rank_word(msg[pos:sp]):
            break
        words.append(msg[pos:sp])
        pos = sp + 1
    if not words:
        return None
    return msg[pos:], None, " ".join(words)


ENGINE_HEADERS: tuple[tuple[str, str], ...] = (
    ("SGLang 0.4+", "[2026-07-20 10:27:57 TP0] MESSAGE"),
    ("SGLang 0.4+ (SGLANG_LOG_MS)", "[2026-07-20 10:27:57.123 TP1] MESSAGE"),
    ("SGLang DP attention / MoE ranks", "[2026-07-20 10:27:57 DP0 TP0 EP0] MESSAGE"),
    ("SGLang pipeline ranks", "[2026-07-20 10:27:57 PP1 TP3] MESSAGE"),
    ("SGLang main process", "[2026-07-20 10:27:57] MESSAGE"),
    ("SGLang 0.3", "[10:27:57 TP0] MESSAGE"),
    ("SGLang 0.2", "[gpu_id=0] MESSAGE"),
    ("SGLang rank only", "[TP0] MESSAGE"),
    ("SGLang bare ranks", "DP0 TP0 EP0 MESSAGE"),
    ("vLLM", "INFO 07-20 10:27:57 [gpu_model_runner.py:1932] MESSAGE"),
    ("vLLM with ms", "WARNING 07-20 10:27:57.123 [config.py:412] MESSAGE"),
    ("vLLM 0.4", "INFO 07-20 10:27:57 llm_engine.py:161] MESSAGE"),
    ("PyTorch distributed rank", "[rank0]: MESSAGE"),
    ("Ray worker", "(pid=48211) MESSAGE"),
    ("vLLM V1 API server", "(APIServer pid=48211) MESSAGE"),
    ("vLLM V1 engine core", "(EngineCore_DP0 pid=48305) MESSAGE"),
    ("Ray worker with ip", "(RayWorkerWrapper pid=48420, ip=10.0.0.2) MESSAGE"),
)
"""The engine headers :func:`strip_engine_header` knows, each with an example for the tests."""


def strip_engine_header(msg: str) -> Header:
    """Strip a Ray process prefix, then SGLang's or vLLM's header, from a message."""
    vllm = False
    c = msg[:1]
    if c == "(":
        got = _ray(msg)
        if got is not None:
            msg, named = got
            vllm = named
            c = msg[:1]
    if c == "[":
        if msg[1:5] == "rank":
            # PyTorch distributed: "[rank0]: message" (continues the record it belongs to)
            j = msg.find("]:", 5, 16)
            if j > 0 and msg[5:j].isdigit():
                rest = msg[j + 3 :] if msg[j + 2 : j + 3] == " " else msg[j + 2 :]
                return rest, None, msg[1:j], None, False, vllm
        got3 = sglang_bracket(msg)
        if got3 is not None:
            return got3[0], got3[1], got3[2], None, True, vllm
    elif c in "IWEDC" and msg[:5] in _VLLM_LEVEL_PREFIXES:
        m = _VLLM_RE.match(msg)
        if m is not None:
            return msg[m.end() :], m.group(2), None, m.group(3) or m.group(4), True, True
    elif c in "DTPEC" and _is_rank_word(msg[: msg.find(" ")] if " " in msg else ""):
        got3 = _bare_ranks(msg)
        if got3 is not None:
            return got3[0], got3[1], got3[2], None, True, vllm
    return msg, None, None, None, False, vllm
