"""The headless run's lines that are not a table: one line per benchmark level, the deploy's
change in flags, and the one-line verdict at the end.

Why: a headless sweep is read in a scrolled terminal or a CI log, often at 80 columns. A
level line says what was measured and, for a steady window that measured fewer streams than
the level's concurrency, why ("19 of 64 streams decoding in the window: the server ran fewer
at once") instead of an unexplained "streams 19"; a deploy says which flags change, not the
400-character command line twice; and the run ends with a sentence naming the best trial,
its headline figures and the command that prints the full report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from specconsole.core.machine.state import LevelSummary, TrialRecord, TrialStatus
from specconsole.core.measure.stats import half_width
from specconsole.core.plans.objective import DEFAULT_GOAL, Goal
from specconsole.core.search.answer import answer
from specconsole.present.deploys.flagdiff import summary_lines
from specconsole.present.figures.levels import result_text
from specconsole.present.formats import format_rate_ci, format_ratio
from specconsole.present.labels import config_label

if TYPE_CHECKING:
    from specconsole.core.plans.plan import SweepPlan

SUMMARY_LIMIT = 12
"""Flag changes listed for one deploy; a longer list (a first deploy) ends with a count."""


def level_line(lv: LevelSummary) -> str:
    """``c=64  aggregate 1,528.3 tok/s  per request 26.0 tok/s`` and, when it matters,
    failures and why fewer streams than ``c`` were measured."""
    aggregate = format_rate_ci(lv.output_tok_s, half_width(lv.output_tok_s_spread), 1)
    per_request = format_rate_ci(lv.per_request_tok_s, half_width(lv.per_request_tok_s_spread), 1)
    text = (
        f"c={lv.concurrency:<3} aggregate {aggregate:>8} tok/s  per request {per_request:>7} tok/s"
    )
    notes = []
    if lv.measurement == "steady" and lv.completed < lv.concurrency:
        notes.append(
            f"{lv.completed} of {lv.concurrency} streams decoding in the window: "
            "the server ran fewer at once"
        )
    elif lv.measurement != "steady":
        notes.append(f"{lv.completed} completed")
    if lv.failed:
        notes.append(f"{lv.failed} failed")
    return text + ("  (" + "; ".join(notes) + ")" if notes else "")


def deploy_lines(diff: str) -> list[str]:
    """What a deploy changes, flag by flag (``present.deploys.flagdiff``); the unified diff itself
    is in the session's records and the console's diff pane."""
    if not diff.strip():
        return ["deploy: the box already has this configuration (no change)"]
    changes = summary_lines(diff)
    if not changes:
        return ["deploy: the unit changes (no flag changes; see the diff pane or the records)"]
    shown = [f"  {c}" for c in changes[:SUMMARY_LIMIT]]
    if len(changes) > SUMMARY_LIMIT:
        shown.append(f"  … and {len(changes) - SUMMARY_LIMIT} more")
    return ["deploy changes on the box:", *shown]


def verdict(
    trials: Sequence[TrialRecord], plan: SweepPlan | None, session: object, goal: Goal | None = None
) -> str:
    """The run's last line: the sweep's answer (``core.search.answer``: a proven schedule,
    else the best trial), its headline figures, the report command."""
    goal = goal or (plan.goal if plan is not None else DEFAULT_GOAL)
    found = answer(trials, goal, plan.noise_pct if plan is not None else 1.0)
    top = None if found is None else found.trial
    report = f"full report: specconsole report {session}"
    if found is None or top is None:
        crashed = sum(t.status is TrialStatus.CRASHED for t in trials)
        return f"verdict: no trial succeeded ({len(trials)} run, {crashed} crashed); {report}"
    base = plan.base if plan is not None else None
    single = format_rate_ci(top.single_request_tok_s, half_width(top.single_request_spread), 1)
    peak = format_rate_ci(top.peak_aggregate_tok_s, half_width(top.peak_aggregate_spread), 1)
    figures = f"peak {peak} tok/s (c={top.peak_concurrency}), single {single} tok/s"
    if top.accept_length is not None:
        figures += f", accept {format_ratio(top.accept_length)}"
    if found.gain_pct is not None and found.gain_at is not None and found.static is not None:
        said = result_text(top, found.static, found.gain_pct, found.gain_at, base)
        return f"verdict: {said}; {figures}; {report}"
    label = config_label(top.config, base)
    return f"verdict: best is trial {top.index + 1} ({label}): {figures}; {report}"
