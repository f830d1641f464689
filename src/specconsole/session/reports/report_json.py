"""The machine-readable report: ``specconsole report SESSION --format json``.

Why a document of its own: scripts compare sessions, feed dashboards and gate CI on the
numbers, so every trial carries its *full* configuration (the ``[server]`` keys, as a plan
would write them; environment values redacted), its status with the reason, and every
ladder level's metrics with their spread (TTFT and ITL p50/p99, failures); then the findings,
the Pareto set and the best configuration per concurrency. ``docs/report-schema.json``
documents the shape (``SCHEMA_ID``); a test validates the demo session's report against it.
Level objects carry every recorded ``LevelSummary`` field, so figures added to the record
(repeats, confidence intervals) appear without a schema change (``additionalProperties``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

from specconsole.core.config.model import ServerConfig
from specconsole.core.config.secrets import redact_config
from specconsole.core.machine.state import TrialRecord
from specconsole.core.measure.stats import Spread
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.plans.tables import server_config_to_table
from specconsole.core.search.answer import answer
from specconsole.core.search.draftcost import draft_cost
from specconsole.core.search.eta import estimate
from specconsole.core.search.levels import role_of
from specconsole.core.search.strategy import findings
from specconsole.present.figures.acceptance import chunk_per_step
from specconsole.present.figures.progress import figure_text, report_glance, span
from specconsole.present.labels import measurement_note, record_label
from specconsole.present.probes import probe_text
from specconsole.present.status import status_detail, status_word
from specconsole.session.drift import PreviousSession
from specconsole.session.reports.drift_report import drift_document
from specconsole.session.reports.levels_report import fixed_text, levels_document
from specconsole.session.reports.predictions_report import prediction_document
from specconsole.session.reports.proof_report import proof_document
from specconsole.session.selection import best_per_concurrency, pareto, report_trials

SCHEMA_ID = "https://specconsole.invalid/report-schema.json"
"""The ``$id`` of docs/report-schema.json; documents name it in ``$schema``-like ``schema``."""

SCHEMA_VERSION = 1


def config_document(config: ServerConfig) -> dict[str, Any]:
    """The ``[server]`` table of ``config``, environment values redacted
    (``core.config.secrets``)."""
    return server_config_to_table(redact_config(config))


def _spread(spread: Spread | None) -> dict[str, Any] | None:
    """A headline's mean, sample std and 95 % CI over ``[bench] repeats`` (None: one run)."""
    if spread is None:
        return None
    return {k: v for k, v in spread.to_dict().items() if k != "values"}  # records keep no runs


def _level(level: Any, per_step: bool = True) -> dict[str, Any]:
    document = dataclasses.asdict(level)
    counters = level.counters  # with the derived figures (acceptance length, rate, per position)
    document["counters"] = None if counters is None else counters.to_dict()
    document["gpu"] = None if level.gpu is None else level.gpu.to_dict()  # with the means
    document["tokens_per_joule"] = level.tokens_per_joule
    # the client's tokens per chunk against the engine's, where a chunk is a decode step
    document["accept_disagreement"] = level.accept_disagreement if per_step else None
    return document


def _crash(record: TrialRecord) -> dict[str, Any] | None:
    crash = record.crash
    if crash is None:
        return None
    return {
        "cause": crash.cause,
        "message": crash.message,
        "phase": crash.phase.value,
        "load_stage": None if crash.load_stage is None else crash.load_stage.value,
        "exit_status": crash.exit_status,
        "signal": crash.signal,
        "capacity": crash.capacity,
        "excerpt": list(crash.excerpt),
        "fixes": list(crash.fixes),
        "gpu_memory": [s.to_dict() for s in crash.gpu_memory],
    }


def unit_diff(record: TrialRecord) -> str:
    """The unified diff of what the trial deployed against what was on the box (values
    redacted), when the deploy recorded one; empty otherwise."""
    return record.deploy_diff


def _draft_cost(record: TrialRecord, trials: Sequence[TrialRecord]) -> dict[str, Any] | None:
    """What the trial's draft costs in KV tokens (``core.search.draftcost``), if known."""
    cost = draft_cost(record, trials)
    if cost is None:
        return None
    baseline = None if cost.baseline_index is None else cost.baseline_index + 1
    return {
        "tokens": cost.tokens,
        "share": cost.share,
        "with_draft": cost.with_draft,
        "without": cost.without,
        "source": cost.source,
        "baseline_trial": baseline,
    }


