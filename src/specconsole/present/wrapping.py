"""Lines wrapped to a width without splitting a figure or a name mid-token.

Why: a narrow pane (the trials table's details at 80×24) folded ``steps/topk/draft=7/1/8``
after ``7/1/`` and left a lone ``)`` under ``(max_total_num_tokens``: a terminal's own fold
cuts anywhere. Here a line breaks at spaces first; a word longer than the width breaks at
its last seam that fits (after ``=``, ``/``, ``_``, ``,``, ``:``), so ``steps/topk/draft=``
ends one line and ``7/1/8`` starts the next — a number stays whole. A continuation keeps
the line's own indent.
"""

from __future__ import annotations

__all__ = ["SEAMS", "wrap_line", "wrap_lines"]

SEAMS = "=/_,:"
"""Characters a long word may break after, most meaningful first."""


def _split_word(word: str, width: int) -> list[str]:
    """``word`` in pieces of at most ``width``, each ending at a seam where one fits."""
    pieces: list[str] = []
    while len(word) > width:
        cut = 0
        for seam in SEAMS:  # the best seam that leaves a piece on this line
            at = word.rfind(seam, 0, width)
            if at > 0:
                cut = at + 1
                break
        cut = cut or width  # no seam: a hard cut is the only way left
        pieces.append(word[:cut])
        word = word[cut:]
    return [*pieces, word] if word else pieces


def wrap_line(line: str, width: int) -> list[str]:
    """``line`` in lines of at most ``width`` cells (a width below 8 leaves it whole)."""
    if width < 8 or len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip(" "))]
    room = max(width - len(indent), 4)
    out: list[str] = []
    current = ""
    for word in line.split():
        for piece in _split_word(word, room):
            if not current:
                current = piece
            elif len(current) + 1 + len(piece) <= room:
                current += " " + piece
            else:
                out.append(current)
                current = piece
    if current:
        out.append(current)
    return [indent + text for text in out] or [line]


def wrap_lines(lines: list[str] | tuple[str, ...], width: int) -> list[str]:
    """Every line of ``lines`` wrapped by :func:`wrap_line`."""
    return [wrapped for line in lines for wrapped in wrap_line(line, width)]
