"""Unit tests of the console's pure parts: view models, adapters, form parsing, themes."""

from __future__ import annotations

import dataclasses

import pytest

from specconsole.core.machine.state import (
    ControllerState,
    LevelProgress,
    Phase,
    ResumeChoice,
    TrialStatus,
)
from specconsole.engines.sglang.keys import SpecAlgorithm
from specconsole.present.formats import format_elapsed
from specconsole.present.keyboard.actions import choice_label, choice_target, label
from specconsole.ui import adapt, editor_checks
from specconsole.ui.crashview import crash_view
from specconsole.ui.form import config_diff, form_values, parse_form
from specconsole.ui.linekinds import classify_line
from specconsole.ui.theme import THEMES, UnknownThemeError, choose_theme
from specconsole.ui.viewmodels import Tone, progress_bar
from tests.controller.helpers import plan
from tests.ui.doubles import (
    BASE,
    NOW,
    benchmarking_state,
    crashed_state,
    crashed_sweep_state,
    finished_trial,
    idle_state,
    loading_state,
    steps_config,
)


@pytest.mark.parametrize(
    ("seconds", "text"), [(None, ""), (0, "0:00"), (59.9, "0:59"), (61, "1:01"), (3725, "1:02:05")]
)
def test_format_elapsed(seconds: float | None, text: str) -> None:
    assert format_elapsed(seconds) == text


def test_progress_bar_is_exact_width() -> None:
    assert progress_bar(0, 10, 8) == "░" * 8
    assert progress_bar(5, 10, 8) == "████░░░░"
    assert progress_bar(12, 10, 4) == "████"
    assert progress_bar(1, 0, 3) == "░░░"


def test_header_loading_shows_sub_phase_elapsed_and_trial() -> None:
    view = adapt.header_view(loading_state(), NOW)
    assert view.phase == "LOADING · KV cache"
    assert view.elapsed.startswith("1:12") and "0:09" in view.elapsed
    assert view.trial == "trial 4/4"
    assert view.tone is Tone.BUSY
    assert view.title == "gpu-box · sglang · systemd sglang.service"
    assert "steps=4" in view.config_summary and "EAGLE3" in view.config_summary


def test_header_tones_follow_phase() -> None:
    assert adapt.header_view(crashed_state(), NOW).tone is Tone.BAD
    assert adapt.header_view(idle_state(), NOW).tone is Tone.IDLE
    assert adapt.header_view(idle_state(), NOW).elapsed == ""
    done = dataclasses.replace(idle_state(), phase=Phase.DONE)
    assert adapt.header_view(done, NOW).tone is Tone.GOOD


def test_header_benchmarking_names_running_level() -> None:
    assert adapt.header_view(benchmarking_state(), NOW).phase == "BENCHMARKING · c=16"


def test_bench_view_live_levels_and_headlines() -> None:
    view = adapt.bench_view(benchmarking_state())
    assert [lv.state for lv in view.levels] == ["done", "done", "running", "pending", "pending"]
    assert view.levels[2].tok_s == 1843.0
    assert view.levels[3].tok_s is None
    assert view.single_tok_s is not None  # c=1 finished
    assert view.peak_tok_s is None  # not until the ladder is done
    assert view.status == "level 3/5"


def test_bench_view_when_idle_shows_last_benchmarked_trial() -> None:
    state = dataclasses.replace(idle_state(), trials=(finished_trial(1), finished_trial(3)))
    view = adapt.bench_view(state)
    assert view.status == "trial 3 · done"
    assert view.peak_tok_s == finished_trial(3).peak_aggregate_tok_s
    assert view.peak_concurrency == 32


def test_chart_has_a_series_per_trial_and_single_vs_steps() -> None:
    view = adapt.chart_view(benchmarking_state())
    # 3 finished trials plus the running one (two finished levels so far).
    assert len(view.aggregate) == 4
    assert view.aggregate[-1].xs == (1.0, 4.0)
    assert view.axis_name == "steps"
    assert view.single is not None
    assert view.single.xs == (1.0, 2.0, 3.0)
    assert list(view.single.ys) == sorted(view.single.ys)


