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
from specconsole.core.machine.handlers.speculation import NO_DRAFTS
from specconsole.core.machine.handlers.watch import translate
from specconsole.core.machine.state import LevelSummary, Phase, TrialStatus
from specconsole.core.measure.acceptance import CounterAcceptance
from specconsole.core.plans.objective import best
from specconsole.core.plans.parse import loads_plan
from specconsole.present.status import record_status, status_detail
from specconsole.session.records import record_from_dict, record_to_dict
from specconsole.session.reports.acceptance_report import acceptance_lines
from tests.controller.helpers import Driver

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
