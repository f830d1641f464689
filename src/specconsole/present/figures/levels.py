"""The per-level answer in words: the table every view shows, its verdict sentences and the
schedule chart's lines.

Why here: the console's trials pane, the headless summary and every report format show the
same per-level table (``core.search.levels``: each level's best static configuration, its
lead, the schedule, the single best static, no speculation) and say the same sentences —
how the schedule compares with each level's best and with the single best static, and where
speculation stops paying, with its noise — so the words are made once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.schedule import LevelPick, Role, config_role
from specconsole.core.search.answer import proven
from specconsole.present.charts.series import Series
from specconsole.present.formats import DASH, format_rate
from specconsole.present.labels import record_label, schedule_unit

if TYPE_CHECKING:
    from specconsole.core.measure.trials import TrialRecord
    from specconsole.core.search.levels import (
        Contender,
        LevelFigure,
        LevelRow,
        LevelTable,
        WhatIf,
    )

__all__ = [
    "COMPACT_CUT_ORDER",
    "LEFT_ALIGNED",
    "LEVELS_TITLE",
    "LEVEL_HEADERS",
    "LevelCells",
    "breakeven_of",
    "breakeven_text",
    "compact_lines",
    "compact_rows",
    "contender_headers",
    "contender_verdicts",
    "fit_rows",
    "level_cells",
    "level_headers",
    "level_series",
    "level_verdicts",
    "pct",
    "result_short",
    "result_text",
    "stops_paying_text",
    "what_if_text",
]

LEVEL_HEADERS: tuple[str, ...] = (
    "c",
    "best static",
    "lead",
    "schedule",
    "vs best",
    "vs single",
    "none",
    "spec gain",
)
"""The per-level table's columns: the level, its best static trial (number, label, figure),
its lead over the runner-up, the schedule's figure and how it compares with the level's best
and with the single best static, no speculation's figure and what speculation gains over it."""


def contender_headers(table: LevelTable) -> tuple[str, ...]:
    """A column per adaptive contender that ran (``adaptive (a)``: the engine's defaults,
    ``adaptive (b)``: over the schedule's lengths)."""
    return tuple(f"adaptive ({c.key})" for c in _ran(table))


def _ran(table: LevelTable) -> list[Contender]:
    return [c for c in table.contenders if c.trial is not None and c.trial.levels]


def level_headers(table: LevelTable) -> tuple[str, ...]:
    """The table's columns: :data:`LEVEL_HEADERS` with the contenders' after the schedule's."""
    at = LEVEL_HEADERS.index("none")
    return (*LEVEL_HEADERS[:at], *contender_headers(table), *LEVEL_HEADERS[at:])


LEVELS_TITLE = "per level: best static, schedule, single best, none"
"""The schedule chart's title (the console's second chart, the reports' chart)."""


def pct(value: float | None, digits: int = 1) -> str:
    """``+21.3 %`` (a signed percentage, a true minus), ``±0.0 %`` for what rounds to zero
    (never ``−0.0 %``), a dash when unknown."""
    if value is None:
        return DASH
    text = f"{value:+.{digits}f}"
    if float(text) == 0.0:
        return f"±{text[1:]} %"
    return f"{text} %".replace("-", "−")


def _figure(f: LevelFigure | None) -> str:
    """``1,947`` or ``1,947 ± 12`` over repeats."""
    if f is None:
        return DASH
    text = format_rate(f.value, 1)
    if f.high > f.low:
        text += f" ± {format_rate((f.high - f.low) / 2, 1)}"
    return text


@dataclass(frozen=True, slots=True)
class LevelCells:
    """One row of the table as text (in :data:`LEVEL_HEADERS` order)."""

    cells: tuple[str, ...]
    tied: bool
    """The level's lead is not shown to be real (views may mark it ≈)."""


def _best(row: LevelRow, base: ServerConfig | None) -> str:
    if row.best is None:
        return DASH
    return f"#{row.best.number} {record_label(row.best.trial, base)} {_figure(row.best)}"


