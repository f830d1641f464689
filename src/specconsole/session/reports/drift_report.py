"""The report's section on acceptance drift: each configuration's acceptance per level against
the previous session of the same model and engine, and the drops beyond the noise.

Why a module of its own: drift is a finding across sessions (``core.measure.drift``; the
previous session is found by ``session.drift``), while the rest of the report reads one
session; the Markdown and JSON reports both show it from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specconsole.core.config.model import ServerConfig
from specconsole.core.measure.drift import acceptance_drift
from specconsole.core.measure.trials import TrialRecord
from specconsole.present.labels import record_label
from specconsole.session.drift import PreviousSession

__all__ = ["drift_document", "drift_lines"]


def _builds(previous: PreviousSession) -> str:
    if previous.same_build:
        return f"the same build ({previous.build})"
    return f"build {previous.build} then, {previous.this_build} now"


def drift_lines(
    trials: Sequence[TrialRecord], previous: PreviousSession | None, base: ServerConfig | None
) -> list[str]:
    """Markdown: the comparison table and the drops beyond the noise ('' without a previous
    session or a configuration both counted)."""
    if previous is None:
        return []
    rows = acceptance_drift(trials, previous.trials)
    if not rows:
        return []
    out = [
        "",
        f"## Acceptance against the previous session ({previous.name}: {_builds(previous)})",
        "",
        "| trial | config | c | accept rate then | now | change | noise (95 %) | verdict |",
        "|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        verdict = "⚠ dropped beyond the noise" if r.dropped else "within the noise"
        if not r.dropped and r.change > r.band:
            verdict = "rose beyond the noise"
        out.append(
            f"| {r.trial.index + 1} | {record_label(r.trial, base)} | {r.concurrency} | "
            f"{r.before:.1%} | {r.rate:.1%} | {r.change * 100:+.1f} pts | ±{r.band * 100:.1f} pts "
            f"| {verdict} |"
        )
    for r in rows:
        if r.dropped:
            out.append(
                f"- ⚠ trial {r.trial.index + 1} `{record_label(r.trial, base)}` at "
                f"c={r.concurrency}: acceptance {r.before:.1%} → {r.rate:.1%} "
                f"({r.change * 100:+.1f} points, beyond ±{r.band * 100:.1f}) since "
                f"{previous.name}, {_builds(previous)}"
            )
    return out


def drift_document(
    trials: Sequence[TrialRecord], previous: PreviousSession | None
) -> dict[str, Any] | None:
    """The same for the JSON report (None without a previous session)."""
    if previous is None:
        return None
    return {
        "previous_session": previous.name,
        "build_then": previous.build,
        "build_now": previous.this_build,
        "rows": [
            {
                "trial": r.trial.index + 1,
                "previous_trial": r.before_trial.index + 1,
                "concurrency": r.concurrency,
                "accept_rate_then": r.before,
                "accept_rate_now": r.rate,
                "accept_length_then": r.length_before,
                "accept_length_now": r.length,
                "drafted_then": r.drafted_before,
                "drafted_now": r.drafted,
                "band": r.band,
                "dropped": r.dropped,
            }
            for r in acceptance_drift(trials, previous.trials)
        ],
    }
