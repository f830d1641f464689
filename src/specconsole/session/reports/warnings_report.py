"""The report's warnings: what each trial's record says was not trusted or left out.

Why a section of its own: a figure a report shows is only as good as what the box said, and a
box lies by accident (issue 44) — a release it could not tell (trials then deployed with the
flags every release accepts), a ``--help`` in another layout (flags then checked by the
engine's rules only), a proxy's HTML where ``/server_info`` or ``/version`` should be, GPU
telemetry that stopped mid-trial. Each trial's record keeps these (its ``warnings``, its
``gpu.lost``); the console shows them in the trial's details, and this section gives them to
the Markdown and the HTML report alike (the JSON report carries the record's fields). The
figures they touch say so where they stand: a level's acceptance ``unknown (counter reset
…)``, its power ``unknown (no power from GPU 1)``.
"""

from __future__ import annotations

from collections.abc import Sequence

from specconsole.core.config.model import ServerConfig
from specconsole.core.machine.state import TrialRecord
from specconsole.present.figures.gpu import telemetry_lost
from specconsole.present.labels import record_label

__all__ = ["trial_warnings", "warnings_markdown"]


def trial_warnings(
    trials: Sequence[TrialRecord], base: ServerConfig | None
) -> list[tuple[int, str, str]]:
    """(trial number, its label, a warning) for every warning of every trial, in order."""
    out: list[tuple[int, str, str]] = []
    for t in trials:
        said = [*t.warnings, *filter(None, [telemetry_lost(t)])]
        out += [(t.index + 1, record_label(t, base), text) for text in said]
    return out


def warnings_markdown(trials: Sequence[TrialRecord], base: ServerConfig | None) -> list[str]:
    """The Markdown section (nothing when no trial has a warning)."""
    rows = trial_warnings(trials, base)
    if not rows:
        return []
    return ["", "## Warnings", "", *(f"- trial {n} `{label}`: {text}" for n, label, text in rows)]