def test_trial_rows_label_by_difference_and_status() -> None:
    rows = adapt.trial_rows(crashed_state())
    assert [r.status for r in rows][-1] == "crashed"
    assert rows[-1].label.startswith("✖ #6 ") and "steps=10" in rows[-1].label
    assert rows[0].single_tok_s == "118"
    assert rows[-1].single_tok_s == "—"


def test_trial_details_include_crash_excerpt() -> None:
    details = adapt.trial_details(crashed_state(), "5")
    assert details is not None
    assert "status: crashed (kv_cache_no_memory in loading/KV cache)" in details.lines
    assert any("Not enough memory" in line for line in details.log_excerpt)
    assert adapt.trial_details(crashed_state(), "99") is None


def test_crash_view_lists_only_allowed_choices_with_r_first() -> None:
    state = crashed_state()
    view = crash_view(state)
    assert view is not None
    assert view.choices[0] == ("r", "resume")
    # the cause as a sentence, not the id
    assert "no GPU memory left for the KV cache" in view.title
    assert "loading (KV cache)" in view.title
    pending = dataclasses.replace(
        state.pending, choices=(ResumeChoice.RESUME_NEXT, ResumeChoice.RETRY_SAME)
    )
    limited = crash_view(dataclasses.replace(state, pending=pending))
    assert limited is not None and [k for k, _ in limited.choices] == ["r", "t"]
    assert crash_view(idle_state()) is None


def test_crash_view_previews_targets_and_leads_with_the_swept_axis() -> None:
    view = crash_view(crashed_sweep_state())
    assert view is not None
    previews = dict(view.previews)
    assert previews["o"] == "roll back to steps=5 draft=6"
    assert previews["r"].startswith("resume: steps=")
    assert view.fixes[0] == (
        "lower speculative_num_steps: steps=10 predicted -22,916 KV tokens (minimum 1,536); "
        "steps=5 loaded with 356,000"
    )


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("[2026-07-20 12:00:00] Load weight begin. avail mem=78.50 GB", "progress"),
        (
            "[2026-07-20 12:00:00] max_total_num_tokens=123456, chunked_prefill_size=8192, "
            "max_prefill_tokens=16384, max_running_requests=48, context_len=32768, "
            "available_gpu_mem=5.00 GB",
            "capacity",
        ),
        ("[2026-07-20 12:00:00] The server is fired up and ready to roll!", "ready"),
        (
            "[2026-07-20 12:00:00] Max running requests is reset to 48 for speculative decoding. "
            "You can override this by explicitly setting --max-running-requests.",
            "warning",
        ),
        ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", "fatal"),
        ("Traceback (most recent call last):", "fatal"),
        ("[2026-07-20 12:00:00] Decode batch, #running-req: 1, #token: 10", None),
        ("just words: nothing special", None),
    ],
)
def test_classify_line(line: str, kind: str | None) -> None:
    assert classify_line(line) == kind


def test_predicted_capacity_uses_session_trials() -> None:
    state = dataclasses.replace(idle_state(), trials=tuple(finished_trial(s) for s in (1, 2, 3, 4)))
    prediction = editor_checks.predict_capacity(
        dataclasses.replace(BASE, speculative_num_steps=10, speculative_num_draft_tokens=11), state
    )
    assert prediction.predicted_tokens is not None
    assert prediction.predicted_tokens < finished_trial(4).capacity


def test_parse_form_round_trip_and_errors_name_the_field() -> None:
    config = steps_config(3)
    parsed, errors = parse_form(config, form_values(config))
    assert errors == {} and parsed == config
    parsed, errors = parse_form(
        config,
        {
            **form_values(config),
            "speculative_num_steps": "three",
            "mem_fraction_static": "lots",
            "speculative_algorithm": "medusa",
        },
    )
    assert parsed is None
    assert set(errors) == {"speculative_num_steps", "mem_fraction_static", "speculative_algorithm"}
    assert errors["speculative_num_steps"].startswith("speculative_num_steps:")
    assert "EAGLE3" in errors["speculative_algorithm"]