def _lead(row: LevelRow) -> str:
    if row.runner_up is None:
        return DASH
    other = f"#{row.runner_up.number}"
    return f"≈ {other}" if row.tied else f"{pct(row.margin_pct)} over {other}"


def _gain(row: LevelRow) -> str:
    gain = row.gain
    if gain is None:
        return DASH
    mid, low, high = gain
    return f"{pct(mid, 0)} (±{(high - low) / 2:.0f})"


def level_cells(table: LevelTable, base: ServerConfig | None) -> list[LevelCells]:
    """The table's rows as text (in :func:`level_headers` order)."""
    keys = [c.key for c in _ran(table)]
    return [
        LevelCells(
            (
                f"{row.concurrency}",
                _best(row, base),
                _lead(row),
                _figure(row.schedule),
                pct(row.versus(row.best)),
                pct(row.versus(row.single)),
                *(_figure(row.contender(k)) for k in keys),
                _figure(row.baseline),
                _gain(row),
            ),
            row.tied,
        )
        for row in table.rows
    ]


def breakeven_of(table: LevelTable, trial: TrialRecord) -> str | None:
    """``break-even c=64`` / ``pays at every level`` for one trial (None without a baseline,
    or for the baseline itself)."""
    if not table.has_baseline or config_role(trial.effective) is Role.BASELINE:
        return None
    stop = table.breakeven(trial)
    if stop is None:
        return "speculation pays at every level of the ladder (no break-even within it)"
    return f"break-even c={stop}: from there it no longer beats no speculation beyond the noise"


def breakeven_text(table: LevelTable, base: ServerConfig | None) -> str | None:
    """Each trial's break-even concurrency — the smallest level from which it never beats no
    speculation beyond the noise — the schedule's first, then the engine's adaptive
    contenders', then every static's (None without a baseline)."""
    if not table.has_baseline:
        return None
    ranked = [table.schedule] if table.schedule is not None else []
    ranked += [c.trial for c in _ran(table) if c.trial is not None]
    ranked += list(table.candidates)
    parts = []
    for trial in ranked:
        if config_role(trial.effective) is Role.BASELINE:
            continue
        stop = table.breakeven(trial)
        said = "none within the ladder" if stop is None else f"c={stop}"
        parts.append(f"#{trial.index + 1} {record_label(trial, base)} {said}")
    if not parts:
        return None
    return "break-even concurrency (speculation stops paying beyond the noise): " + "; ".join(parts)


def stops_paying_text(table: LevelTable, noise_pct: float) -> str | None:
    """Where speculation stops paying, with its noise (None without a baseline)."""
    gains = [(r.concurrency, g) for r in table.rows if (g := r.gain) is not None]
    if not gains:
        return None
    (c0, g0), (c1, g1) = gains[0], gains[-1]
    spread = max((g[2] - g[1]) / 2 for _c, g in gains)
    span = (
        f"{pct(g0[0], 0)} at c={c0} … {pct(g1[0], 0)} at c={c1}, ± up to {spread:.0f} % "
        f"with the noise floor of {noise_pct:g} %"
    )
    stop = table.stops_paying
    if stop is None:
        return (
            f"speculation pays at every level measured ({span}): it stops paying not within "
            "the ladder"
        )
    gain = next(g for c, g in gains if c == stop)
    return (
        f"speculation stops paying from c={stop}: {pct(gain[0])} there, "
        f"{pct(gain[1])} to {pct(gain[2])} with the noise ({span})"
    )


