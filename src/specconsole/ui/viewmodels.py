"""Plain view models: what each pane shows, computed from plain data by pure functions.

Widgets render these and nothing else, so everything a pane decides (what the header says in
each phase, how a ladder level is summarised, which chart series exist, what a crash banner
lists) is testable without starting Textual, and the snapshot tests only have to prove the
drawing. Nothing here imports Textual; the adapters from the controller's state snapshot to
these types live in ``ui.adapt``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

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


@dataclass(frozen=True, slots=True)
class Series:
    """One line of the chart."""

    label: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class ChartView:
    """Aggregate tok/s vs concurrency (a series per trial) and single-request tok/s vs the
    swept axis (one series)."""

    aggregate: tuple[Series, ...] = ()
    single: Series | None = None
    axis_name: str = "trial"


@dataclass(frozen=True, slots=True)
class TrialRow:
    """One row of the trials table."""

    key: str
    """Stable row key (the trial's index as text)."""
    label: str
    status: str
    single_tok_s: str
    peak_tok_s: str
    capacity: str
    accept_length: str


@dataclass(frozen=True, slots=True)
class TrialDetails:
    """What the details box shows for the selected trial."""

    title: str
    lines: tuple[str, ...]
    log_excerpt: tuple[str, ...] = ()


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
    choices: tuple[tuple[str, str], ...] = field(
        default=(
            ("r", "resume next"),
            ("t", "retry"),
            ("e", "edit"),
            ("k", "skip"),
            ("o", "roll back"),
        )
    )
    """(key, label) pairs; ``r`` always resumes."""


# --------------------------------------------------------------------------------------------
# Formatting helpers: one place for how numbers look on screen.
# --------------------------------------------------------------------------------------------

DASH = "—"


def format_elapsed(seconds: float | None) -> str:
    """``m:ss`` (or ``h:mm:ss``) for a non-negative duration; empty for ``None``."""
    if seconds is None or math.isnan(seconds):
        return ""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def format_rate(value: float | None) -> str:
    """tok/s with no decimals and thousands separators; a dash when unknown."""
    if value is None or math.isnan(value):
        return DASH
    return f"{value:,.0f}"


def format_ms(value: float | None) -> str:
    if value is None or math.isnan(value):
        return DASH
    return f"{value:,.0f} ms"


def format_int(value: int | None) -> str:
    return DASH if value is None else f"{value:,}"


def format_ratio(value: float | None, digits: int = 2) -> str:
    if value is None or math.isnan(value):
        return DASH
    return f"{value:.{digits}f}"


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


def thin_ticks(
    positions: Sequence[float], labels: Sequence[str], width: int
) -> tuple[list[float], list[str]]:
    """Drop tick labels that would crowd each other on an axis ``width`` cells wide.

    plotext resolves overlapping labels itself, but in an order that depends on string
    hashing (so it changes between processes); thinning first, conservatively and left to
    right, keeps charts identical from run to run.
    """
    if not positions:
        return [], []
    low, high = min(positions), max(positions)
    span = (high - low) or 1.0
    kept_pos: list[float] = []
    kept_labels: list[str] = []
    last_end = -(10**9)
    for pos, label in sorted(zip(positions, labels, strict=True)):
        col = round((pos - low) / span * max(1, width - 1))
        start = col - len(label) // 2
        if start > last_end + 1:
            kept_pos.append(pos)
            kept_labels.append(label)
            last_end = start + len(label)
    return kept_pos, kept_labels
