"""SGLang's acceptance from its own counters, end to end against the simulator's SGLang face
(issue 31): a headless sweep with ``--enable-metrics``, each level's acceptance the delta of
``sglang:spec_verify_calls_total`` and ``sglang:generation_tokens_total`` around it (both
counted as each request finishes, as SGLang's tokenizer counts them, never a since-start
figure), the acceptance over time from its ``sglang:spec_accept_length`` gauge, and the load
generator's own tokens per chunk agreeing within 10 %."""

from __future__ import annotations

import asyncio
import io
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.core.machine.state import TrialStatus
from specconsole.core.measure.trials import ACCEPT_TOLERANCE
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.headless.sweep import run_headless
from specconsole.session.reports.report import render
from specconsole.session.store import Session
from tests.controller.test_e2e import run_dir  # noqa: F401  (the fixture: stops the server)
from tests.fixtures.plans import sim_plan_text
from tests.fixtures.sshd import free_port

pytestmark = pytest.mark.slow

OUTPUT_LEN = 96
SWEEP = """[sweep]
strategy = "grid"
on_crash = "auto"
load_timeout = 60
finally = "stop"

[sweep.axes]
speculative_num_steps = [2, 4]
"""
BENCH = f"""[bench]
ladder = [1, 4]
input_len = 64
output_len = {OUTPUT_LEN}
requests_per_level = 12
warmup_requests = 1
api = "generate"
"""


async def test_sglang_levels_take_acceptance_from_its_counters(
    tmp_path: Path,
    run_dir: Path,  # noqa: F811  (the fixture)
) -> None:
    text = sim_plan_text(
        run_dir,
        port=free_port(),
        extra_args=["--sim-load-seconds", "0.3", "--enable-metrics"],
        sweep=SWEEP,
        bench=BENCH,
        name="sglang counters",
    )
    plan = replace(resolve_placeholders(loads_plan(text), {"python": sys.executable}), source=text)
    session = Session.create(tmp_path / "sessions", plan)
    out = io.StringIO()
    code = await asyncio.wait_for(run_headless(plan, session, out=out), 240)
    assert code == 0, out.getvalue()
    trials = session.load_trials()
    assert [t.status for t in trials] == [TrialStatus.OK, TrialStatus.OK]
    lengths = []
    for trial in trials:
        for level in trial.levels:
            c = level.counters
            assert c is not None and c.drafts > 0, level
            # the level's own requests (warm-up excluded), counted as each finished
            assert c.output_tokens == level.completed * OUTPUT_LEN, level
            assert level.accept_length == pytest.approx(c.output_tokens / c.drafts, rel=1e-12)
            assert c.acceptance_length == pytest.approx(level.accept_length)
            assert c.draft_tokens == 0 and c.acceptance_rate is None  # SGLang counts none
            assert c.series and all(1.0 < x <= 6.0 for x in c.series), c  # its gauge, live
            off = level.accept_disagreement
            assert off is not None and off <= ACCEPT_TOLERANCE, level
        lengths.append(trial.levels[0].accept_length)
    assert lengths[1] > lengths[0]  # deeper drafts accept more per step
    report = render(trials, plan, "md")
    assert "## Acceptance per level (the engine's own counters)" in report
    assert "tokens/chunk: agrees" in report
