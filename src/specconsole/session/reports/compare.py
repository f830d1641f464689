"""Two sessions side by side: ``specconsole report A B``.

Why: the question after a second sweep is "what changed?" — a new SGLang release, another
box, a different prompt shape. Trials are matched by their configuration label (how each
differs from its plan's base, so the same ``steps=3 draft=4`` lines up across sessions) and
each headline figure is shown for A and B with B's change in percent (with ``[bench]
repeats`` on both sides: mean ± 95 % CI half-width, and "CIs overlap" when the change is
within the noise). The findings of both sessions follow, so a moved boundary ("9 loads" →
"7 loads") is seen at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specconsole.core.machine.state import TrialRecord, TrialStatus
from specconsole.core.measure.stats import Spread
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.search.strategy import findings
from specconsole.present.formats import DASH, format_rate_ci
from specconsole.present.labels import record_label
from specconsole.present.status import status_word
from specconsole.session.reports.report_json import report_document
from specconsole.session.selection import report_trials


@dataclass(frozen=True, slots=True)
class Side:
    """One session of the comparison."""

    name: str
    trials: tuple[TrialRecord, ...]
    plan: SweepPlan | None


def _latest_by_label(side: Side) -> dict[str, TrialRecord]:
    """Each configuration's latest trial (a retry replaces the crash it retried)."""
    base = side.plan.base if side.plan is not None else None
    out: dict[str, TrialRecord] = {}
    for record in report_trials(side.trials):
        out[record_label(record, base)] = record
    return out


def _change(a: float | None, b: float | None) -> str:
    if a is None or b is None or a == 0:
        return DASH
    return f"{(b - a) / a * 100:+.1f}%"


def _cell(record: TrialRecord | None, figure: str) -> float | None:
    if record is None or record.status is not TrialStatus.OK:
        return None
    value: float | None = getattr(record, figure)
    return value


def _interval(record: TrialRecord | None, figure: str) -> list[float] | None:
    """The figure's 95 % CI over ``[bench] repeats`` (``single_request`` or
    ``peak_aggregate``), or None when it was measured once."""
    if record is None or record.status is not TrialStatus.OK:
        return None
    spread: Spread | None = getattr(record, f"{figure}_spread")
    return None if spread is None else [spread.ci_low, spread.ci_high]


def _figure(value: float | None, interval: list[float] | None) -> str:
    half = None if interval is None else (interval[1] - interval[0]) / 2.0
    return format_rate_ci(value, half, 1)


def _change_text(
    a: float | None, b: float | None, ia: list[float] | None, ib: list[float] | None
) -> str:
    """B's change in percent; "(CIs overlap)" when both were repeated and their 95 %
    intervals overlap, so the change is not shown to be real."""
    text = _change(a, b)
    if ia is not None and ib is not None and ia[0] <= ib[1] and ib[0] <= ia[1]:
        return f"{text} (CIs overlap)"
    return text


def rows(a: Side, b: Side) -> list[dict[str, Any]]:
    """One row per configuration label in either session (A's order, then B's new ones)."""
    left, right = _latest_by_label(a), _latest_by_label(b)
    labels = list(left) + [label for label in right if label not in left]
    out = []
    for label in labels:
        ra, rb = left.get(label), right.get(label)
        row: dict[str, Any] = {"config": label}
        for side, record in (("a", ra), ("b", rb)):
            row[f"{side}_trial"] = None if record is None else record.index + 1
            row[f"{side}_status"] = None if record is None else record.status.value
            row[f"{side}_single_request_tok_s"] = _cell(record, "single_request_tok_s")
            row[f"{side}_peak_aggregate_tok_s"] = _cell(record, "peak_aggregate_tok_s")
            row[f"{side}_single_request_ci95"] = _interval(record, "single_request")
            row[f"{side}_peak_aggregate_ci95"] = _interval(record, "peak_aggregate")
        out.append(row)
    return out


def to_markdown(a: Side, b: Side) -> str:
    out = [f"# {a.name} vs {b.name}", ""]
    out.append(
        "| config | A trial | B trial | A single | B single | change | A peak | B peak | change |"
    )
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows(a, b):

        def trial(side: str, r: dict[str, Any] = row) -> str:
            number, status = r[f"{side}_trial"], r[f"{side}_status"]
            if number is None:
                return DASH
            return (
                str(number) if status == "ok" else f"{number} ({status_word(TrialStatus(status))})"
            )

        sa, sb = row["a_single_request_tok_s"], row["b_single_request_tok_s"]
        pa, pb = row["a_peak_aggregate_tok_s"], row["b_peak_aggregate_tok_s"]
        isa, isb = row["a_single_request_ci95"], row["b_single_request_ci95"]
        ipa, ipb = row["a_peak_aggregate_ci95"], row["b_peak_aggregate_ci95"]
        out.append(
            f"| {row['config']} | {trial('a')} | {trial('b')} | "
            f"{_figure(sa, isa)} | {_figure(sb, isb)} | {_change_text(sa, sb, isa, isb)} | "
            f"{_figure(pa, ipa)} | {_figure(pb, ipb)} | {_change_text(pa, pb, ipa, ipb)} |"
        )
    for tag, side in (("A", a), ("B", b)):
        found = findings(side.plan, side.trials) if side.plan is not None else ()
        out += ["", f"## Findings of {tag} ({side.name})", ""]
        out += [f"- {f}" for f in found] or ["(none)"]
    return "\n".join(out) + "\n"


def to_document(a: Side, b: Side) -> dict[str, Any]:
    """Both reports (each as ``--format json`` prints it) and the matched rows."""
    return {
        "a": report_document(a.trials, a.plan, a.name),
        "b": report_document(b.trials, b.plan, b.name),
        "rows": rows(a, b),
    }