def level_verdicts(table: LevelTable, base: ServerConfig | None, noise_pct: float) -> list[str]:
    """The table's sentences: the schedule against each level's best and the single best
    static, and where speculation stops paying."""
    out: list[str] = []
    schedule = table.schedule
    rows = [r for r in table.rows if r.schedule is not None and r.best is not None]
    if schedule is not None and rows:
        label = f"#{schedule.index + 1} {record_label(schedule, base)}"
        gaps = [r.versus(r.best) for r in rows]
        worst = min(g for g in gaps if g is not None)
        every = "the per-level best at every level"
        text = f"schedule {label}: within {abs(min(worst, 0.0)):.1f} % of {every}"
        if worst > 0:
            text = f"schedule {label}: at or above {every} ({pct(worst)} at worst)"
        if schedule.capacity:
            text += f" (capacity {schedule.capacity:,} KV tokens)"
        weak = table.worst_single
        if table.single is not None and weak is not None and weak.schedule is not None:
            single = f"#{table.single.index + 1} {record_label(table.single, base)}"
            text += (
                f"; {pct(weak.versus(weak.single))} at c={weak.concurrency} against the single "
                f"best static ({single}), where it is weakest"
            )
        out.append(text)
    elif table.single is not None and (weak := table.worst_single) is not None:
        out.append(_behind_text(table, weak, base))
    out += contender_verdicts(table, base)
    paying = stops_paying_text(table, noise_pct)
    if paying is not None:
        out.append(paying)
    breakeven = breakeven_text(table, base)
    if breakeven is not None:
        out.append(breakeven)
    if (said := _result(table, base)) is not None:
        out.append(said)
    return out


def contender_verdicts(table: LevelTable, base: ServerConfig | None) -> list[str]:
    """The engine's own adaptive mode against the schedule: each contender's figure where it
    is weakest, the schedule's margin there and at its worst, its capacity — or why the
    engine has none."""
    out: list[str] = []
    for contender in table.contenders:
        head = f"{contender.title} ({contender.key})"
        if contender.refusal is not None:
            if contender.key == "a":  # one sentence for an engine without the mode
                out.append(f"no engine adaptive mode to compare: {contender.refusal.message}")
            continue
        trial = contender.trial
        if trial is None:
            continue  # the sweep runs it after the schedule's proof
        if not trial.levels:
            out.append(f"{head} #{trial.index + 1}: {contender.mode} — {trial.status.value}")
            continue
        rivalry = table.rivalry(contender.key)
        capacity = (
            f"capacity {trial.capacity:,} KV tokens" if trial.capacity else "capacity unknown"
        )
        text = f"{head} #{trial.index + 1}: {contender.mode}; {capacity}"
        if rivalry is not None:
            (wc, wg), (xc, xg) = rivalry.at_weakest, rivalry.worst
            text += (
                f"; the schedule is {pct(wg)} against it at c={wc}, where it is weakest, "
                f"and {pct(xg)} at c={xc}, its closest"
            )
            if rivalry.contender_wins:
                text += (
                    f" — the engine's own mode wins beyond the noise ({rivalry.noise_pct:g} %):"
                    f" deploy #{trial.index + 1} rather than the schedule"
                )
        out.append(text)
    return out


def result_text(
    schedule: TrialRecord,
    single: TrialRecord,
    lead_pct: float,
    at: int,
    base: ServerConfig | None,
) -> str:
    """The sweep's result when a schedule is proven (``core.search.answer``), the same words
    in the header's best, the per-level table, the report and ``specconsole best``."""
    label = f"#{schedule.index + 1} {record_label(schedule, base)}"
    other = f"#{single.index + 1} {record_label(single, base)}"
    return (
        f"result: {label} ({schedule_unit(schedule.effective)}): {pct(lead_pct)} over the "
        f"single best static {other} at c={at}, behind it nowhere beyond the noise"
    )


def result_short(table: LevelTable) -> str:
    """``result: #7 schedule, +6.2 % over #3 at c=1`` or ``result: #3, the single best
    static`` — the result line in a few words ('' without a schedule and a single best)."""
    schedule, single = table.schedule, table.single
    if schedule is None or single is None:
        return ""
    lead = proven(table)
    if lead is None:
        return f"result: #{single.index + 1}, the single best static"
    return (
        f"result: #{schedule.index + 1} schedule, {pct(lead[0])} over #{single.index + 1} "
        f"at c={lead[1]}"
    )


