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
  draft counted at any level.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.registry import EngineNotFound, engine_for
from specconsole.core.machine import events as ev
from specconsole.core.machine.common import Result, _require_trial
from specconsole.core.machine.state import ControllerState, LevelSummary, TrialRecord

__all__ = ["configured_off", "mark", "on_speculation_off", "uncounted"]

NO_DRAFTS = "the engine's counters show no draft at any level (speculation did not run)"


def configured_off(config: ServerConfig) -> str:
    """Why ``config`` will not speculate although it names speculation ('' otherwise)."""
    try:
        return engine_for(config).speculation_off(config) or ""
    except EngineNotFound:
        return ""


def uncounted(config: ServerConfig, levels: Sequence[LevelSummary]) -> str:
    """:data:`NO_DRAFTS` when ``config`` should speculate and every level whose engine
    counters were read (and trusted) completed requests without a single draft ('' otherwise)."""
    try:
        speculates = engine_for(config).verify_tokens(config) > 0
    except EngineNotFound:
        return ""
    drafts = [
        lv.counters.drafts
        for lv in levels
        if lv.counters is not None and lv.counters.trusted and lv.completed
    ]
    return NO_DRAFTS if speculates and drafts and not any(drafts) else ""


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
