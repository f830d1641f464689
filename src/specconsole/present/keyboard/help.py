"""The help screen's text, generated from the key table and laid out for a given width.

Why generated: a help page written by hand listed ``s`` four times, showed the pool-only
``n`` outside a pool and missed whole screens' keys. Here every row comes from
``present.keyboard.keymap`` (one row per key and state), the symbols from the tables' own marks and
the field abbreviations from ``present.labels``, so the page is the current key map. Rows
wrap with a hanging indent under their description column, so nothing is ragged at 80
columns.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from dataclasses import dataclass

from specconsole.core.engine.registry import default_engine
from specconsole.present.charts.symbols import SYMBOLS
from specconsole.present.columns import CONSOLE_COLUMNS
from specconsole.present.keyboard.keymap import (
    COMMANDS,
    PANE_KEYS,
    SCREEN_KEYS,
    SECTION_KEYS,
    SECTIONS,
    Key,
)
from specconsole.present.labels import abbreviations

MIN_WIDTH = 40
"""Narrower than this the page is laid out for this width (and cut by the screen)."""
KEY_MAX = 10
"""A key column wider than this puts its keys on a line of their own."""
WHEN_MAX = 14
"""Likewise for the "when" column."""


LEVEL_MEANINGS: tuple[tuple[str, str], ...] = (
    ("c", "the ladder level: requests in flight at once"),
    (
        "best static",
        "the trial that measured best at this level drafting one length at every "
        "batch size (or without speculation): its number and aggregate tok/s",
    ),
    (
        "schedule",
        "a configuration that drafts by batch size, written batch size:steps — "
        "1-2:5,3-8:4,9+:3 drafts 5 steps for batches of 1-2, 4 for 3-8, 3 for 9 and more "
        "(K for engines that call the draft length K); its aggregate tok/s here",
    ),
    ("vs best", "the schedule against this level's best static"),
    (
        "vs single",
        "the schedule against the single best static, the one static trial the "
        "objective picks; a schedule behind it nowhere beyond the noise and ahead somewhere "
        "is the sweep's result (★)",
    ),
    (
        "(a)",
        "after a schedule, the engine's own adaptive mode with its defaults (SGLang's "
        "--speculative-adaptive): its aggregate tok/s here",
    ),
    ("(b)", "the engine's adaptive mode over the schedule's draft lengths: its tok/s here"),
    ("none", "the same launch without speculation: its aggregate tok/s here"),
    (
        "gain",
        "what the best speculation gains over none at this level (± the noise); "
        "where it stops paying is said under the table",
    ),
    (
        "lead",
        "how far this level's best leads the next configuration (≈ #N: within the noise, a tie)",
    ),
)
"""The per-level table's columns (``present.figures.levels.compact_lines``) in words."""


@dataclass(frozen=True, slots=True)
class HelpLine:
    """One line of the help page: ``kind`` is ``title``, ``row`` or ``text``."""

    kind: str
    text: str


def _rows(keys: Iterable[Key], pool: bool) -> list[tuple[str, str, str]]:
    return [(k.keys, k.when, k.does) for k in keys if pool or not k.pool_only]


GAP = 2
"""Spaces after the key and the "when" column: a state never reads as the description's first
words (``plan, no sweep start the plan's sweep``)."""


def _widths(rows: list[tuple[str, str, str]]) -> tuple[int, int]:
    """The key and "when" columns' widths (gaps included) for ``rows``."""
    key = min(KEY_MAX, max((len(k) for k, _w, _d in rows), default=1))
    when = min(WHEN_MAX, max((len(w) for _k, w, _d in rows), default=0))
    return key + GAP, (when + GAP if when else 0)


def _table(rows: list[tuple[str, str, str]], width: int, widths: tuple[int, int]) -> list[HelpLine]:
    """Three columns (key, when, what); the last wraps under itself (a hanging indent). A key
    or state wider than its column takes a line of its own, so columns never run together."""
    key_w, when_w = widths
    indent = 2 + key_w + when_w
    desc = max(20, width - indent)
    out: list[HelpLine] = []
    for key, when, does in rows:
        lines = textwrap.wrap(does, desc) or [""]
        head = f"  {key:<{key_w}}{when:<{when_w}}"
        if len(key) > key_w - GAP or (when_w > 0 and len(when) > when_w - GAP):
            out.append(HelpLine("row", f"  {key}  {when}".rstrip()))
            head = " " * indent
        out.append(HelpLine("row", head + lines[0]))
        out.extend(HelpLine("row", " " * indent + rest) for rest in lines[1:])
    return out


def _pairs(pairs: list[tuple[str, str]], width: int) -> list[HelpLine]:
    """``symbol  meaning`` rows, the meaning wrapping under itself."""
    name_w = max((len(n) for n, _m in pairs), default=1) + 2
    out: list[HelpLine] = []
    for name, meaning in pairs:
        lines = textwrap.wrap(meaning, max(20, width - 2 - name_w)) or [""]
        out.append(HelpLine("row", f"  {name:<{name_w}}{lines[0]}"))
        out.extend(HelpLine("row", " " * (2 + name_w) + rest) for rest in lines[1:])
    return out


def _paragraph(text: str, width: int) -> list[HelpLine]:
    return [HelpLine("text", f"  {line}") for line in textwrap.wrap(text, width - 2)]


CLOSING = (
    "Quitting during a trial never stops the server unless you choose to in the quit dialog. "
    "The session's first deploy shows its diff and asks; skip, roll back, deploy and cancel "
    "ask once, naming what they change. Edits never get lost: while a trial runs, ctrl+s "
    "queues them for after it."
)


def help_lines(width: int, *, pool: bool = False) -> list[HelpLine]:
    """The whole help page for a box ``width`` cells wide (``pool``: a pool of boxes)."""
    width = max(MIN_WIDTH, width)
    sections: dict[str, list[Key]] = {name: [] for name in SECTIONS}
    for key in (*SCREEN_KEYS, *COMMANDS, *PANE_KEYS, *SECTION_KEYS):
        sections[key.section].append(key)
    out: list[HelpLine] = _paragraph(
        "One row per key and the state it applies in; a key that does not apply now says "
        "why when pressed. The footer shows the keys that apply now.",
        width,
    )
    for name, keys in sections.items():
        rows = _rows(keys, pool)
        if rows:  # each section aligns its own columns (a long key does not widen all)
            out.append(HelpLine("title", name))
            out += _table(rows, width, _widths(rows))
    out.append(HelpLine("title", "Symbols"))
    out += _pairs(list(SYMBOLS), width)
    out.append(HelpLine("title", "Columns"))
    out += _pairs([(c.header, c.meaning) for c in CONSOLE_COLUMNS if c.meaning], width)
    out.append(HelpLine("title", "Per-level table (schedule plans, no-speculation baselines)"))
    out += _pairs(list(LEVEL_MEANINGS), width)
    out.append(HelpLine("title", "Abbreviations (the server's own argument names)"))
    out += _pairs(abbreviations(default_engine()), width)
    out.append(HelpLine("title", "Safety"))
    out += _paragraph(CLOSING, width)
    return out


def help_text(width: int = 80, *, pool: bool = False) -> str:
    """The help page as plain text (tests, the README's key map)."""
    return "\n".join(line.text for line in help_lines(width, pool=pool))
