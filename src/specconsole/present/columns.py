"""The trials table's columns, shared by the console's trials pane and the reports' table.

Each ``Column`` names its cell once: the console shows ``CONSOLE_COLUMNS`` (short headers,
figures rounded for the screen), the reports ``REPORT_COLUMNS`` (the seed's headers, one
decimal). A new column (the box a trial ran on, a degraded trial's failure counts) is one
``Column`` added to the tuples; both surfaces pick it up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from specconsole.core.config.model import ServerConfig
from specconsole.core.machine.state import TrialRecord
from specconsole.core.measure.stats import half_width
from specconsole.present.charts.symbols import EARLIER_COLUMNS, MORE_COLUMNS
from specconsole.present.formats import (
    format_int,
    format_peak,
    format_rate,
    format_rate_ci,
    format_ratio,
)
from specconsole.present.labels import record_label, trial_label
from specconsole.present.status import PARTIAL, STATUS_GLYPHS, record_status, status_detail

Cell = Callable[[TrialRecord, ServerConfig | None, bool], str]
"""(record, the plan's base, precise) → the cell's text; ``precise`` is the report's form."""


@dataclass(frozen=True, slots=True)
class Column:
    """One column of the trials table."""

    id: str
    header: str
    """The console's (short) header."""
    title: str
    """The report's header."""
    cell: Cell
    numeric: bool = True
    """Right-aligned in Markdown."""
    meaning: str = ""
    """What the column holds, in a sentence (the help's "Columns" section)."""
    priority: int = 9
    """Which columns stay when the console's table is too narrow: lower stays longer."""


def _digits(precise: bool) -> int:
    return 1 if precise else 0


def _capacity(record: TrialRecord) -> int | None:
    if record.capacity is None and record.crash is not None:
        return record.crash.capacity
    return record.capacity


TRIAL: Column = Column("trial", "#", "trial", lambda r, _b, _p: str(r.index + 1))


def _label(record: TrialRecord, base: ServerConfig | None, precise: bool) -> str:
    """``#3 steps=3``; on screen a status other than ok leads it (``✖ #6 steps=10``)."""
    label = trial_label(record, base)
    glyph = "" if precise else STATUS_GLYPHS.get(record.status, "")
    return f"{glyph} {label}" if glyph else label


def partial(record: TrialRecord, text: str) -> str:
    """A figure of a trial whose ladder did not finish (``PARTIAL``), on screen: ``(268)``."""
    if record.status in PARTIAL and any(ch.isdigit() for ch in text):
        return f"({text})"
    return text


LABEL: Column = Column(
    "label",
    "trial",
    "trial",
    _label,
    numeric=False,
    meaning="the trial's number and how its configuration differs from the plan's base; "
    "▸ running, ✖ crashed, ⊘ cancelled, pruned or skipped, ! failed or refused",
    priority=0,
)
BOX: Column = Column("box", "box", "box", lambda r, _b, _p: r.box or "", numeric=False, priority=1)
CONFIG: Column = Column(
    "config", "config", "config", lambda r, b, _p: record_label(r, b), numeric=False
)
STATUS: Column = Column(
    "status",
    "status",
    "status",
    lambda r, _b, p: status_detail(r) if p else record_status(r),
    numeric=False,
    meaning="ok, crashed, cancelled… (the details beside the table say why)",
    priority=4,
)


def _single(record: TrialRecord, _base: ServerConfig | None, precise: bool) -> str:
    """The report's single-request figure is the mean ± 95 % CI half-width when the ladder
    ran more than once (``[bench] repeats``); the console's is the figure alone."""
    if precise:
        return format_rate_ci(
            record.single_request_tok_s, half_width(record.single_request_spread), 1
        )
    return partial(record, format_rate(record.single_request_tok_s))


def _peak(record: TrialRecord, _base: ServerConfig | None, precise: bool) -> str:
    if not precise:
        return partial(record, format_rate(record.peak_aggregate_tok_s))
    half = half_width(record.peak_aggregate_spread)
    return format_peak(record.peak_aggregate_tok_s, record.peak_concurrency, 1, half)


SINGLE: Column = Column(
    "single",
    "single",
    "single-request tok/s",
    _single,
    meaning="single-request output tok/s (concurrency 1); (268): partial, the trial's "
    "ladder did not finish",
    priority=3,
)
PEAK: Column = Column(
    "peak",
    "peak",
    "peak aggregate tok/s",
    _peak,
    meaning="the best aggregate output tok/s over the concurrency ladder",
    priority=2,
)
CAPACITY: Column = Column(
    "capacity",
    "capacity",
    "capacity",
    lambda r, _b, _p: format_int(_capacity(r)),
    meaning="KV-cache pool in tokens, as the server's log reports it",
    priority=6,
)
ACCEPT: Column = Column(
    "accept",
    "accept",
    "accept length",
    lambda r, _b, _p: format_ratio(r.accept_length),
    meaning="mean accept length: tokens accepted per verify step (1 = no gain)",
    priority=5,
)

CONSOLE_COLUMNS: tuple[Column, ...] = (LABEL, STATUS, SINGLE, PEAK, CAPACITY, ACCEPT)
"""The console's trials pane, left to right."""

POOL_CONSOLE_COLUMNS: tuple[Column, ...] = (LABEL, BOX, *CONSOLE_COLUMNS[1:])
"""The console's trials pane on a pool of boxes: which box ran each trial, after the trial."""


def console_columns(pool: bool) -> tuple[Column, ...]:
    """The trials pane's columns: with the box column when the console shows a pool."""
    return POOL_CONSOLE_COLUMNS if pool else CONSOLE_COLUMNS


REPORT_COLUMNS: tuple[Column, ...] = (TRIAL, CONFIG, SINGLE, PEAK, CAPACITY, ACCEPT, STATUS)
"""The report's seed table (the seed's columns plus the trial number), left to right."""

BY_ID: dict[str, Column] = {c.id: c for c in (*POOL_CONSOLE_COLUMNS, *REPORT_COLUMNS)}
"""Every column by its id (the trials pane rebuilds its header from a row's ids)."""


def cells(
    columns: tuple[Column, ...],
    record: TrialRecord,
    base: ServerConfig | None,
    *,
    precise: bool = False,
) -> tuple[str, ...]:
    """One row's texts for ``columns``."""
    return tuple(c.cell(record, base, precise) for c in columns)


@dataclass(frozen=True, slots=True)
class ColumnFit:
    """Which of a table's columns are shown at a width, and where the pager stands."""

    shown: tuple[int, ...]
    """Indexes of the shown columns, in display order."""
    hidden: int
    """How many are not shown (``before`` + ``after``)."""
    before: int = 0
    """Columns paged past with ``→`` (``←`` brings them back)."""
    after: int = 0
    """Columns that did not fit after the shown ones (``→`` shows them)."""
    offset: int = 0
    """The pager's position, clamped to its ends (0: the first page)."""

    @property
    def marker(self) -> str:
        """The header's pager cell: ``+3 cols →`` on the first page, ``← 1 · 2 →`` between,
        ``← 3 cols`` on the last ('' when every column shows)."""
        return pager_marker(self.before, self.after)


def pager_marker(before: int, after: int) -> str:
    """The pager's cell for ``before`` columns paged past and ``after`` still to come."""
    if before and after:
        return f"← {before} · {after} →"
    if after:
        return MORE_COLUMNS.format(n=after)
    if before:
        return EARLIER_COLUMNS.format(n=before)
    return ""


def _window(
    order: list[int], widths: Sequence[int], width: int, used: int, marker: int, paged: bool
) -> list[int]:
    """The columns of ``order`` (in priority order) that fit after ``used`` cells, keeping
    ``marker`` cells for the pager's cell while some are left out (``paged``: some are
    before them)."""
    kept: list[int] = []
    for n, i in enumerate(order):
        reserve = marker if paged or n + 1 < len(order) else 0
        if used + widths[i] + reserve <= width:
            kept.append(i)
            used += widths[i]
        else:
            break
    return kept


def fit_columns(
    columns: Sequence[Column],
    widths: Sequence[int],
    width: int,
    *,
    offset: int = 0,
    marker: int = 0,
) -> ColumnFit:
    """Whole columns that fit in ``width`` cells: a number is shown whole or not at all.

    Columns are kept by ``priority`` (the trial's label always), shown in their own order;
    ``offset`` pages past that many of the highest-priority ones after the label, so ``→``
    shows the columns cut at this width — clamped to the pager's ends: it stops at the page
    that shows the last column and at the first, it never wraps around. ``widths`` are the
    columns' full widths (padding included); ``marker`` the width the pager's cell needs.
    """
    order = sorted(range(len(columns)), key=lambda i: (columns[i].priority, i))
    pinned, rest = order[:1], order[1:]
    used = sum(widths[i] for i in pinned)
    last = 0  # the first offset whose page reaches the last column
    while last < len(rest):
        page = rest[last:]
        if len(_window(page, widths, width, used, marker, last > 0)) == len(page):
            break
        last += 1
    offset = min(max(0, offset), last)
    kept = _window(rest[offset:], widths, width, used, marker, offset > 0)
    after = len(rest) - offset - len(kept)
    shown = tuple(sorted([*pinned, *kept]))
    return ColumnFit(shown, offset + after, offset, after, offset)