def _result(table: LevelTable, base: ServerConfig | None) -> str | None:
    """The table's last line: the schedule as the sweep's result, or why the single best
    static stays it (None without both)."""
    schedule, single = table.schedule, table.single
    if schedule is None or single is None:
        return None
    lead = proven(table)
    if lead is not None:
        return result_text(schedule, single, lead[0], lead[1], base)
    other = f"#{single.index + 1} {record_label(single, base)}"
    gaps = [(g, r.concurrency) for r in table.rows if (g := r.versus(r.single)) is not None]
    if not gaps:
        return f"result: {other}, the single best static (the schedule ran no level it did)"
    worst, at = min(gaps)
    if worst < 0:
        why = f"the schedule falls {abs(worst):.1f} % behind it at c={at}"
    else:
        why = "the schedule leads it nowhere beyond the noise"
    return f"result: {other}, the single best static: {why}"


def _behind_text(table: LevelTable, weak: LevelRow, base: ServerConfig | None) -> str:
    """The single best static's real gap at its weakest level, and what to do about it in
    the engine's terms: a schedule by batch size where the engine can deploy one, else its
    own reason and fix (llama-server drafts one length whatever the busy slots)."""
    assert table.single is not None and weak.best is not None
    single = f"#{table.single.index + 1} {record_label(table.single, base)}"
    there = f"#{weak.best.number} {record_label(weak.best.trial, base)}"
    text = (
        f"the single best static ({single}) falls {pct(weak.single_behind)} behind the "
        f"level's best ({there}) at c={weak.concurrency}"
    )
    chosen = tuple(
        LevelPick(r.concurrency, r.best.trial.config) for r in table.rows if r.best is not None
    )
    # the schedule's check loads validation and plans: only when a verdict needs it
    from specconsole.core.search.per_level import schedule_for

    scheduled = None if base is None else schedule_for(base, chosen)
    if scheduled is None or isinstance(scheduled, ServerConfig):
        return f"{text}: a schedule by batch size would recover it"
    return f"{text}; no schedule: {scheduled.message} Instead: {scheduled.fix}"


def level_series(table: LevelTable, base: ServerConfig | None) -> tuple[Series, ...]:
    """The schedule chart's lines over concurrency: each level's best static (the envelope),
    the single best static, no speculation and the schedule."""
    xs = tuple(float(r.concurrency) for r in table.rows)

    def line(label: str, figures: list[LevelFigure | None], number: int) -> Series | None:
        pairs = [(x, f.value) for x, f in zip(xs, figures, strict=True) if f is not None]
        if not pairs:
            return None
        return Series(label, tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), number)

    def named(figures: list[LevelFigure | None], what: str) -> tuple[str, int]:
        trial = next((f.trial for f in figures if f is not None), None)
        if trial is None:
            return what, 0
        return f"{what} #{trial.index + 1} {record_label(trial, base)}", trial.index + 1

    lines = [line("best static per level", [r.best for r in table.rows], 0)]
    for what, figures in (
        ("single best", [r.single for r in table.rows]),
        ("none", [r.baseline for r in table.rows]),
        ("schedule", [r.schedule for r in table.rows]),
    ):
        label, number = named(figures, what)
        lines.append(line(label, figures, number))
    return tuple(s for s in lines if s is not None)


def _short(f: LevelFigure | None) -> str:
    return DASH if f is None else format_rate(f.value, 1)


def compact_lines(table: LevelTable, width: int | None = None) -> list[str]:
    """The table for a narrow pane: per level the best static (trial and figure), the
    schedule against it and against the single best static, the engine's adaptive
    contenders ``(a)`` and ``(b)`` where they ran, no speculation and speculation's gain, the
    best's lead — aligned, the least wanted columns left out in ``width`` (:func:`fit_rows`)."""
    return fit_rows(compact_rows(table), width)


