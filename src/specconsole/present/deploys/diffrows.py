"""A deploy's diff laid out for a width: the flag-level summary first, then the unified
diff wrapped with its ``+``/``-`` gutter on every row and the changed words marked.

Why: a process-backend deploy changes one 400-character command line; wrapped by the
terminal it became six rows of which only the first said ``+`` or ``-``, with nothing
showing which value changed. Here the summary (``present.deploys.flagdiff``) says it in one line per
flag, every wrapped row keeps its gutter, and the words that differ between a removed line
and the added line replacing it carry their spans, so the pane can highlight them (and the
mono theme can underline them). Pure: the diff pane draws these rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from specconsole.present.deploys.diffs import NO_CHANGE, line_kind
from specconsole.present.deploys.flagdiff import Span, changed_spans, summary_lines

SUMMARY_TITLE = "What changes (flags):"


@dataclass(frozen=True, slots=True)
class DiffRow:
    """One screen row of the diff pane."""

    kind: str
    """``title``, ``summary``, ``blank``, or a line kind of ``present.deploys.diffs.line_kind``."""
    text: str
    spans: tuple[Span, ...] = ()
    """Ranges of ``text`` holding changed words (``add``/``remove`` rows)."""


def _pairs(lines: list[str]) -> dict[int, list[Span]]:
    """Changed-word spans of each removed/added line, pairing the n-th removed line of a
    change block with its n-th added line; offsets are into the line without its gutter."""
    spans: dict[int, list[Span]] = {}
    i = 0
    while i < len(lines):
        if line_kind(lines[i]) != "remove":
            i += 1
            continue
        start = i
        while i < len(lines) and line_kind(lines[i]) == "remove":
            i += 1
        removed = list(range(start, i))
        begin = i
        while i < len(lines) and line_kind(lines[i]) == "add":
            i += 1
        added = list(range(begin, i))
        for old, new in zip(removed, added, strict=False):
            a, b = changed_spans(lines[old][1:], lines[new][1:])
            spans[old], spans[new] = a, b
    return spans


def _chunks(body: str, width: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each row's part of ``body``, broken after a space where one is
    near the end of the row, else hard."""
    out: list[tuple[int, int]] = []
    start = 0
    while start < len(body):
        end = min(len(body), start + width)
        if end < len(body):
            space = body.rfind(" ", start + width // 2, end)
            if space > start:
                end = space + 1
        out.append((start, end))
        start = end
    return out or [(0, 0)]


def _clip(spans: list[Span], start: int, end: int, shift: int) -> tuple[Span, ...]:
    """``spans`` within ``[start, end)``, moved to the row (after its ``shift`` cells of
    gutter)."""
    out = []
    for a, b in spans:
        lo, hi = max(a, start), min(b, end)
        if lo < hi:
            out.append((lo - start + shift, hi - start + shift))
    return tuple(out)


def _rechunk(text: str, first: tuple[int, int], width: int) -> list[str]:
    """The rest of ``text`` after its first row, in rows of ``width - 4`` cells."""
    tail = text[first[1] :]
    return [tail[a:b] for a, b in _chunks(tail, width - 4)] if tail else []


def diff_rows(diff: str, width: int, *, summary: bool = True) -> list[DiffRow]:
    """The pane's rows for ``diff`` at ``width`` cells: the flag summary (when ``summary``
    and anything changed), a blank row, then every diff line wrapped under its gutter."""
    width = max(10, width)
    if not diff.strip():
        return [DiffRow("context", NO_CHANGE)]
    out: list[DiffRow] = []
    changes = summary_lines(diff) if summary else []
    if changes:
        out.append(DiffRow("title", SUMMARY_TITLE))
        for change in changes:
            first, *rest = _chunks(change, width - 2)
            out.append(DiffRow("summary", "  " + change[first[0] : first[1]]))
            out += [DiffRow("summary", "    " + part) for part in _rechunk(change, first, width)]
        out.append(DiffRow("blank", ""))
    lines = diff.rstrip("\n").splitlines()
    spans = _pairs(lines)
    for n, line in enumerate(lines):
        kind = line_kind(line)
        if kind in ("header", "hunk") or not line:
            out.append(DiffRow(kind, line[:width]))
            continue
        gutter, body = line[0], line[1:]
        first, *rest = _chunks(body, width - 1) if len(body) < width else _wrapped(body, width)
        out.append(
            DiffRow(kind, gutter + body[first[0] : first[1]], _clip(spans.get(n, []), *first, 1))
        )
        for a, b in rest:  # a wrapped row keeps the gutter, one cell in from the text above
            out.append(DiffRow(kind, f"{gutter} {body[a:b]}", _clip(spans.get(n, []), a, b, 2)))
    return out


def _wrapped(body: str, width: int) -> list[tuple[int, int]]:
    """The first row ``width - 1`` cells of ``body``, the following ones ``width - 2``."""
    (first,) = _chunks(body, width - 1)[:1]
    rest = [(first[1] + a, first[1] + b) for a, b in _chunks(body[first[1] :], width - 2)]
    return [first, *rest] if first[1] < len(body) else [first]