def test_parse_form_blank_means_unset_and_algorithm_is_case_insensitive() -> None:
    values = {**form_values(BASE), "cuda_graph_max_bs": " ", "speculative_algorithm": "eagle"}
    parsed, errors = parse_form(BASE, values)
    assert errors == {}
    assert parsed is not None
    assert parsed.cuda_graph_max_bs is None
    assert parsed.speculative_algorithm is SpecAlgorithm.EAGLE
    extra, _ = parse_form(BASE, {"extra_args": "--log-level info --enable-metrics"})
    assert extra is not None and extra.extra_args == ("--log-level", "info", "--enable-metrics")


def test_config_diff_names_flags() -> None:
    assert config_diff(steps_config(3), steps_config(3)) == []
    diff = config_diff(steps_config(3), steps_config(5))
    assert diff == [
        "--speculative-num-steps: 3 → 5",
        "--speculative-num-draft-tokens: 4 → 6",
    ]
    assert "--tp-size: 4" in config_diff(None, BASE)


def test_choose_theme_order_and_errors() -> None:
    assert choose_theme(None, None, {}) == "dark"
    assert choose_theme(None, None, {"NO_COLOR": "1"}) == "mono"
    assert choose_theme(None, None, {"NO_COLOR": ""}) == "dark"
    assert choose_theme(None, "light", {"NO_COLOR": "1"}) == "light"
    assert choose_theme("Mono", "light", {}) == "mono"
    with pytest.raises(UnknownThemeError, match="--theme"):
        choose_theme("solarized", None, {})
    assert set(THEMES) == {"dark", "light", "mono"}


def test_empty_state_renders_everywhere() -> None:
    state = ControllerState()
    assert adapt.header_view(state, NOW).config_summary == "no configuration"
    assert adapt.bench_view(state).levels == ()
    assert adapt.chart_view(state).aggregate == ()
    assert adapt.trial_rows(state) == ()
    bench = dataclasses.replace(state, bench=(LevelProgress(concurrency=1, total=0),))
    assert adapt.bench_view(bench).levels[0].state == "pending"


def test_validate_config_maps_core_issues_to_problems() -> None:
    good = editor_checks.validate_config(BASE)
    assert not any(p.blocking for p in good)
    bad = editor_checks.validate_config(
        dataclasses.replace(
            BASE,
            speculative_num_steps=3,
            speculative_eagle_topk=2,
            speculative_num_draft_tokens=9,
        )
    )
    [error] = [p for p in bad if p.blocking]
    assert error.field == "speculative_num_draft_tokens"
    assert error.message.startswith("speculative_num_draft_tokens:") and "Fix:" in error.message


def test_thin_ticks_keeps_labels_apart_and_is_order_free() -> None:
    from specconsole.present.charts.textcharts import thin_ticks

    _positions, labels = thin_ticks([0, 2, 4, 5, 6], ["1", "4", "16", "32", "64"], 12)
    assert labels[0] == "1" and len(labels) < 5
    assert thin_ticks([6, 0], ["64", "1"], 40) == ([0, 6], ["1", "64"])
    assert thin_ticks([], [], 10) == ([], [])


def test_header_shows_the_plan_base_before_anything_runs() -> None:
    from specconsole.commands.tui import demo_plan

    state = ControllerState(plan=demo_plan())
    assert adapt.header_view(state, NOW).config_summary.startswith("plan base: EAGLE3")


