"""The footer's key hints (and the header's parts): which fit on one line, in which order.

Why: at 80 columns the footer cannot list every key, and the keys people need most when
something went wrong (``?`` help, ``q`` quit) were the ones cut off. The rule here: ``?``
and ``q`` are pinned first; then the commands that apply now (``present.keyboard.keys.available``)
in the key table's order, minus those the crash banner already lists while it shows; then
follow, search and diff (and ``n`` on a pool, ``1-3`` in the stacked layout). A hint that
does not fit is dropped whole — never cut mid-word — and later, shorter ones may still fit.
The header's first line follows the same rule (``fit_by_priority``): its parts are kept in
one priority order at every width (the phase, then the ETA and the current best, then the
trial, the sweep's state and the connection), each in the longest of its forms that still
fits, and drawn in their own order; a part that does not fit is left out whole, never cut in
the middle of a figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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


@dataclass(frozen=True, slots=True)
class Part:
    """One part of a status line: its forms, longest first ('' forms are skipped), and its
    priority (lower: kept first)."""

    forms: tuple[str, ...]
    priority: int


def fit_by_priority(parts: Sequence[Part], width: int, sep: str = "  │  ") -> list[str]:
    """The parts that fit in ``width`` cells (``sep`` before each), chosen in priority order
    — each in the longest form that still fits, else left out whole — and returned in the
    order given."""
    chosen: dict[int, str] = {}
    used = 0
    for i in sorted(range(len(parts)), key=lambda i: parts[i].priority):
        for form in parts[i].forms:
            if form and used + len(sep) + len(form) <= width:
                chosen[i] = form
                used += len(sep) + len(form)
                break
    return [chosen[i] for i in sorted(chosen)]
