"""A trial whose server runs without the speculation it asked for is marked, with the reason,
from whichever evidence comes first — its configuration, the server's log, the engine's own
counters — and is never the best of a sweep; records, the console's words and the report
carry the mark.

Why: llama.cpp does not refuse a draft it cannot use, it serves without it. Such a trial's
throughput is the target's alone; crowning it would send a user home with speculation off.
"""

from __future__ import annotations

from dataclasses import replace

from specconsole.core.logs.events import SpeculationOff
from specconsole.core.machine import events as ev
from specconsole.core.machine.handlers.speculation import (
    NO_DRAFTS,
    counters_saw_generation,
    uncounted,
)
from specconsole.core.machine.handlers.watch import translate
from specconsole.core.machine.state import LevelSummary, Phase, TrialStatus
from specconsole.core.measure.acceptance import CounterAcceptance
from specconsole.core.plans.objective import best
from specconsole.core.plans.parse import loads_plan
from specconsole.present.status import record_status, status_detail
from specconsole.session.records import record_from_dict, record_to_dict
from specconsole.session.reports.acceptance_report import acceptance_lines
from tests.controller.helpers import Driver, plan

PLAN = """
name = "llama"
[server]
engine = "llamacpp"
launcher = "/opt/llama/bin/llama-server"
model_path = "/m/target.gguf"
speculative_draft_model_path = "/m/draft.gguf"
spec_type = "draft-simple"
metrics = true
[sweep]
strategy = "grid"
on_crash = "auto"
[sweep.axes]
spec_draft_n_max = [2, 4]
[bench]
api = "chat"
ladder = [1]
requests_per_level = 2
"""


def counted(drafts: int) -> tuple[LevelSummary, ...]:
    figures = CounterAcceptance(drafts, 4 * drafts, 2 * drafts, (drafts,) if drafts else (), 32)
    return (
        LevelSummary(
            concurrency=1,
            output_tok_s=50.0,
            per_request_tok_s=50.0,
            completed=2,
            counters=figures,
            accept_length=figures.acceptance_length,
        ),
    )


def run_trial(d: Driver, *, config_change: dict | None = None, log_reason: str = "",
              drafts: int = 5) -> None:  # fmt: skip
    assert d.state.trial is not None
    config = d.state.trial.config
    if config_change:
        config = replace(config, **config_change)
    d.send(ev.ConfigValidated(config=config, argv=("llama-server",)))
    d.send(ev.DeployDone(artifact_hash=f"h{d.state.epoch}"))
    d.send(ev.Restarted())
    if log_reason:
        (seen,) = translate(SpeculationOff(reason=log_reason), d.state.epoch)
        d.send(seen)
    d.send(ev.ServerReady())
    d.send(ev.ServerInfoFetched())  # llama-server serves no cache flush: no flushing phase
    d.send(ev.BenchFinished(levels=counted(drafts)))
    assert d.state.phase is Phase.RECORDING
    d.send(ev.TrialRecorded(index=d.state.trial.index))


def test_each_kind_of_evidence_marks_the_trial_and_it_never_wins() -> None:
    d = Driver()
    d.start(loads_plan(PLAN))
    run_trial(d, log_reason="the target and draft vocabs are not compatible", drafts=0)
    run_trial(d, drafts=9)
    first, second = d.state.trials
    assert first.status is TrialStatus.OK
    assert first.speculation_off == "the target and draft vocabs are not compatible"
    assert second.speculation_off == ""
    # the faster trial without speculation does not win: the one that speculated does
    fast = replace(first, levels=tuple(replace(lv, output_tok_s=500.0) for lv in first.levels))
    assert best([fast, second]) is second

    assert record_status(first) == "ok · spec off"
    assert "speculation off: the target and draft vocabs" in status_detail(first)
    assert record_from_dict(record_to_dict(first)) == first
    report = "\n".join(acceptance_lines([first, second], None))
    assert "## Speculation off" in report and "vocabs are not compatible" in report
    assert "| 2 |" in report and "1.222" not in report  # 1 + 18/9 = 3.000 for trial 2
    assert "3.000" in report


def test_the_configuration_and_the_counters_say_so_too() -> None:
    d = Driver()
    d.start(loads_plan(PLAN))
    run_trial(d, config_change={"spec_type": None, "spec_draft_n_max": None})  # -md, no spec_type
    assert "without spec_type" in d.state.trials[0].speculation_off
    run_trial(d, drafts=0)  # asked to speculate, the counters saw no draft
    assert d.state.trials[1].speculation_off == NO_DRAFTS


def level(measurement: str, counters: CounterAcceptance | None) -> LevelSummary:
    return LevelSummary(
        concurrency=4,
        output_tok_s=400.0,
        per_request_tok_s=100.0,
        completed=4,
        measurement=measurement,
        counters=counters,
    )


def test_counters_that_saw_no_request_finish_are_no_evidence_of_no_drafts() -> None:
    """SGLang counts verify steps and generated tokens only as each request finishes: over a
    steady window in which none finished, both deltas are 0 whether it drafted or not. That
    silence is no evidence; zero drafts beside tokens the engine counted is."""
    sglang = plan().base
    silent = CounterAcceptance(0, 0, 0, output_tokens=0)
    assert uncounted(sglang, [level("steady", silent)]) == ""
    assert uncounted(sglang, [level("steady", silent), level("steady", silent)]) == ""
    generated = CounterAcceptance(0, 0, 0, output_tokens=2048)
    assert uncounted(sglang, [level("steady", generated)]) == NO_DRAFTS
    assert uncounted(sglang, [level("steady", silent), level("steady", generated)]) == NO_DRAFTS
    drafted = CounterAcceptance(512, 0, 1024, output_tokens=1536)
    assert uncounted(sglang, [level("steady", silent), level("steady", drafted)]) == ""
    # an engine without an output-token counter: only whole requests can tell
    blind = CounterAcceptance(0, 0, 0)
    assert uncounted(sglang, [level("steady", blind)]) == ""
    assert uncounted(sglang, [level("completed", blind)]) == NO_DRAFTS
    assert not counters_saw_generation(level("completed", None))
    untrusted = CounterAcceptance.untrusted("counter reset (sglang:spec_verify_calls_total)")
    assert not counters_saw_generation(level("completed", untrusted))


def test_a_steady_sweep_on_sglang_is_not_marked_off_for_its_silent_windows() -> None:
    """Through the machine: a trial benchmarked over steady windows that no request finished
    in is recorded unmarked (marked, the per-level schedule would lose its draft length), and
    the same trial whose counters saw tokens generated without a draft is marked."""
    for output_tokens, reason in ((0, ""), (4096, NO_DRAFTS)):
        d = Driver()
        d.to_phase(Phase.BENCHMARKING)
        counters = CounterAcceptance(0, 0, 0, output_tokens=output_tokens, drafted_length=3.0)
        d.send(ev.BenchFinished(levels=(level("steady", counters),)))
        assert d.state.phase is Phase.RECORDING and d.state.trial is not None
        d.send(ev.TrialRecorded(index=d.state.trial.index))
        assert d.state.trials[0].status is TrialStatus.OK
        assert d.state.trials[0].speculation_off == reason