COMPACT_CUT_ORDER: tuple[str, ...] = (
    *("lead", "gain", "vs best", "vs single", "(b)", "(a)", "none", "best static", "schedule"),
)
"""The order a narrow per-level box leaves its columns out, least wanted first (``c`` always
stays; a column not named goes first). The table answers "the schedule against the single
best static, speculation off and the engine's own adaptive mode", so the figures stay
longest: the schedule's, each level's best static's, no speculation's (a schedule is worth
nothing where speculation does not pay), the engine's adaptive contenders' (whether its own
mode, as shipped (a) or over the schedule's lengths (b), would do as well: their sentences
are the first a short box leaves out), then the schedule against the single best static
(the result's line under the table says where it leads); what the shown figures already say
goes first: vs best, speculation's gain, the best's lead."""

LEFT_ALIGNED: frozenset[str] = frozenset({"best static", "lead"})
"""The compact table's columns that are words (a trial number, a lead) rather than figures."""


def compact_rows(table: LevelTable) -> tuple[tuple[str, ...], ...]:
    """:func:`compact_lines`' cells, its header first (in reading order: what :func:`fit_rows`
    leaves out on a narrow pane is :data:`COMPACT_CUT_ORDER`'s business)."""
    keys = [c.key for c in _ran(table)]
    header = (
        *("c", "best static", "schedule", "vs best", "vs single"),
        *(f"({k})" for k in keys),
        *("none", "gain", "lead"),
    )
    rows: list[tuple[str, ...]] = [header]
    for row in table.rows:
        best = DASH if row.best is None else f"#{row.best.number} {_short(row.best)}"
        lead = DASH if row.runner_up is None else _lead(row).replace(" over ", " ")
        gain = row.gain
        rows.append(
            (
                str(row.concurrency),
                best,
                _short(row.schedule),
                pct(row.versus(row.best)),
                pct(row.versus(row.single)),
                *(_short(row.contender(k)) for k in keys),
                _short(row.baseline),
                DASH if gain is None else pct(gain[0], 0),
                lead,
            )
        )
    return tuple(rows)


def fit_rows(rows: tuple[tuple[str, ...], ...], width: int | None = None) -> list[str]:
    """``rows`` (its header first) aligned; in ``width`` cells the columns that do not fit
    are left out whole in :data:`COMPACT_CUT_ORDER` (a number is whole or absent, a column
    shown only with every column more wanted), the first always kept, the rest in reading
    order. Every column is a number, right-aligned, but :data:`LEFT_ALIGNED`'s."""
    if not rows:
        return []
    header = rows[0]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    kept = list(range(len(widths)))
    order = COMPACT_CUT_ORDER  # a column not named in it goes first
    cuts = sorted(kept[1:], key=lambda i: order.index(header[i]) if header[i] in order else -1)

    def wide() -> int:
        return sum(widths[i] for i in kept) + 2 * (len(kept) - 1)

    while cuts and width is not None and wide() > width:
        kept.remove(cuts.pop(0))
    return [
        "  ".join(
            line[i].ljust(widths[i]) if header[i] in LEFT_ALIGNED else line[i].rjust(widths[i])
            for i in kept
        ).rstrip()
        for line in rows
    ]


def what_if_text(what_if: WhatIf, base: ServerConfig | None) -> str:
    """``with accept length fixed at 4.5 (SGLANG_SIMULATE_ACC_LEN), the best per level would
    be: c=1 #9 steps=4 … ; c=64 #10 steps=3 …`` — the what-if's per-level answer."""
    parts = [
        f"c={c} #{f.number} {_plain(f.trial, base)} {format_rate(f.value, 1)}"
        for c, f in what_if.bests
    ]
    return f"with {what_if.fixed}, the best per level would be: " + "; ".join(parts)


def _plain(trial: object, base: ServerConfig | None) -> str:
    """A what-if trial's configuration without its what-if (the static it fixes)."""
    return record_label(trial, base).split(" what-if ")[0]  # type: ignore[arg-type]
