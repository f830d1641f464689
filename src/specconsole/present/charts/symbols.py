"""The marks the console draws, and what each means (the help's "Symbols" section).

Why one home: the trials table marks the best trial, the tied and the Pareto front, the
banner and charts mark crashes, and the table marks cut columns; the help explains the same
characters, read from here, so a mark cannot change without its explanation.
"""

from __future__ import annotations

from specconsole.present.charts.series import CRASH_MARKER

TRIAL_MARKS: dict[str, str] = {"best": "★", "tied": "≈", "pareto": "◆"}
"""How the trials table marks the best trial, those statistically tied with it, and the
rest of the Pareto front (``core.plans.objective.marks``)."""

MORE_COLUMNS = "+{n} cols →"
"""The trials table's header when ``n`` columns did not fit (``←``/``→`` show them)."""
EARLIER_COLUMNS = "← {n} cols"
"""…and on the pager's last page, ``n`` columns paged past (``←`` brings them back); between
the ends it says both, ``← 1 · 2 →``."""

SYMBOLS: tuple[tuple[str, str], ...] = (
    (
        TRIAL_MARKS["best"],
        "the best trial by the plan's objective (peak aggregate tok/s unless "
        "the plan says otherwise)",
    ),
    (TRIAL_MARKS["tied"], "statistically tied with the best (their 95 % CIs overlap)"),
    (TRIAL_MARKS["pareto"], "on the Pareto front of single-request vs peak aggregate tok/s"),
    (CRASH_MARKER, "crashed: in the banner, and on the charts' x axis at its value"),
    (MORE_COLUMNS.format(n="N"), "N columns did not fit this width; → pages to them"),
    ("← M · N →", "the column pager between its ends: M columns paged past, N still to come"),
    (EARLIER_COLUMNS.format(n="M"), "the pager's last page: ← pages back to the M before"),
    ("—", "no figure (not measured, or the trial did not get that far)"),
)
"""(mark, meaning) pairs, in the help's order."""
