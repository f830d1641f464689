"""A finished ``strategy = "per_level"`` sweep (issue 30): steps 1-5, the baseline without
speculation and the derived schedule, for the console's per-level box and schedule chart."""

from __future__ import annotations

import dataclasses

from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.registry import get_engine
from specconsole.core.engine.schedule import LevelPick
from specconsole.core.machine.state import (
    ConnectionState,
    ControllerState,
    Deployed,
    LevelSummary,
    Phase,
    TrialRecord,
    TrialStatus,
)
from specconsole.core.plans.plan import StrategyKind, SweepPlan
from tests.ui.doubles import BASE, LABELS, NOW, finished_trial, steps_config


def schedule_plan() -> SweepPlan:
    """steps 1-5 on the doubles' base, ``strategy = "per_level"``."""
    from tests.controller.helpers import plan

    return dataclasses.replace(
        plan(base=BASE, axes=(("speculative_num_steps", (1, 2, 3, 4, 5)),)),
        strategy=StrategyKind.PER_LEVEL,
    )


def _trial(index: int, config: ServerConfig, levels: tuple[LevelSummary, ...]) -> TrialRecord:
    return TrialRecord(
        index=index,
        config=config,
        status=TrialStatus.OK,
        started_at=NOW - 1000 + 150 * index,
        finished_at=NOW - 1000 + 150 * index + 140,
        capacity=400_000,
        levels=levels,
    )


def schedule_state() -> ControllerState:
    """Steps 1-5, no speculation (a third of steps 1's throughput) and the schedule, which
    measured each level's best static within a fraction of a percent."""
    statics = tuple(finished_trial(s) for s in range(1, 6))
    engine = get_engine(BASE.engine)
    baseline_levels = tuple(
        dataclasses.replace(lv, output_tok_s=round(lv.output_tok_s / 3, 1))
        for lv in statics[0].levels
    )
    baseline = _trial(5, engine.without_speculation(BASE), baseline_levels)
    best = {
        lv.concurrency: max((t for t in statics), key=lambda t: _at(t, lv.concurrency))
        for lv in statics[0].levels
    }
    picks = tuple(LevelPick(c, t.config) for c, t in best.items())
    schedule = engine.schedule(picks)
    assert isinstance(schedule, ServerConfig), schedule
    schedule_levels = tuple(
        dataclasses.replace(
            lv, output_tok_s=round(_at(best[lv.concurrency], lv.concurrency) * 0.998, 1)
        )
        for lv in statics[0].levels
    )
    trials = (*statics, baseline, _trial(6, schedule, schedule_levels))
    return ControllerState(
        phase=Phase.DONE,
        phase_since=NOW - 5,
        trials=trials,
        plan=schedule_plan(),
        connection=ConnectionState.CONNECTED,
        deployed=Deployed(config=steps_config(3), artifact_hash="ab12", at=NOW - 60, serving=True),
        labels=LABELS,
    )


def _at(trial: TrialRecord, concurrency: int) -> float:
    return next(lv.output_tok_s for lv in trial.levels if lv.concurrency == concurrency)


def schedule_proof_state() -> ControllerState:
    """:func:`schedule_state` with its proof's two contenders run after it: SGLang's own
    adaptive mode with its defaults (a), 6 % below the schedule at every level, and over the
    schedule's lengths (b), 1 % below: the box's widest table."""
    from specconsole.core.search.proof.contest import contenders

    state = schedule_state()
    schedule = state.trials[-1]
    made = [c.config for c in contenders(schedule.config)]
    assert all(c is not None for c in made), made
    ran = tuple(
        _trial(
            schedule.index + 1 + n,
            config,
            tuple(
                dataclasses.replace(lv, output_tok_s=round(lv.output_tok_s * share, 1))
                for lv in schedule.levels
            ),
        )
        for n, (config, share) in enumerate(zip(made, (0.94, 0.99), strict=True))
        if config is not None
    )
    return dataclasses.replace(state, trials=(*state.trials, *ran))
