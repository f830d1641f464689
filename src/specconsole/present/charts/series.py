"""Chart series: what the console's charts and the reports' charts plot, and how each looks.

Two views answer the tuning question: aggregate output tok/s against concurrency, one line
per trial (where does each configuration peak?), and single-request tok/s against the swept
axis (does drafting deeper still pay?). Both are built here from trial records so the
console, the text report and the HTML report draw the same lines with the same names: a
series is labelled by its trial's number and configuration (``#3 steps=3``, the number the
trials table shows), gets a colour from ``PALETTE`` by trial number (so a trial keeps its
colour in every chart) and, where colour is unavailable (``mono`` theme, ``NO_COLOR``), a
distinct marker from ``MARKERS``. Crashed trials have no line; they are marked on the x axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specconsole.core.config.model import ServerConfig, table_keys
from specconsole.core.engine.schedule import Role, config_role
from specconsole.core.machine.state import LevelSummary, TrialRecord, TrialStatus
from specconsole.core.plans.modes import StrategyKind
from specconsole.present.labels import short_name, trial_label

if TYPE_CHECKING:
    from specconsole.core.plans.plan import SweepPlan

PALETTE: tuple[tuple[int, int, int], ...] = (
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (23, 190, 207),
    (188, 189, 34),
    (127, 127, 127),
)
"""Distinct series colours (Tableau 10), as RGB; more series than colours wrap around."""

MARKERS: tuple[str, ...] = ("●", "■", "▲", "◆", "✚", "★", "▼", "◉", "▪", "♦")
"""Distinct series markers for charts drawn without colour."""

CRASH_MARKER = "✖"
"""Where a crashed trial sits on the x axis."""

MAX_SERIES = 8
"""Aggregate lines drawn at once in a terminal (the most recent trials)."""


@dataclass(frozen=True, slots=True)
class Series:
    """One line of a chart."""

    label: str
    """``#3 steps=3``."""
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    number: int = 0
    """The trial number (1-based) the line belongs to; 0 for a line of many trials."""

    @property
    def color(self) -> tuple[int, int, int]:
        return color_for(self.number)

    @property
    def marker(self) -> str:
        return marker_for(self.number)


def color_for(number: int) -> tuple[int, int, int]:
    """The colour of trial ``number``'s series."""
    return PALETTE[(number - 1) % len(PALETTE)]


def hex_color(number: int) -> str:
    """``#1f77b4``: trial ``number``'s colour for SVG/HTML."""
    r, g, b = color_for(number)
    return f"#{r:02x}{g:02x}{b:02x}"


def _luminance(color: tuple[int, int, int]) -> float:
    """WCAG relative luminance of an sRGB colour."""

    def channel(v: int) -> float:
        s = v / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = color
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """WCAG contrast ratio of two colours (1 to 21)."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


SERIES_CONTRAST = 3.0
"""A chart line and its legend mark read at least this ratio on their background (WCAG's
for graphics): Tableau's orange, olive and cyan are 2.0-2.4:1 on a light theme."""


def readable_on(
    color: tuple[int, int, int], background: tuple[int, int, int], minimum: float = SERIES_CONTRAST
) -> tuple[int, int, int]:
    """``color`` as drawn on ``background``: itself when it reads at ``minimum``:1, else mixed
    toward black (on a light background) or white (on a dark one) just until it does, so
    each series keeps its hue and stays apart from the others."""
    if contrast(color, background) >= minimum:
        return color
    target = 0 if _luminance(background) > 0.5 else 255
    for step in range(1, 21):
        share = step / 20
        mixed = tuple(round(c + (target - c) * share) for c in color)
        assert len(mixed) == 3
        out = (mixed[0], mixed[1], mixed[2])
        if contrast(out, background) >= minimum:
            return out
    return (target, target, target)


def marker_for(number: int) -> str:
    """The marker of trial ``number``'s series when there is no colour."""
    return MARKERS[(number - 1) % len(MARKERS)]