def test_bench_levels_without_a_known_total_still_progress() -> None:
    bench = (
        LevelProgress(concurrency=1, total=0, completed=4, current_tok_s=128.0, done=True),
        LevelProgress(concurrency=4, total=0, completed=7, running=4, current_tok_s=400.0),
        LevelProgress(concurrency=16, total=0),
    )
    view = adapt.bench_view(dataclasses.replace(benchmarking_state(), bench=bench))
    assert [lv.state for lv in view.levels] == ["done", "running", "pending"]
    assert [lv.done_fraction for lv in view.levels] == [1.0, 0.0, 0.0]
    assert view.levels[1].tok_s == 400.0 and view.levels[2].tok_s is None
    # With the plan's duration per level, the bar is the time spent.
    from specconsole.commands.tui import demo_plan

    plan = demo_plan()
    plan = dataclasses.replace(plan, bench=dataclasses.replace(plan.bench, duration_s=1.0))
    timed = dataclasses.replace(bench[1], elapsed_s=0.5)
    view = adapt.bench_view(
        dataclasses.replace(benchmarking_state(), plan=plan, bench=(bench[0], timed, bench[2]))
    )
    assert view.levels[1].done_fraction == 0.5


def test_a_failed_trial_awaiting_a_decision_gets_a_banner_too() -> None:
    from specconsole.core.machine.state import PendingDecision, TrialRecord, TrialStatus

    record = TrialRecord(
        index=0,
        config=BASE,
        status=TrialStatus.INVALID,
        errors=("speculative_num_steps: set all three tree sizes or none", "second"),
    )
    state = dataclasses.replace(
        idle_state(),
        phase=Phase.AWAITING_DECISION,
        trials=(record,),
        pending=PendingDecision(
            trial_index=0, crash=None, choices=(ResumeChoice.RESUME_NEXT, ResumeChoice.SKIP)
        ),
    )
    view = crash_view(state)
    assert view is not None
    assert view.title == "Trial 1 could not run: invalid"
    assert view.cause.startswith("speculative_num_steps")
    assert [k for k, _ in view.choices] == ["r", "S"]
    assert adapt.header_view(state, NOW).phase == "STOPPED · r resumes"


def test_a_finished_level_shows_live_in_the_panel_chart_and_trials_table() -> None:
    """While the ladder runs: the level the machine just stored (``BenchLevelFinished``)
    gives the bench panel its single-request number and TTFT p50, the chart a partial
    aggregate curve for the running trial, and the trials table its single-request cell."""
    from specconsole.core.machine import events as ev
    from specconsole.core.machine.state import LevelSummary
    from specconsole.core.machine.table import step
    from specconsole.present.formats import format_rate

    running = benchmarking_state()
    assert running.trial is not None
    fresh = tuple(LevelProgress(concurrency=p.concurrency, total=p.total) for p in running.bench)
    running = dataclasses.replace(
        running, bench=(dataclasses.replace(fresh[0], completed=8, running=0), *fresh[1:])
    )
    before = adapt.bench_view(running)
    assert before.single_tok_s is None and before.levels[0].ttft_p50_ms is None
    level = LevelSummary(
        concurrency=1,
        output_tok_s=151.0,
        per_request_tok_s=158.5,
        completed=8,
        ttft_p50_ms=41.0,
    )
    state, effects = step(
        running,
        ev.BenchLevelFinished(level_index=0, level=level, epoch=running.epoch, at=NOW),
    )
    assert effects == () and state.phase is Phase.BENCHMARKING
    view = adapt.bench_view(state)
    assert view.single_tok_s == 158.5
    assert view.levels[0].state == "done" and view.levels[0].ttft_p50_ms == 41.0
    assert view.levels[0].tok_s == 151.0
    assert view.levels[1].state == "pending" and view.peak_tok_s is None
    chart = adapt.chart_view(state)
    assert chart.aggregate[-1].label.startswith("#4")
    assert chart.aggregate[-1].xs == (1.0,) and chart.aggregate[-1].ys == (151.0,)
    assert chart.single is not None and (4.0, 158.5) in zip(
        chart.single.xs, chart.single.ys, strict=True
    )
    row = adapt.trial_rows(state)[-1]
    assert row.label.startswith("▸ #4") and row.status == "running"
    assert row.single_tok_s == format_rate(158.5)


