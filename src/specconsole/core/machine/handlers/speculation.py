"""A trial whose server runs without the speculation it was asked for: marked, with the reason.

Why: llama.cpp (and any engine like it) does not refuse a draft it cannot use — it loads the
draft and serves without it: a vocabulary the target rejects, ``--spec-type draft-simple``
without a draft, ``-md`` without ``--spec-type``. Such a trial is not a crash and must not pass
for an ordinary success either: its throughput is the target alone, and a speculative sweep
would crown it. So the trial carries the reason (``TrialRecord.speculation_off``), which the
records, the console and the reports show, and the objective never counts it as feasible
(``core.plans.objective``). Three kinds of evidence, whichever comes first:

* the configuration itself (``Engine.speculation_off``), when it is validated;
* the server's log (a ``SpeculationOff`` event, e.g. ``the target and draft vocabs are not
  compatible``), while it loads or serves;
* the engine's own counters: a configuration that should speculate, benchmarked with no
  draft counted at any level whose counters saw the engine generate.

No evidence is not evidence of no drafts: SGLang counts its verify steps (and its generated
tokens) only as each request finishes (``TokenizerMetricsCollector.observe_one_finished_request``),
so a steady window in which no request finished moves none of its counters, drafting or not.
A level speaks only when the engine's own output-token counter moved in the same window (the
engine generated, and counted it where it counts drafts), or, for an engine without one,
when the level was measured over whole requests (``measurement = "completed"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.registry import EngineNotFound, engine_for
from specconsole.core.machine import events as ev
from specconsole.core.machine.common import Result, _require_trial
from specconsole.core.machine.state import ControllerState, LevelSummary, TrialRecord

__all__ = ["configured_off", "counters_saw_generation", "mark", "on_speculation_off", "uncounted"]

NO_DRAFTS = "the engine's counters show no draft at any level (speculation did not run)"


def configured_off(config: ServerConfig) -> str:
    """Why ``config`` will not speculate although it names speculation ('' otherwise)."""
    try:
        return engine_for(config).speculation_off(config) or ""
    except EngineNotFound:
        return ""


def uncounted(config: ServerConfig, levels: Sequence[LevelSummary]) -> str:
    """:data:`NO_DRAFTS` when ``config`` should speculate and every level whose engine
    counters can tell (:func:`counters_saw_generation`) counted not a single draft ('' otherwise,
    and '' when no level can tell)."""
    try:
        speculates = engine_for(config).verify_tokens(config) > 0
    except EngineNotFound:
        return ""
    drafts = [lv.counters.drafts for lv in levels if counters_saw_generation(lv)]
    return NO_DRAFTS if speculates and drafts and not any(drafts) else ""


def counters_saw_generation(level: LevelSummary) -> bool:
    """Whether ``level``'s counter deltas cover tokens the engine generated, so that zero
    drafts among them means it generated without drafting: its output-token counter moved in
    the same window, or (an engine without one) the level covered whole requests."""
    counters = level.counters
    if counters is None or not counters.trusted:
        return False
    if counters.output_tokens is not None:
        return counters.output_tokens > 0
    return level.measurement == "completed" and level.completed > 0


def mark(trial: TrialRecord, reason: str) -> TrialRecord:
    """``trial`` marked "speculation off" for ``reason`` (the first reason is kept)."""
    if not reason or trial.speculation_off:
        return trial
    return replace(trial, speculation_off=reason)


def on_speculation_off(state: ControllerState, event: ev.Event) -> Result:
    """The server said speculation did not start (its log)."""
    assert isinstance(event, ev.SpeculationOffSeen)
    trial = _require_trial(state, event)
    return replace(state, trial=mark(trial, event.reason)), ()