def aggregate_series(
    records: Sequence[TrialRecord],
    base: ServerConfig | None,
    levels_of: dict[int, Sequence[LevelSummary]] | None = None,
) -> tuple[Series, ...]:
    """One aggregate-vs-concurrency line per trial that has numbers; ``levels_of`` overrides
    a record's levels by trial index (the running trial's finished levels)."""
    out: list[Series] = []
    for record in records:
        levels = (levels_of or {}).get(record.index, record.levels)
        if not levels:
            continue
        ordered = sorted(levels, key=lambda lv: lv.concurrency)
        out.append(
            Series(
                label=trial_label(record, base),
                xs=tuple(float(lv.concurrency) for lv in ordered),
                ys=tuple(lv.output_tok_s for lv in ordered),
                number=record.index + 1,
            )
        )
    return tuple(out)


def varying_fields(configs: Sequence[ServerConfig]) -> list[str]:
    """Names of the ``[server]`` keys whose values differ between ``configs``."""
    if len(configs) < 2:
        return []
    names = [n for n in table_keys(configs[0].engine) if n != "description"]
    return [n for n in names if len({repr(getattr(c, n, None)) for c in configs}) > 1]


def swept_axis(plan: SweepPlan | None, records: Sequence[TrialRecord]) -> str | None:
    """The single-request chart's x axis: the axis the sweep explored — a boundary or
    plateau walk's axis; else the numeric axis of the plan (else the numeric field) that
    takes the most values among the trials that measured a single request (an axis whose
    other values only crashed, like one absurd ``ctx_size``, explored nothing); None: the
    trial number."""
    if plan is not None and plan.walk_axis is not None and plan.strategy in _WALKS:
        return plan.walk_axis
    measured = [r.effective for r in records if r.single_request_tok_s is not None]
    names = [n for n, _v in plan.axes] if plan is not None and plan.axes else []
    names = names or varying_fields([r.effective for r in records])
    best, most = None, 1
    for name in names:
        values = [getattr(c, name, None) for c in measured]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            continue
        if len(set(values)) > most:
            best, most = name, len(set(values))
    if best is None and plan is not None and plan.walk_axis is not None:
        return plan.walk_axis  # nothing measured yet: the plan's own first axis
    return best


_WALKS = frozenset({StrategyKind.BOUNDARY, StrategyKind.PLATEAU})
"""Strategies that walk one axis: their chart is drawn against it."""


def axis_title(axis: str | None, engine: str | None = None) -> str:
    """The swept axis as a chart names it (``steps``; vLLM's ``spec-tokens``; ``trial``
    without an axis)."""
    return short_name(axis, engine) if axis else "trial"


def _x_of(record: TrialRecord, axis: str | None) -> float:
    value = getattr(record.effective, axis) if axis else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return float(record.index + 1)


def _on_axis(record: TrialRecord, axis: str | None) -> bool:
    """Whether the trial is a point of the swept axis: against the trial number every trial
    is; against an axis only one drafting one length (no baseline, schedule or what-if —
    their value of the axis, unset or the largest candidate, is not where they ran)."""
    return axis is None or config_role(record.effective) is Role.STATIC


def single_series(records: Sequence[TrialRecord], axis: str | None) -> Series | None:
    """Single-request tok/s against ``axis`` (or the trial number), one point per trial on it."""
    points = sorted(
        (_x_of(r, axis), r.single_request_tok_s)
        for r in records
        if r.single_request_tok_s is not None and _on_axis(r, axis)
    )
    if not points:
        return None
    return Series(
        label="single-request tok/s",
        xs=tuple(p[0] for p in points),
        ys=tuple(p[1] for p in points),
    )


def crashed_at(records: Sequence[TrialRecord], axis: str | None) -> tuple[float, ...]:
    """Positions on the swept axis of the trials that crashed (or timed out loading)."""
    bad = (TrialStatus.CRASHED, TrialStatus.LOAD_TIMEOUT)
    return tuple(sorted({_x_of(r, axis) for r in records if r.status in bad}))


def crashed_labels(records: Sequence[TrialRecord], base: ServerConfig | None) -> tuple[str, ...]:
    """``#6 steps=10`` for each crashed trial, for legends."""
    bad = (TrialStatus.CRASHED, TrialStatus.LOAD_TIMEOUT)
    return tuple(trial_label(r, base) for r in records if r.status in bad)
