"""Repeated benchmarks (``[bench] repeats``) as people read them: one table, one sentence.

Why a module of its own: when the ladder runs N times every headline figure is a mean with a
spread, and the Markdown, HTML and CSV reports all show the same columns — mean, sample
standard deviation and the 95 % confidence interval, for the single-request and the peak
aggregate figure of every repeated trial. Writing the rows once here keeps the three
reports identical (the console's bench panel shows the same spreads, in its own layout).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from specconsole.present.formats import DASH, format_rate
from specconsole.present.labels import record_label

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig
    from specconsole.core.machine.state import TrialRecord
    from specconsole.core.measure.stats import Spread

REPEAT_HEADERS: tuple[str, ...] = (
    "trial",
    "config",
    "runs",
    "single mean",
    "single sd",
    "single 95% CI",
    "peak mean",
    "peak sd",
    "peak 95% CI",
)
"""The repeats table's columns (every one but ``config`` numeric)."""


def repeated(trials: Sequence[TrialRecord]) -> list[TrialRecord]:
    """The trials whose figures average more than one run of the ladder."""
    return [t for t in trials if t.repeats > 1]


def _cells(spread: Spread | None, value: float | None) -> tuple[str, str, str]:
    if spread is None:
        return (format_rate(value, 1), DASH, DASH)
    interval = f"{format_rate(spread.ci_low, 1)}–{format_rate(spread.ci_high, 1)}"
    return (format_rate(spread.mean, 1), format_rate(spread.std, 1), interval)


def repeat_rows(trials: Sequence[TrialRecord], base: ServerConfig | None) -> list[tuple[str, ...]]:
    """One row per repeated trial, in ``REPEAT_HEADERS`` order."""
    return [
        (
            str(t.index + 1),
            record_label(t, base),
            str(t.repeats),
            *_cells(t.single_request_spread, t.single_request_tok_s),
            *_cells(t.peak_aggregate_spread, t.peak_aggregate_tok_s),
        )
        for t in repeated(trials)
    ]


def repeats_note(trials: Sequence[TrialRecord]) -> str:
    """The sentence saying what ``±`` means, when some trial was benchmarked repeatedly."""
    runs = sorted({t.repeats for t in repeated(trials)})
    if not runs:
        return ""
    counts = " or ".join(str(n) for n in runs)
    return (
        f"Figures of repeated trials are means over {counts} runs of the ladder ± the half-width "
        "of their 95 % confidence interval (Student's t; [bench] repeats)."
    )
