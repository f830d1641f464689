"""What the benchmark phase decides beyond running the ladder: pruning and the rate search.

Why its own module: both change what BENCHMARKING does while it runs, from pure rules of
the search (``core.search.prune``, ``core.search.ratesearch``), and both end a trial in a
way the plain pipeline does not:

* **Pruning** (``[sweep] prune``): a sweep trial's benchmark runs the level that decides the
  objective first (``BenchSpec.lead``); when that level's figures fall short of the best
  trial beyond the noise (:func:`after_level`), the rest of the ladder is cancelled and the
  trial is recorded as ``pruned`` with the deciding figure — not a crash, not a failure.
* **The rate search** (``objective = "max_rate_under_slo"``): the benchmark is a series of
  probes, each the plan's benchmark at one Poisson rate (one ``RunBenchmark`` each); after a
  probe (:func:`after_probe`) the next rate is asked for, until the search is done, and the
  trial records every probe. Under pruning the first probe sits just under the best
  trial's rate, and a miss there prunes the trial.

The pipeline (``core.machine.handlers.pipeline``) asks :func:`benchmark_plan` and
:func:`progress_for`
when the benchmark starts; the table routes level and benchmark outcomes through here.
"""

from __future__ import annotations

from dataclasses import replace

from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.common import Result, _notice
from specconsole.core.machine.handlers.trial import _finish_trial
from specconsole.core.machine.state import (
    ControllerState,
    LevelProgress,
    TrialKind,
    TrialRecord,
    TrialStatus,
)
from specconsole.core.measure.trials import LevelSummary, PruneInfo
from specconsole.core.ports import BenchSpec
from specconsole.core.search import prune, ratesearch


def _all_trials(state: ControllerState) -> tuple[TrialRecord, ...]:
    """The trials the incumbent is chosen from (a pool's: every box's)."""
    return (*(state.pool.trials if state.pool else ()), *state.trials)


def _prunes(state: ControllerState) -> bool:
    """Pruning applies to the trial in progress (a sweep trial of a pruning plan)."""
    trial = state.trial
    return (
        state.plan is not None
        and state.plan.pruning
        and trial is not None
        and trial.kind is TrialKind.SWEEP
    )


def rate_searching(state: ControllerState) -> bool:
    """The trial's benchmark is a rate search (the plan's objective is the highest rate)."""
    trial = state.trial
    return (
        state.plan is not None
        and state.plan.rate_search is not None
        and trial is not None
        and trial.kind is not TrialKind.ROLLBACK
    )


def _rate_start(state: ControllerState) -> float | None:
    assert state.plan is not None
    return prune.rate_start(state.plan, _all_trials(state)) if _prunes(state) else None


def benchmark_plan(state: ControllerState, spec: BenchSpec) -> BenchSpec:
    """The spec the trial's benchmark starts with: the first rate probe of a rate search,
    or the ladder with the deciding level first under pruning (else ``spec`` itself)."""
    plan = state.plan
    if plan is None:
        return spec
    if rate_searching(state):
        assert plan.rate_search is not None
        rate = ratesearch.next_rate(plan.rate_search, (), _rate_start(state))
        assert rate is not None  # a search without probes always has a first rate
        return ratesearch.probe_spec(spec, plan.rate_search, rate)
    lead = prune.lead_level(plan, _all_trials(state)) if _prunes(state) else None
    return replace(spec, lead=lead) if lead in spec.ladder else spec


def _planned_requests(spec: BenchSpec, concurrency: int) -> int:
    """Measured requests a level will send, or 0 (unknown up front) in duration mode."""
    return spec.requests_at(concurrency) or 0


def progress_for(spec: BenchSpec) -> tuple[LevelProgress, ...]:
    """Fresh per-level progress for a benchmark of ``spec`` (in ladder order, each with its
    position in the run: the lead level first)."""
    lead = spec.ladder.index(spec.lead) if spec.lead in spec.ladder else None
    return tuple(
        LevelProgress(
            concurrency=c,
            total=_planned_requests(spec, c),
            planned_duration_s=spec.duration_s if spec.requests_per_level is None else None,
            request_rate=spec.request_rate,
            position=0 if i == lead else i + (lead is not None and i < lead),
        )
        for i, c in enumerate(spec.ladder)
    )


def _pruned(
    state: ControllerState, info: PruneInfo, level: LevelSummary, at: float, *, cancel: bool
) -> Result:
    """Close the trial as ``pruned`` (the deciding level kept as its figures)."""
    trial = state.trial
    assert trial is not None
    text = prune.describe(info)
    trial = replace(trial, prune=info, levels=(level,), accept_length=level.accept_length)
    new = _notice(replace(state, trial=trial), "info", f"trial {trial.index + 1} {text}", at)
    extra: list[fx.Effect] = [fx.CancelBenchmark(epoch=state.epoch)] if cancel else []
    extra.append(fx.Notify(epoch=state.epoch, level="info", text=new.notice.text))  # type: ignore[union-attr]
    return _finish_trial(new, TrialStatus.PRUNED, at, note=text, extra=tuple(extra))


def after_level(state: ControllerState, event: ev.BenchLevelFinished, result: Result) -> Result:
    """A level finished (``result`` is the pipeline's handling of it): prune the trial when
    this was its lead level and it lost there beyond the noise."""
    new, effects = result
    if new is state or not _prunes(state) or rate_searching(state) or event.repeat != 0:
        return result
    assert state.plan is not None
    info = prune.verdict(state.plan, _all_trials(state), event.level)
    if info is None:
        return result
    pruned, more = _pruned(new, info, event.level, event.at, cancel=True)
    return pruned, (*effects, *more)


def after_probe(state: ControllerState, event: ev.BenchFinished, spec: BenchSpec) -> Result | None:
    """A rate probe finished: record it and run the next one, or end the trial (pruned at
    its first probe, or with the highest rate that held). None when this is not a probe's
    outcome the search can use (no rate search, or nothing measured: the pipeline fails the
    trial as for any benchmark). ``spec`` is the trial's benchmark before probing."""
    if not rate_searching(state) or not event.levels or not state.bench:
        return None
    plan, trial = state.plan, state.trial
    assert plan is not None and plan.rate_search is not None and trial is not None
    rate = state.bench[0].request_rate
    if rate is None:
        return None
    level = event.levels[0]
    probe = ratesearch.probe(plan.goal, rate, level)
    probes = (*trial.rate_probes, probe)
    new = replace(state, trial=replace(trial, rate_probes=probes, levels=(level,)))
    if len(probes) == 1 and _prunes(state):
        info = prune.rate_verdict(plan, _all_trials(state), rate, probe.met)
        if info is not None:
            return _pruned(new, info, level, event.at, cancel=False)
    search = plan.rate_search
    nxt = ratesearch.next_rate(search, probes, _rate_start(state))
    if nxt is not None:
        probe_spec = ratesearch.probe_spec(spec, search, nxt)
        new = replace(new, bench=progress_for(probe_spec))
        return new, (fx.RunBenchmark(epoch=state.epoch, spec=probe_spec),)
    held = [p for p in probes if p.met]
    chosen = max(held, key=lambda p: p.rate) if held else min(probes, key=lambda p: p.rate)
    trial = replace(
        new.trial,  # type: ignore[arg-type]
        levels=(chosen.level,),
        accept_length=chosen.level.accept_length,
    )
    note = ratesearch.summary(search, probes)
    return _finish_trial(replace(new, trial=trial), TrialStatus.OK, event.at, note=note)


__all__ = [
    "after_level",
    "after_probe",
    "benchmark_plan",
    "progress_for",
    "rate_searching",
]