def trial_document(
    record: TrialRecord, base: ServerConfig | None, trials: Sequence[TrialRecord] = ()
) -> dict[str, Any]:
    """One trial: identity, full configuration, status, headline figures, levels, crash (and,
    with the session's ``trials``, what its draft costs)."""
    return {
        "trial": record.index + 1,
        "label": record_label(record, base),
        "kind": record.kind.value,
        "status": record.status.value,
        "status_text": status_word(record.status),
        "status_detail": status_detail(record),
        "config": config_document(record.config),
        "normalized": None if record.normalized is None else config_document(record.normalized),
        "started_at": record.started_at,
        "finished_at": record.finished_at,
        "single_request_tok_s": record.single_request_tok_s,
        "peak_aggregate_tok_s": record.peak_aggregate_tok_s,
        "peak_concurrency": record.peak_concurrency,
        "repeats": record.repeats,
        "single_request_spread": _spread(record.single_request_spread),
        "peak_aggregate_spread": _spread(record.peak_aggregate_spread),
        "capacity": record.capacity,
        "accept_length": record.accept_length,
        "levels": [
            _level(lv, chunk_per_step(record.effective))
            for lv in sorted(record.levels, key=lambda lv: lv.concurrency)
        ],
        "gpu": None if record.gpu is None else record.gpu.to_dict(),
        "draft_cost": _draft_cost(record, trials),
        "crash": _crash(record),
        "warnings": list(record.warnings),
        "errors": list(record.errors),
        "diff": unit_diff(record) or None,
        "prune": None if record.prune is None else dataclasses.asdict(record.prune),
        "slo_rate": record.slo_rate,
        "role": role_of(record).value,
        "remeasure": None if record.remeasure is None else record.remeasure.to_dict(),
        "fixed_acceptance": fixed_text(record),
        "rate_probes": [
            {
                "rate": p.rate,
                "met": p.met,
                "missed": p.missed,
                "text": probe_text(p),
                "level": _level(p.level),
            }
            for p in record.rate_probes
        ],
    }


def report_document(
    trials: Sequence[TrialRecord], plan: SweepPlan | None, title: str = ""
) -> dict[str, Any]:
    """The whole report as plain data (``to_json`` serialises it)."""
    base = plan.base if plan is not None else None

    def ref(t: TrialRecord) -> dict[str, Any]:
        return {"trial": t.index + 1, "label": record_label(t, base)}

    return {
        "schema": SCHEMA_ID,
        "version": SCHEMA_VERSION,
        "name": title or (plan.name if plan is not None else ""),
        "plan": None
        if plan is None
        else {
            "strategy": plan.strategy.value,
            "axes": {name: list(values) for name, values in plan.axes},
            "ladder": list(plan.bench.ladder),
            "base": config_document(plan.base),
        },
        "measurement": measurement_note(report_trials(trials)),
        "trials": [trial_document(t, base, trials) for t in report_trials(trials)],
        "findings": list(findings(plan, trials)) if plan is not None else [],
        "pareto": [
            {
                **ref(t),
                "single_request_tok_s": t.single_request_tok_s,
                "peak_aggregate_tok_s": t.peak_aggregate_tok_s,
            }
            for t in pareto(trials)
        ],
        "best_per_concurrency": [
            {"concurrency": c, **ref(t), "aggregate_tok_s": v}
            for c, t, v in best_per_concurrency(trials)
        ],
        "per_level": levels_document(trials, plan),
        "schedule_proof": proof_document(trials, plan),
        "best": None if plan is None else _best(trials, plan, ref),
        "progress": None if plan is None else _progress(trials, plan),
    }


def _best(
    trials: Sequence[TrialRecord], plan: SweepPlan, ref: Callable[[TrialRecord], dict[str, Any]]
) -> dict[str, Any] | None:
    """The sweep's answer (``core.search.answer``: a proven schedule, else the best trial by
    the plan's goal — as every view)."""
    found = answer(trials, plan.goal, plan.noise_pct)
    if found is None:
        return None
    top = found.trial
    return {
        "schedule_proven": found.scheduled,
        **ref(top),
        "objective": plan.goal.objective.describe,
        "value": plan.goal.objective.score(top),
        "text": figure_text(plan, top),
    }


def _progress(trials: Sequence[TrialRecord], plan: SweepPlan) -> dict[str, Any] | None:
    """Elapsed time and, for an unfinished sweep, the ETA as of the last trial
    (``core.search.eta``, as the console and the headless lines show it)."""
    when = span(trials)
    if when is None:
        return None
    started, ended = when
    left = estimate(plan, trials, now=ended, started_at=None)
    return {
        "elapsed_s": ended - started,
        "trials_left": left.trials_left,
        "eta_s": left.remaining_s,
        "eta_at_least": left.at_least,
        "eta_basis": left.basis,
        "text": report_glance(plan, trials).line,
    }


def to_json(
    trials: Sequence[TrialRecord],
    plan: SweepPlan | None = None,
    title: str = "",
    previous: PreviousSession | None = None,
) -> str:
    document = report_document(trials, plan, title)
    if (predictions := prediction_document(report_trials(trials))) is not None:
        document["predictions"] = predictions
    if previous is not None:
        document["drift"] = drift_document(report_trials(trials), previous)  # never None here
    return json.dumps(document, indent=2)
