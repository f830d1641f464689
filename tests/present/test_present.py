"""present/: one rendering of labels, statuses, numbers and key hints for every front end."""

from __future__ import annotations

import dataclasses

from specconsole.core.machine import events as ev
from specconsole.core.machine.intents import legal_intents
from specconsole.core.machine.state import (
    CrashInfo,
    Notice,
    Phase,
    ResumeChoice,
    TrialRecord,
    TrialStatus,
)
from specconsole.present.formats import format_peak, format_rate, format_tok_s
from specconsole.present.keyboard import keys
from specconsole.present.labels import (
    abbreviations,
    config_label,
    config_summary,
    notice_text,
    trial_label,
)
from specconsole.present.status import STATUS_WORDS, status_detail, status_word
from tests.controller.helpers import plan
from tests.ui.doubles import (
    benchmarking_state,
    crashed_state,
    idle_state,
    loading_state,
    steps_config,
)


def test_one_abbreviation_table_for_labels_and_summaries() -> None:
    base = steps_config(3)
    other = dataclasses.replace(base, cuda_graph_max_bs=16, max_running_requests=32)
    assert config_label(other, base) == "cg-bs=16 mrr=32"
    summary = config_summary(other)
    shorts = dict((name, short) for short, name in abbreviations("sglang"))
    for name in ("cuda_graph_max_bs", "max_running_requests"):
        assert f"{shorts[name]}=" in summary
    assert "cg_bs" not in summary and "max_req" not in summary


def test_labels_never_show_environment_values() -> None:
    base = steps_config(3)
    secret = dataclasses.replace(base, env=(("HF_TOKEN", "hf_supersecret"),))
    label = config_label(secret, base)
    assert "HF_TOKEN" in label and "supersecret" not in label


def test_trial_label_is_number_and_difference() -> None:
    p = plan()
    record = TrialRecord(index=2, config=p.at(p.base, speculative_num_steps=3))
    assert trial_label(record, p.base).startswith("#3 steps=3")


def test_notice_text_adds_the_label_of_its_configuration() -> None:
    p = plan()
    config = p.at(p.base, speculative_num_steps=4)
    assert notice_text(Notice("info", "trial 4", 0.0, config), p.base).startswith(
        "trial 4 (steps=4"
    )
    assert notice_text(Notice("info", "plain", 0.0), p.base) == "plain"


def test_status_words_cover_every_status_and_details_say_why() -> None:
    assert set(STATUS_WORDS) == set(TrialStatus)
    assert status_word(TrialStatus.LOAD_TIMEOUT) == "load timeout"
    record = TrialRecord(
        index=0,
        config=steps_config(10),
        status=TrialStatus.CRASHED,
        crash=CrashInfo(cause="kv_cache_no_memory", message="m", phase=Phase.LOADING),
    )
    assert status_detail(record) == "crashed (kv_cache_no_memory in loading)"


def test_number_formats() -> None:
    assert format_rate(1730.44) == "1,730" and format_rate(1730.44, 1) == "1,730.4"
    assert format_rate(None) == "—" and format_rate(float("nan")) == "—"
    assert format_tok_s(282.0) == "282 tok/s"
    assert format_peak(1979.0, 32, 1) == "1,979.0 (c=32)"


def _intents_of(command_ids: frozenset[str]) -> set[type[ev.Intent]]:
    mapping: dict[str, type[ev.Intent]] = {
        "deploy": ev.DeployConfig,
        "bench": ev.BenchmarkOnly,
        "sweep": ev.StartSweep,
        "pause": ev.Pause,
        "unpause": ev.Pause,
        "continue": ev.Resume,
        "resume": ev.Resume,
        "retry": ev.Resume,
        "skip": ev.Resume,
        "rollback": ev.Resume,
        "cancel": ev.Cancel,
    }
    return {mapping[c] for c in command_ids if c in mapping}


def test_available_commands_are_legal_intents_in_every_scene() -> None:
    for state in (idle_state(), loading_state(), benchmarking_state(), crashed_state()):
        available = keys.available(state)
        assert _intents_of(available) <= legal_intents(state), state.phase


def test_keys_per_phase() -> None:
    assert keys.available(loading_state()) >= {"pause", "cancel", "edit"}
    assert "deploy" not in keys.available(loading_state())
    crashed = crashed_state()
    assert crashed.pending is not None
    now = keys.available(crashed)
    expected = {keys.CHOICE_COMMANDS[c] for c in crashed.pending.choices}
    assert expected <= now and "crash-details" in now and "cancel" not in now
    idle_with_plan = dataclasses.replace(idle_state(), plan=plan())
    assert "sweep" in keys.available(idle_with_plan)
    assert "sweep" not in keys.available(idle_state())  # no plan: nothing to sweep


def test_banner_choices_are_exactly_the_pending_choices() -> None:
    crashed = crashed_state()
    assert crashed.pending is not None
    only_two = dataclasses.replace(
        crashed,
        pending=dataclasses.replace(
            crashed.pending, choices=(ResumeChoice.RESUME_NEXT, ResumeChoice.EDIT_THEN_DEPLOY)
        ),
    )
    assert [c.key for c in keys.choice_hints(only_two)] == ["r", "e"]
    assert keys.choice_hints(loading_state()) == ()