def _optimizing(state: ControllerState) -> ControllerState:
    """The state with a plan that searches steps with ``strategy = "optimize"``."""
    from specconsole.core.plans.parse import loads_plan

    text = (
        '[server]\nmodel_path = "Qwen/Qwen3.5-122B-A10B"\nspeculative_algorithm = "EAGLE3"\n'
        'speculative_draft_model_path = "d"\nspeculative_eagle_topk = 1\n'
        '[sweep]\nstrategy = "optimize"\n[sweep.axes]\n'
        "speculative_num_steps = { min = 1, max = 10 }\n"
    )
    base = state.trials[0].config if state.trials else BASE
    plan = dataclasses.replace(loads_plan(text), base=base)
    return dataclasses.replace(state, plan=plan)


def test_trial_rows_mark_best_and_pareto() -> None:
    rows = adapt.trial_rows(crashed_state())
    marks = {r.label.split(" ", 2)[1] if r.label[0] in "★≈◆" else "": r.label[0] for r in rows}
    # steps 3 has the peak aggregate (2,720): best; steps 4 and 5 trade it for single speed
    assert marks["#3"] == "★"
    assert marks["#4"] == "◆" and marks["#5"] == "◆"
    assert not any(r.label.startswith(("★", "◆")) for r in rows if "steps=10" in r.label)


def test_optimizing_chart_shows_the_objective_over_trials() -> None:
    view = adapt.chart_view(_optimizing(crashed_state()))
    assert view.single_title == "peak_aggregate vs trial"
    assert view.single is not None and view.single.xs == (1.0, 2.0, 3.0, 4.0, 5.0)
    assert view.single.ys[2] == 2720.0 and "best so far 2,720" in view.single.label
    assert view.crashed == (6.0,)


def test_suggest_next_proposes_an_untried_point_with_its_reason() -> None:
    state = _optimizing(crashed_state())
    proposal = editor_checks.suggest_next(state)
    assert proposal is not None
    assert proposal.config not in {t.config for t in state.trials}
    # at the crash banner: what r resumes with, and the strategy's reason (issue 42 #8)
    assert proposal.reason.startswith("the plan's next trial (what r resumes with): optimize (")
    assert proposal.config == choice_target(state, ResumeChoice.RESUME_NEXT)
    assert editor_checks.suggest_next(dataclasses.replace(state, plan=None)) is None


def test_suggest_next_agrees_with_the_banner_and_says_when_it_goes_beyond_the_plan() -> None:
    """Issue 42 #8: ctrl+n proposed the optimiser's point while the banner's r named another.
    It is the plan's next wherever the plan has one; past the plan's end the optimiser's,
    said as such; while a crash is recorded, not known yet — as the banner says."""
    crashed = dataclasses.replace(  # a boundary walk's crash banner
        crashed_state(), plan=plan(axes=(("speculative_num_steps", tuple(range(1, 11))),))
    )
    target = choice_target(crashed, ResumeChoice.RESUME_NEXT)
    proposal = editor_checks.suggest_next(crashed)
    assert target is not None and proposal is not None and proposal.config == target
    assert choice_label(crashed, "resume", "resume") == f"resume: {label(crashed, target)}"
    recording = dataclasses.replace(crashed, phase=Phase.CRASHED, pending=None)
    with pytest.raises(editor_checks.NotKnownYet, match="known once the crash is recorded"):
        editor_checks.suggest_next(recording)
    assert "known once the crash is recorded" in choice_label(recording, "resume", "resume")
    idle = dataclasses.replace(idle_state(), plan=plan())
    first = editor_checks.suggest_next(idle)
    assert first is not None and first.reason.startswith("the plan's next trial: ")
    grid = idle.plan.grid()  # steps 1, 2, 3, 10: 1 and 2 load, 3 crashes — the walk ends
    tried = (
        dataclasses.replace(finished_trial(1), index=0, config=grid[0]),
        dataclasses.replace(finished_trial(1), index=1, config=grid[1]),
        dataclasses.replace(finished_trial(1), index=2, config=grid[2], status=TrialStatus.CRASHED),
    )
    beyond = editor_checks.suggest_next(dataclasses.replace(idle, trials=tried))
    assert beyond is not None and beyond.config == grid[3]
    assert beyond.reason.startswith("nothing left in the plan; the optimiser: optimize (")
