"""The headless progress printer prints each ladder level as soon as it finishes."""

from __future__ import annotations

import io

from specconsole.core.machine import events as ev
from specconsole.core.machine.state import Phase
from specconsole.headless.printer import ProgressPrinter
from tests.controller.helpers import Driver, levels, plan


def test_level_lines_print_live_and_once() -> None:
    out = io.StringIO()
    printer = ProgressPrinter(out, plan())
    d = Driver()
    d.to_phase(Phase.BENCHMARKING)
    first, second = levels()
    d.send(ev.BenchLevelFinished(level_index=0, level=first))
    printer(d.state, ev.BenchLevelFinished(level_index=0, level=first))
    lines = [line for line in out.getvalue().splitlines() if "aggregate" in line]
    assert len(lines) == 1 and "c=1 " in lines[0]  # before the ladder is done
    finished = ev.BenchFinished(levels=(first, second))
    d.send(finished)
    printer(d.state, finished)
    lines = [line for line in out.getvalue().splitlines() if "aggregate" in line]
    assert [line.split("c=")[1].split()[0] for line in lines] == ["1", "4"]  # c=1 not twice


def test_the_deploy_diff_prints_before_the_deploy_and_lands_in_the_record() -> None:
    out = io.StringIO()
    printer = ProgressPrinter(out, plan())
    d = Driver()
    d.to_phase(Phase.DEPLOYING)
    diff = (
        "--- a\n+++ b\n@@ -1 +1 @@\n"
        "-    --speculative-num-steps 1\n+    --speculative-num-steps 2\n"
    )
    previewed = ev.DeployPreviewed(diff=diff)
    d.send(previewed)
    printer(d.state, previewed)
    # the flag-level summary, not the unified diff's 400-character lines
    assert any(
        line.endswith("  --speculative-num-steps: 1 → 2") for line in out.getvalue().splitlines()
    )
    assert d.state.trial is not None and d.state.trial.deploy_diff == diff
    assert d.state.phase is Phase.DEPLOYING  # printing never waits for an answer
    unchanged = ev.DeployPreviewed(diff="")
    d.send(unchanged)
    printer(d.state, unchanged)
    assert "no change" in out.getvalue().splitlines()[-1]


def test_repeated_runs_print_each_run_then_the_means_with_intervals() -> None:
    from dataclasses import replace

    from specconsole.core.machine.results import combine_runs

    out = io.StringIO()
    printer = ProgressPrinter(out, plan())
    d = Driver()
    d.to_phase(Phase.BENCHMARKING)
    one = levels()
    two = tuple(replace(lv, output_tok_s=lv.output_tok_s * 1.1) for lv in one)
    for repeat, run in enumerate((one, two)):
        for index, lv in enumerate(run):
            event = ev.BenchLevelFinished(level_index=index, level=lv, repeat=repeat)
            d.send(event)
            printer(d.state, event)
    combined = tuple(combine_runs([a, b]) for a, b in zip(one, two, strict=True))
    finished = ev.BenchFinished(levels=combined)
    d.send(finished)
    printer(d.state, finished)
    d.send(ev.TrialRecorded(index=0))
    printer(d.state, ev.TrialRecorded(index=0))
    # each line starts with a [hh:mm:ss] stamp; the glance after the trial names the best
    lines = [
        line[11:].strip()
        for line in out.getvalue().splitlines()
        if "aggregate" in line and "best #" not in line
    ]
    assert [line.split("aggregate")[0].strip() for line in lines] == [
        "c=1",
        "c=4",
        "run 2 c=1",
        "run 2 c=4",
        "mean of 2 runs: c=1",
        "mean of 2 runs: c=4",
    ]
    agg = combined[1].output_tok_s_spread
    assert agg is not None
    assert f"{agg.mean:,.1f} ± {agg.ci_half_width:,.1f} tok/s" in lines[-1]
    printed = out.getvalue().splitlines()
    [summary] = [line for line in printed if "single 100.0" in line]
    # the trial's result comes before anything about the next trial (issue 34)
    later = [n for n, line in enumerate(printed) if "trial 2" in line]
    assert all(n > printed.index(summary) for n in later)
    assert "single 100.0 ± 0.0 tok/s, peak 1,050.0 ± " in summary
    assert summary.endswith("mean ± 95% CI over 2 runs")
