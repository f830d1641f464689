"""SGLang's line header, every release's form, and the fast path that reads it in place.

Why its own module: the header is how the parser knows where SGLang's message starts and
which rank and time it belongs to, and its commonest form is read on every statistics line
of a busy log — the one place where speed is worth a hand-written reader
(:func:`read_fast`). The handlers (:mod:`.logs`, :mod:`.logstats`) only ever see the message.
"""

from __future__ import annotations

from specconsole.core.logs.grammar import Header, HeaderReader

__all__ = ["HEADERS", "HEADER_EXAMPLES", "read_bracket", "read_fast"]

_RANK_WORDS = ("TP", "DP", "PP", "EP", "CP")


def _is_rank_word(word: str) -> bool:
    return len(word) > 2 and word[:2] in _RANK_WORDS and word[2:].isdigit()


def read_bracket(msg: str) -> Header | None:
    """SGLang's ``[...] `` header of any release: (rest, timestamp, rank, no key, a new
    record) or ``None``.

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
        return msg[j + 2 :], ts, tail.strip() or None, None, True
    if head[2:3] == ":" and head[5:6] == ":" and head[:2].isdigit():
        sp = head.find(" ")
        ts = head if sp < 0 else head[:sp]
        rank = None if sp < 0 else head[sp + 1 :].strip() or None
        return msg[j + 2 :], ts, rank, None, True
    if head.startswith("gpu_id="):
        return msg[j + 2 :], None, head, None, True
    words = head.split(" ")
    if words and all(_is_rank_word(w) for w in words):
        return msg[j + 2 :], None, head, None, True
    return None


def _read_bare_ranks(msg: str) -> Header | None:
    """``DP0 TP0 EP0 message`` (rank words without brackets)."""
    if not _is_rank_word(msg[: msg.find(" ")] if " " in msg else ""):
        return None
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
    return msg[pos:], None, " ".join(words), None, True


HEADERS = (
    HeaderReader("[", read_bracket),
    HeaderReader("DTPEC", _read_bare_ranks),
)
"""SGLang's header readers: the bracket (every release) and bare rank words."""

HEADER_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("SGLang 0.4+", "[2026-07-20 10:27:57 TP0] MESSAGE"),
    ("SGLang 0.4+ (SGLANG_LOG_MS)", "[2026-07-20 10:27:57.123 TP1] MESSAGE"),
    ("SGLang DP attention / MoE ranks", "[2026-07-20 10:27:57 DP0 TP0 EP0] MESSAGE"),
    ("SGLang pipeline ranks", "[2026-07-20 10:27:57 PP1 TP3] MESSAGE"),
    ("SGLang main process", "[2026-07-20 10:27:57] MESSAGE"),
    ("SGLang 0.3", "[10:27:57 TP0] MESSAGE"),
    ("SGLang 0.2", "[gpu_id=0] MESSAGE"),
    ("SGLang rank only", "[TP0] MESSAGE"),
    ("SGLang bare ranks", "DP0 TP0 EP0 MESSAGE"),
)


def read_fast(line: str, at: int) -> tuple[int, str | None, str | None] | None:
    """The commonest header, ``[2026-07-20 10:27:57 TP0] `` (or without a rank) at
    ``line[at]``, read in place: (where the message starts, timestamp, rank); ``None`` for
    any other form (milliseconds, old releases), which the general path reads.

    Every line of a busy log passes here, so the checks are ordered for the commonest line
    (one slice decides most of them)."""
    end = at + 20
    close = line[end : end + 2]
    if close == "] ":
        if line[at + 5] != "-":
            return None
        return end + 2, line[at + 1 : end], None
    if close[:1] == " " and line[at + 5] == "-":
        j = line.find("] ", end + 1, at + 64)
        if j < 0:
            return None
        return j + 2, line[at + 1 : end], line[end + 1 : j]
    return None
