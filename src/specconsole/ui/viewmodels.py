"""Plain view models: what each pane shows, computed from plain data by pure functions.

Widgets render these and nothing else, so everything a pane decides (what the header says in
each phase, how a ladder level is summarised, which chart series exist, what a crash banner
lists) is testable without starting Textual, and the snapshot tests only have to prove the
drawing. Nothing here imports Textual; the adapters from the controller's state snapshot to
these types live in ``ui.adapt``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from specconsole.present.figures.levels import fit_rows
from specconsole.present.keyboard.footer import Part

if TYPE_CHECKING:
    from specconsole.core.measure.stats import Spread
    from specconsole.present.charts.series import Series

LINE_KINDS: tuple[str, ...] = ("fatal", "warning", "capacity", "ready", "progress")
"""Journal highlight classes, most severe first (the stylesheet styles ``journal--<kind>``)."""

LineClassifier = Callable[[str], "str | None"]
"""Maps one log line to a ``LINE_KINDS`` member, or ``None`` for an ordinary line."""


class Tone(StrEnum):
    """How alarming a status is; the stylesheet maps tones to theme colours."""

    IDLE = "idle"
    BUSY = "busy"
    GOOD = "good"
    WARN = "warn"
    BAD = "bad"


@dataclass(frozen=True, slots=True)
class HeaderView:
    """The one-line status header plus the configuration summary under it."""

    title: str
    """``host · engine · service``."""
    phase: str
    """Upper-case phase word with sub-phase, e.g. ``LOADING · KV cache``."""
    elapsed: str
    """Time in the phase, ``m:ss`` (empty when not timed)."""
    trial: str
    """``trial 3/6`` or empty."""
    connection: str
    """``connected`` / ``reconnecting`` / ``disconnected``."""
    config_summary: str
    """Short description of the configuration being tried."""
    tone: Tone = Tone.IDLE
    sweep: str = ""
    """``sweep running`` / ``sweep paused`` / empty."""
    eta: str = ""
    """The sweep's ETA, ``ETA 8:10`` (``present.figures.progress``), or empty."""
    best: tuple[str, ...] = ()
    """The sweep's answer so far, longest form first (``present.figures.progress.best_forms``)."""
    ran: str = ""
    """The sweep's elapsed time, ``12:03 elapsed``, or empty."""
    trial_forms: tuple[str, ...] = ()
    """``trial``'s forms, longest first (``present.figures.progress.trial_count``)."""

    def status_parts(self) -> tuple[Part, ...]:
        """The first line's parts after the phase, in the order drawn, each with its
        priority: the ETA and the best first, then the phase's time, the trial, the sweep's
        state, the connection and the sweep's elapsed time."""
        return (
            Part((self.elapsed, self.elapsed.split(" (")[0]), 3),
            Part((self.eta,), 1),
            Part(self.best, 2),
            Part(self.trial_forms or (self.trial,), 4),
            Part((self.sweep,), 5),
            Part((self.connection,), 6),
            Part((self.ran,), 7),
        )


@dataclass(frozen=True, slots=True)
class LevelView:
    """One concurrency level of the benchmark ladder."""

    concurrency: int
    completed: int = 0
    total: int = 0
    failed: int = 0
    tok_s: float | None = None
    """Live (while running) or final output tokens/s of the level."""
    ttft_p50_ms: float | None = None
    state: str = "pending"
    """``pending``, ``running``, ``done`` or ``failed``."""
    fraction: float | None = None
    """Share done when the request count is not known up front (duration mode: time)."""
    tok_s_ci: float | None = None
    """Half-width of the 95 % CI of ``tok_s`` over the runs combined (``[bench] repeats``)."""
    runs: int = 1
    """Runs of the ladder ``tok_s`` averages."""

    @property
    def done_fraction(self) -> float:
        """What the level's progress bar shows, in [0, 1]."""
        if self.fraction is not None:
            return min(1.0, max(0.0, self.fraction))
        if self.total <= 0:
            return 1.0 if self.state in ("done", "failed") else 0.0
        return min(1.0, max(0.0, self.completed / self.total))


@dataclass(frozen=True, slots=True)
class BenchView:
    """The benchmark panel: ladder progress and, when done, the two headline numbers."""

    levels: tuple[LevelView, ...] = ()
    single_tok_s: float | None = None
    """Headline 1: single-request (concurrency 1) output tok/s."""
    peak_tok_s: float | None = None
    """Headline 2: best aggregate output tok/s over the ladder."""
    peak_concurrency: int | None = None
    accept_length: float | None = None
    status: str = "idle"
    """Short phrase shown as the panel subtitle (``idle``, ``level 3/5``, ``done``)."""
    single_spread: Spread | None = None
    """Headline 1 over ``[bench] repeats``: mean, sample std, 95 % CI (None: one run)."""
    peak_spread: Spread | None = None
    """Headline 2 over the repeats (None: one run)."""


