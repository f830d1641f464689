"""A ``/metrics`` whose counters restart between two scrapes (issue 44), through the real load
generator (the console's and the box's) into a level's record, its summary, the trial details
the console and the headless lines show, and the report: the level's acceptance reads
``unknown (counter reset …)`` everywhere and no figure is derived from the counters. The same
server without the restarts gives the figures, so the difference is the reset alone."""

from __future__ import annotations

import pytest

from specconsole.bench.remote_runner import RemoteBenchmarkRunner
from specconsole.bench.runner import ThreadedBenchmarkRunner
from specconsole.core.engine.registry import get_engine
from specconsole.core.machine.results import level_summaries
from specconsole.core.machine.state import TrialRecord, TrialStatus
from specconsole.core.ports import BenchSpec
from specconsole.present.figures.acceptance import level_acceptance
from specconsole.remote.transport.local import LocalTransport
from specconsole.session.reports.acceptance_report import acceptance_lines
from tests.bench.servers import mini_server
from tests.controller.helpers import plan

SPEC = BenchSpec(
    ladder=(2,),
    requests_per_level=6,
    warmup_requests=1,
    output_len=60,
    input_len=16,
    prompts="random",
    spec_counters=get_engine("sglang").endpoints.spec_counters,
)


@pytest.mark.parametrize("runner", ["console", "box"])
@pytest.mark.parametrize("reset_every", [0, 2])
async def test_counters_that_restart_mid_level_make_its_acceptance_unknown(
    runner: str, reset_every: int, tmp_path
) -> None:
    flags = ["--step-s", "0.02", "--chunks", "1,3,2"]
    with mini_server(*flags, "--metrics-reset-every", str(reset_every)) as url:
        bench = (
            ThreadedBenchmarkRunner()
            if runner == "console"
            else RemoteBenchmarkRunner(LocalTransport(), workdir=str(tmp_path))
        )
        result = await bench.run(SPEC, url)
    (level,) = result.levels
    assert level.completed == 6 and level.counters is not None
    (summary,) = level_summaries(result)
    record = TrialRecord(index=0, config=plan().base, status=TrialStatus.OK, levels=(summary,))
    details = "\n".join(level_acceptance(summary))
    report = "\n".join(acceptance_lines([record], plan().base))
    if not reset_every:
        assert level.counters.trusted and summary.accept_length == pytest.approx(2.0)
        assert "accept 2.00 (the engine's counters)" in details
        return
    assert level.counters.unknown.startswith("counter reset (sglang:"), level.counters
    assert summary.accept_length is None and summary.accept_rate is None
    assert record.accept_length is None
    assert details.startswith("c=2 accept unknown (counter reset (sglang:"), details
    assert "| 2 | — | — | — | unknown (counter reset (sglang:" in report, report
