"""Trials that measure a configuration again under other benchmark settings, and the figures
a proof reads from every measurement of a configuration.

Why its own module: a schedule proven on the ladder's levels is never measured where it
switches, nor on traffic it was not derived from. Its proof measures configurations already
measured again — at the concurrencies around an edge (``edge``), on another workload
(``workload``) — as trials of their own (``TrialRecord.remeasure``), so each is recorded,
resumed and reported like any trial and never mistaken for a measurement of the plan's
ladder. This module says what such a trial benchmarks (:func:`remeasured_spec`) and reads a
configuration's figure at one concurrency from all its measurements on one workload
(:func:`figure_at`). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from specconsole.core.config.model import ServerConfig
from specconsole.core.measure.trials import Remeasure, TrialRecord, TrialStatus
from specconsole.core.ports import BenchSpec
from specconsole.core.search.contenders import identity

__all__ = [
    "EDGE",
    "WORKLOAD",
    "figure_at",
    "measured_at",
    "remeasured",
    "remeasured_spec",
]

EDGE = "edge"
"""A trial measured at the concurrencies just below and above a schedule's edges."""
WORKLOAD = "workload"
"""A trial measured on another workload than the plan's."""


def remeasured_spec(spec: BenchSpec, remeasure: Remeasure) -> BenchSpec:
    """The plan's benchmark as a re-measuring trial runs it: its own ladder (no level run
    first), its own workload. A workload of alternating phases is measured by requests
    (``window = "completed"``): its phases end where their requests end."""
    changes: dict[str, object] = {}
    if remeasure.ladder:
        changes.update(ladder=tuple(remeasure.ladder), lead=None)
    if remeasure.dataset:
        changes["prompts"] = remeasure.dataset
        if remeasure.dataset.startswith("alternating:") and spec.window == "steady":
            changes.update(window="completed", window_s=None, window_tokens=None)
    return replace(spec, **changes)  # type: ignore[arg-type]


def remeasured(
    trials: Sequence[TrialRecord], config: ServerConfig, remeasure: Remeasure
) -> TrialRecord | None:
    """The decided trial that re-measured ``config`` this way (None: not yet)."""
    key = identity(config)
    for t in trials:
        decided = t.status is not TrialStatus.CANCELLED
        if decided and t.remeasure == remeasure and identity(t.config) == key:
            return t
    return None


def _workload(trial: TrialRecord) -> str:
    return trial.remeasure.dataset if trial.remeasure is not None else ""


def figure_at(
    trials: Sequence[TrialRecord], config: ServerConfig, concurrency: int, dataset: str = ""
) -> float | None:
    """``config``'s aggregate output tok/s at ``concurrency`` on ``dataset`` (``''``: the
    plan's), from its latest ``ok`` trial that measured that level there (None: none did)."""
    key = identity(config)
    for t in reversed(trials):
        if t.status is not TrialStatus.OK or identity(t.config) != key:
            continue
        if _workload(t) != dataset:
            continue
        level = next((lv for lv in t.levels if lv.concurrency == concurrency), None)
        if level is not None:
            return level.output_tok_s
    return None


def measured_at(trials: Sequence[TrialRecord], config: ServerConfig, dataset: str = "") -> set[int]:
    """The concurrencies some ``ok`` trial of ``config`` measured on ``dataset``, or tried
    to (a decided trial that did not measure them counts as tried: never proposed again)."""
    key = identity(config)
    out: set[int] = set()
    for t in trials:
        if identity(t.config) != key or _workload(t) != dataset:
            continue
        if t.status is TrialStatus.OK:
            out |= {lv.concurrency for lv in t.levels}
        if t.remeasure is not None and t.status is not TrialStatus.CANCELLED:
            out |= set(t.remeasure.ladder)
    return out
