"""The report's section on predictions against what ran: for every trial that was forecast,
the load and the capacity (and the throughput per level where a model predicted it) beside
what was measured, each figure's error, the session's mean absolute percentage error, and
every prediction wrong beyond its stated band as a finding.

Why a module of its own: the forecast (``core.measure.forecast``, made by
``core.search.forecasting`` before each deploy) is only worth what its measured error says;
the Markdown and JSON reports both show that error from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specconsole.core.config.model import ServerConfig
from specconsole.core.measure.forecast import ForecastCheck, check, session_error
from specconsole.core.measure.trials import TrialRecord
from specconsole.present.labels import record_label

__all__ = ["prediction_checks", "prediction_document", "prediction_lines"]


def prediction_checks(trials: Sequence[TrialRecord]) -> list[tuple[TrialRecord, ForecastCheck]]:
    """Every forecast trial with its check, in trial order."""
    out: list[tuple[TrialRecord, ForecastCheck]] = []
    for t in trials:
        levels = [(lv.concurrency, lv.output_tok_s) for lv in t.levels]
        got = check(t.forecast, t.status.value, t.capacity, levels)
        if got is not None:
            out.append((t, got))
    return out


def _load_cell(t: TrialRecord, c: ForecastCheck) -> str:
    f = t.forecast
    assert f is not None
    said = "—" if f.loads is None else ("loads" if f.loads else "not to load")
    mark = "" if c.load_right is None else (" ✓" if c.load_right else " ✗")
    return f"{said}{mark}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1%}".replace("-", "−")


def prediction_lines(trials: Sequence[TrialRecord], base: ServerConfig | None) -> list[str]:
    """Markdown: the per-trial table, the session's error and the misses ('' when nothing
    was forecast)."""
    checks = prediction_checks(trials)
    if not checks:
        return []
    mape = session_error([c for _t, c in checks])
    out = [
        "",
        "## Predictions against what ran",
        "",
        "| trial | config | predicted | ran | capacity predicted | measured | error | band "
        "| throughput error | source |",
        "|---:|---|---|---|---:|---:|---:|---:|---|---|",
    ]
    for t, c in checks:
        f = t.forecast
        assert f is not None
        cap = "—" if f.capacity is None else f"{f.capacity:,}"
        measured = "—" if t.capacity is None else f"{t.capacity:,}"
        levels = " ".join(f"c={k} {_pct(e)}" for k, e in c.level_errors) or "no model"
        out.append(
            f"| {t.index + 1} | {record_label(t, base)} | {_load_cell(t, c)} | {t.status.value} "
            f"| {cap} | {measured} | {_pct(c.capacity_error)} | ±{f.capacity_band:.0%} "
            f"| {levels} | {f.source} |"
        )
    wrong = sum(1 for _t, c in checks if c.load_right is False)
    judged = sum(1 for _t, c in checks if c.load_right is not None)
    summary = f"{judged - wrong} of {judged} loads predicted right" if judged else "no load judged"
    error = "no figure to compare" if mape is None else f"mean absolute error {mape:.1f} %"
    out += ["", f"Session: {summary}; {error} over the predicted figures."]
    for t, c in checks:
        for miss in c.misses:
            out.append(f"- ⚠ trial {t.index + 1} `{record_label(t, base)}`: {miss}")
    return out


def prediction_document(trials: Sequence[TrialRecord]) -> dict[str, Any] | None:
    """The same for the JSON report (None when nothing was forecast)."""
    checks = prediction_checks(trials)
    if not checks:
        return None
    return {
        "mape_pct": session_error([c for _t, c in checks]),
        "trials": [
            {
                "trial": t.index + 1,
                "loads_predicted": t.forecast.loads if t.forecast else None,
                "load_right": c.load_right,
                "capacity_predicted": t.forecast.capacity if t.forecast else None,
                "capacity_measured": t.capacity,
                "capacity_error": c.capacity_error,
                "level_errors": [{"concurrency": k, "error": e} for k, e in c.level_errors],
                "mape_pct": c.mape,
                "misses": list(c.misses),
                "source": t.forecast.source if t.forecast else "",
            }
            for t, c in checks
        ],
    }