@dataclass(frozen=True, slots=True)
class ChartView:
    """Aggregate tok/s vs concurrency (a series per trial) and single-request tok/s vs the
    swept axis (one series)."""

    aggregate: tuple[Series, ...] = ()
    single: Series | None = None
    axis_name: str = "trial"
    crashed: tuple[float, ...] = ()
    """Positions on the swept axis of trials that crashed (marked on the x axis)."""
    single_title: str = ""
    """The second chart's title when it shows the search's objective over trials."""
    levels: tuple[Series, ...] = ()
    """The schedule chart's lines (each level's best static, the single best, none, the
    schedule: ``present.figures.levels``), drawn as the second chart when there are some."""


@dataclass(frozen=True, slots=True)
class TrialRow:
    """One row of the trials table."""

    key: str
    """Stable row key (the trial's index as text)."""
    columns: tuple[str, ...]
    """Column ids (``present.columns``), in display order."""
    cells: tuple[str, ...]
    """The cells' texts, one per column."""

    def cell(self, column: str) -> str:
        """The text of column ``column`` (empty when the table has no such column)."""
        try:
            return self.cells[self.columns.index(column)]
        except ValueError:
            return ""

    @property
    def label(self) -> str:
        return self.cell("label")

    @property
    def status(self) -> str:
        return self.cell("status")

    @property
    def single_tok_s(self) -> str:
        return self.cell("single")

    @property
    def peak_tok_s(self) -> str:
        return self.cell("peak")


@dataclass(frozen=True, slots=True)
class TrialDetails:
    """What the details box shows for the selected trial."""

    title: str
    lines: tuple[str, ...]
    log_excerpt: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LevelsView:
    """The trials pane's per-level box: the table and its sentences."""

    lines: tuple[str, ...]
    """The aligned table (``present.figures.levels.compact_lines``), its header first."""
    verdicts: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    """The table's cells (``compact_rows``), for a box that fits its columns to its width."""

    result_short: str = ""
    """The sweep's result in a few words, for a box with no room for its sentence."""

    def text(self, width: int, height: int | None = None) -> str:
        """The box in ``width`` × ``height`` cells: the whole columns that fit, then the
        sentences — the sweep's result first — wrapped at word boundaries, never cut; with
        too few rows, the result in a few words and the other sentences left out."""
        table = fit_rows(self.rows, width) if self.rows else list(self.lines)
        results = [v for v in self.verdicts if v.startswith("result: ")]
        others = [v for v in self.verdicts if not v.startswith("result: ")]

        def wrapped(sentences: list[str]) -> list[str]:
            return [
                line
                for v in sentences
                for line in textwrap.wrap(v, max(20, width), break_on_hyphens=False)
            ]

        said = wrapped([*results, *others])
        if height is not None and len(table) + len(said) > height:
            said = wrapped(results)
            if len(table) + len(said) > height and self.result_short:
                said = wrapped([self.result_short])
        return "\n".join([*table, *said])


@dataclass(frozen=True, slots=True)
class CrashView:
    """The crash banner/modal: what happened and what the user can do next."""

    title: str
    """e.g. ``Trial 6 crashed while loading (KV cache)``."""
    cause: str
    """Classified cause in one line."""
    excerpt: tuple[str, ...]
    """Log lines around the fatal one."""
    fixes: tuple[str, ...]
    """SGLang's own suggested fixes (and ours), one per line."""
    choices: tuple[tuple[str, str], ...] = ()
    """(key, label) of exactly the decisions available now (``present.keyboard.keys``)."""
    previews: tuple[tuple[str, str], ...] = ()
    """The same decisions with what each would deploy (``r resume: steps=7``); the banner
    shows these when they fit, else ``choices``."""


# --------------------------------------------------------------------------------------------
# Text bars and tick thinning: how the console draws progress and chart axes.
# --------------------------------------------------------------------------------------------


def progress_bar(done: int, total: int, width: int) -> str:
    """A text progress bar of exactly ``width`` cells (``█`` filled, ``░`` empty)."""
    fraction = 0.0 if total <= 0 else done / total
    return fraction_bar(fraction, width)


def fraction_bar(fraction: float, width: int) -> str:
    """A text progress bar of exactly ``width`` cells for a share in [0, 1]."""
    if width <= 0:
        return ""
    fraction = min(1.0, max(0.0, fraction))
    filled = round(fraction * width)
    return "█" * filled + "░" * (width - filled)


def summarise_levels(levels: Sequence[LevelView]) -> str:
    """Panel subtitle: which level is running, or ``done`` / ``idle``."""
    if not levels:
        return "idle"
    running = [i for i, lv in enumerate(levels) if lv.state == "running"]
    if running:
        return f"level {running[0] + 1}/{len(levels)}"
    if all(lv.state in ("done", "failed") for lv in levels):
        return "done"
    return "waiting"
