"""Findings that hold on the trial's engine (issue 41): the per-level advice says a schedule
by batch size would recover a gap only when the gap is real (beyond the noise, another
configuration) and the engine can deploy one; llama-server, which drafts one length at every
number of busy slots, gets its own reason and fix instead, and "+0.0 % behind" is never said.
"""

from __future__ import annotations

from specconsole.core.config.model import ServerConfig
from specconsole.core.measure.trials import LevelSummary, TrialRecord, TrialStatus
from specconsole.core.plans.goalparse import parse_goal
from specconsole.core.search.levels import level_table
from specconsole.present.figures.levels import level_verdicts

PEAK = parse_goal("peak_aggregate")


def _llama(n_max: int) -> ServerConfig:
    return ServerConfig(
        engine="llamacpp",
        model_path="/m/target.gguf",
        speculative_draft_model_path="/m/draft.gguf",
        options=(("spec_type", "draft-simple"), ("spec_draft_n_max", n_max), ("metrics", True)),
    )


def _sglang(steps: int) -> ServerConfig:
    return ServerConfig(
        model_path="Qwen/Qwen3-8B",
        engine="sglang",
        speculative_algorithm="EAGLE3",
        speculative_draft_model_path="d",
        speculative_num_steps=steps,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=steps + 1,
        engine_version="0.5.14",
    )


def _trial(index: int, config: ServerConfig, c1: float, c4: float) -> TrialRecord:
    levels = (LevelSummary(1, c1, c1, 4), LevelSummary(4, c4, c4 / 4, 8))
    return TrialRecord(index=index, config=config, status=TrialStatus.OK, levels=levels)


def test_no_schedule_advice_when_the_single_best_is_best_at_every_level() -> None:
    trials = [_trial(0, _llama(2), 30.0, 90.0), _trial(1, _llama(4), 20.0, 60.0)]
    lines = level_verdicts(level_table(trials, PEAK), trials[0].config, 1.0)
    assert not any("behind" in line or "schedule" in line for line in lines), lines


def test_no_schedule_advice_for_a_gap_inside_the_noise() -> None:
    trials = [_trial(0, _sglang(3), 100.0, 400.0), _trial(1, _sglang(5), 100.5, 380.0)]
    lines = level_verdicts(level_table(trials, PEAK, 1.0), trials[0].config, 1.0)
    assert not any("behind" in line for line in lines), lines


def test_a_real_gap_on_an_engine_with_schedules_suggests_one() -> None:
    trials = [_trial(0, _sglang(3), 100.0, 400.0), _trial(1, _sglang(5), 130.0, 300.0)]
    (line,) = level_verdicts(level_table(trials, PEAK, 1.0), trials[0].config, 1.0)
    assert "falls −23.1 % behind the level's best (#2" in line and "at c=1" in line
    assert line.endswith("a schedule by batch size would recover it")


def test_llama_cpp_gets_its_own_reason_instead_of_a_schedule() -> None:
    trials = [_trial(0, _llama(2), 30.0, 90.0), _trial(1, _llama(6), 40.0, 60.0)]
    (line,) = level_verdicts(level_table(trials, PEAK, 1.0), trials[0].config, 1.0)
    assert "behind the level's best (#2" in line and "at c=1" in line
    assert "schedule by batch size would recover" not in line
    assert "no schedule: llama-server drafts one spec_draft_n_max at every number" in line
    assert "deploy the per-level table's best for your traffic" in line


def _counted(client: float) -> LevelSummary:
    from specconsole.core.measure.acceptance import CounterAcceptance

    counters = CounterAcceptance(drafts=22, draft_tokens=86, accepted=41)
    return LevelSummary(
        1, 20.0, 20.0, 1, accept_length=2.86, counters=counters, client_accept_length=client
    )


def test_the_client_cross_check_knows_how_each_engine_streams() -> None:
    from specconsole.present.figures.acceptance import chunk_per_step, level_acceptance

    level = _counted(1.88)  # llama-server: a chunk per token, whatever a step accepted
    assert not chunk_per_step(_llama(4)) and chunk_per_step(_sglang(3))
    (line,) = level_acceptance(level, chunk_per_step(_llama(4)))
    assert "⚠" not in line and "client 1.88 tokens/chunk (not one chunk per step" in line
    (line,) = level_acceptance(level, chunk_per_step(_sglang(3)))
    assert "⚠ client 1.88 tokens/chunk, 34% off the engine's 2.86" in line


def test_the_chart_takes_the_axis_the_sweep_explored_not_the_one_that_crashed() -> None:
    from dataclasses import replace

    from specconsole.core.plans.parse import parse_plan
    from specconsole.present.charts.series import swept_axis

    document = {
        "host": {"transport": "local"},
        "service": {"kind": "process"},
        "server": {"engine": "llamacpp", "model_path": "/m/t.gguf", "metrics": True},
        "sweep": {
            "strategy": "grid",
            "axes": {"ctx_size": [2048, 20_000_000], "spec_draft_n_max": [2, 4, 8]},
        },
    }
    plan = parse_plan(document)
    ok = [
        _trial(i, plan.at(plan.base, ctx_size=2048, spec_draft_n_max=n), 30.0 - i, 90.0)
        for i, n in enumerate((2, 4, 8))
    ]
    crash = TrialRecord(
        index=3,
        config=plan.at(plan.base, ctx_size=20_000_000, spec_draft_n_max=2),
        status=TrialStatus.CRASHED,
    )
    assert swept_axis(plan, [*ok, crash]) == "spec_draft_n_max"
    walk = replace(plan, strategy=plan.strategy.BOUNDARY)
    assert swept_axis(walk, [*ok, crash]) == "ctx_size"  # a walk is drawn along its axis
    assert swept_axis(plan, []) == "ctx_size"  # nothing measured yet: the plan's first axis
