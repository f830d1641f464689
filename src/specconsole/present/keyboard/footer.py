"""The footer's key hints (and the header's parts): which fit on one line, in which order.

Why: at 80 columns the footer cannot list every key, and the keys people need most when
something went wrong (``?`` help, ``q`` quit) were the ones cut off. The rule here: ``?``
and ``q`` are pinned first; then the commands that apply now (``present.keyboard.keys.available``)
in the key table's order, minus those the crash banner already lists while it shows; then
follow, search and diff (and ``n`` on a pool, ``1-3`` in the stacked layout). A hint that
does not fit is dropped whole — never cut mid-word — and later, shorter ones may still fit.
The header's first line follows the same rule (``fit_parts``): a part that does not fit is
left out whole, never cut in the middle of a figure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from specconsole.present.keyboard.keymap import (
    COMMANDS,
    DIFF_KEY,
    FOLLOW,
    NEXT_BOX,
    PINNED,
    SEARCH,
    Key,
)

GAP = 2
"""Spaces between two hints."""

SAME_AS: dict[str, str] = {"continue": "resume"}
"""A command left out of the footer while the one it duplicates is shown (a paused sweep:
``s`` and ``r`` both continue with the next planned trial; the header says ``r``)."""


@dataclass(frozen=True, slots=True)
class Hint:
    """One footer entry: ``d deploy``."""

    key: str
    label: str
    id: str
    """The binding id it stands for (a click presses it)."""

    @property
    def width(self) -> int:
        return len(self.key) + 1 + len(self.label)


PANES_HINT = Hint("1-3", "panes", "panes")
"""The stacked layout's pane switch, as one hint."""


def _hint(key: Key) -> Hint:
    return Hint(key.key, key.label, key.id)


def footer_hints(
    available: Iterable[str],
    width: int,
    *,
    banner: Iterable[str] = (),
    pool: bool = False,
    compact: bool = False,
) -> tuple[Hint, ...]:
    """The hints that fit in ``width`` cells.

    Args:
        available: ids of the commands that apply now (``present.keyboard.keys.available``).
        width: the footer's width in cells.
        banner: ids of the commands the crash banner lists now (left out here).
        pool: the console shows a pool of boxes (``n`` applies).
        compact: the stacked layout (``1-3`` switch panes).
    """
    now, shown_by_banner = set(available), set(banner)
    now -= {c for c, same in SAME_AS.items() if same in now}
    wanted = [_hint(k) for k in PINNED]
    wanted += [_hint(c) for c in COMMANDS if c.id in now and c.id not in shown_by_banner]
    wanted += [_hint(k) for k in (FOLLOW, SEARCH, DIFF_KEY)]
    if pool:
        wanted.append(_hint(NEXT_BOX))
    if compact:
        wanted.append(PANES_HINT)
    out: list[Hint] = []
    used = 0
    for hint in wanted:
        need = hint.width + (GAP if out else 0)
        if used + need <= width:
            out.append(hint)
            used += need
    return tuple(out)


def footer_text(hints: Iterable[Hint]) -> str:
    """The hints as plain text (tests and the tmux captures read it)."""
    return (" " * GAP).join(f"{h.key} {h.label}" for h in hints)


def fit_parts(parts: Iterable[str], width: int, sep: str = "  │  ") -> list[str]:
    """The header's parts that fit in ``width`` cells after ``sep`` each, in order; a part
    made of `` · ``-separated pieces (the sweep's glance: elapsed · ETA · best) keeps the
    pieces that fit and drops the rest whole, so no figure is cut mid-number."""
    out: list[str] = []
    used = 0
    for part in parts:
        if not part:
            continue
        kept: list[str] = []
        for piece in part.split(" · "):
            candidate = " · ".join([*kept, piece])
            if used + len(sep) + len(candidate) <= width:
                kept.append(piece)
            else:
                break
        if not kept:
            break
        out.append(" · ".join(kept))
        used += len(sep) + len(out[-1])
        if len(kept) < len(part.split(" · ")):
            break
    return out
