"""Field extraction for log lines: numbers after a key, ``key: value`` lists parsed by key.

Why it exists: every engine's statistics and load lines are read *by key*, never by position,
so fields added, dropped or reordered across releases are fine. Hand-written with
``str.find`` instead of regexes: these run on every statistics line (the parser's hot path).
"""

from __future__ import annotations

__all__ = [
    "BOOL",
    "FLOAT",
    "INT",
    "int_after",
    "int_list_after",
    "key_values",
    "num_after",
    "stats_rest",
    "word_after",
]


def num_after(text: str, key: str) -> float | None:
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


def int_after(text: str, key: str) -> int | None:
    v = num_after(text, key)
    return int(v) if v is not None else None


def word_after(text: str, key: str) -> str | None:
    i = text.find(key)
    if i < 0:
        return None
    i += len(key)
    j = i
    n = len(text)
    while j < n and text[j] not in ", ":
        j += 1
    return text[i:j] or None


def int_list_after(text: str, key: str) -> tuple[int, ...]:
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


INT, FLOAT, BOOL = 0, 1, 2
"""Value kinds of a :func:`key_values` key table."""


def key_values(rest: str, keys: dict[str, tuple[str, int]]) -> dict[str, object]:
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
            if kind == INT:
                out[name] = int(v)
            elif kind == FLOAT:
                out[name] = float(v)
            else:
                out[name] = v.strip() == "True"
        except ValueError:
            pass
    return out


def stats_rest(body: str, start: int) -> tuple[int | None, str] | None:
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
