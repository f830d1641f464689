"""Planted faults on the console's screen (issue 44): the real app driving the real controller,
the process backend and the simulator as a real HTTP process with its own ``nvidia-smi``, over
the local transport, with the box's lies planted at once (``--sim-*`` faults,
``sim/faults.py``): its ``/metrics`` counters start again from zero mid-level, GPU 1's power
reads ``[N/A]``, a proxy answers ``/server_info`` with its HTML page, and its ``--help`` is
hard-wrapped at 40 columns.

While the trial runs, the live GPU line shows GPU 1's power as the driver printed it, never as
0 W (every frame drawn is read). When the sweep is done, the trial's row and its details say
what was not trusted — the level whose counters reset has no acceptance figure (``c=2 accept
unknown (counter reset …)``), no level has tokens per joule (``tok/J unknown (no power from
GPU 1)``), the help and the HTML answer are the trial's warnings — and the trial's accept
length is the trusted level's only. The same faults through the headless console and the
reports are ``tests/controller/test_hostile_sweeps.py``'s.
"""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.core.machine.state import Phase, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.ui.widgets.gpus import GpuLine
from specconsole.ui.widgets.trials import TrialsPane
from tests.controller.test_e2e import run_dir  # noqa: F401  (the fixture: stops the server)
from tests.controller.test_hostile_sweeps import SWEEP, gpus  # noqa: F401  (a fixture)
from tests.fixtures.gpubox import GpuBox
from tests.fixtures.plans import SEED_SERVER, SIM_LAUNCHER, sim_plan_text
from tests.fixtures.sshd import free_port
from tests.ui.test_box_console import SWEEP_WAIT_S, _until, console

pytestmark = pytest.mark.slow

BENCH = """[bench]
ladder = [1, 2]
input_len = 64
output_len = 256
requests_per_level = 4
warmup_requests = 0
api = "generate"
"""
"""Levels of 4 requests each (the reset is keyed to finished requests: the 6th is mid c=2),
long enough (a request streams for about a second) for the GPUs to be sampled in each."""
FAULTS = [
    "--enable-metrics",
    "--sim-metrics-reset-after-requests",
    "6",
    "--sim-smi-power",
    "na",
    "--sim-smi-gpus",
    "1",
    "--sim-proxy-html",
    "/server_info",
]
ZERO_WATTS = re.compile(r"(?<![\d,.])0 ?W\b")


async def test_a_lying_box_on_the_console_shows_what_was_not_trusted_and_no_wrong_figure(
    gpus: GpuBox,  # noqa: F811  (the fixture)
    tmp_path: Path,
    run_dir: Path,  # noqa: F811  (the fixture)
) -> None:
    text = sim_plan_text(
        run_dir,
        port=free_port(),
        extra_args=["--sim-load-seconds", "0.3", *FAULTS],
        sweep=SWEEP,
        bench=BENCH,
        name="hostile console",
        server=SEED_SERVER,
        launcher=f"{SIM_LAUNCHER} --sim-help-wrap 40",
    )
    plan = replace(resolve_placeholders(loads_plan(text), {"python": sys.executable}), source=text)
    session, wired, app = console(plan, tmp_path)
    app._gate.open = True  # the first deploy's confirmation has its own tests
    state = lambda: wired.controller.state  # noqa: E731
    frames: list[str] = []
    try:
        async with app.run_test(size=(160, 45)) as pilot:
            line = app.screen.query_one(GpuLine)

            def done() -> bool:
                if line.display and line.samples:
                    frames.append(line.plain)
                return state().phase is Phase.DONE

            await pilot.press("s")
            await _until(pilot, done, SWEEP_WAIT_S, "the sweep's end")
            # the live line: GPU 1's power as the driver printed it, never 0 W
            assert any("[N/A]" in frame for frame in frames), frames
            assert not [f for f in frames if ZERO_WATTS.search(f)], frames

            (trial,) = state().trials
            assert trial.status is TrialStatus.OK, trial
            trusted, reset = trial.levels
            assert reset.counters is not None and reset.counters.unknown, reset
            assert trial.accept_length == pytest.approx(trusted.accept_length)

            pane = app.screen.query_one(TrialsPane)
            await pilot.pause(0.3)
            row = pane.table.get_row(str(trial.index))
            accept = pane.shown_columns.index("accept")
            assert row[accept] == f"{trusted.accept_length:.2f}", row
            details = pane.details_text  # one line a fact (the pane wraps them to its width)
            shown = details.splitlines()
            # the counters: the reset level has no acceptance figure, the other has its own
            assert f"accept length: {trusted.accept_length:.2f}" in shown, details
            assert any(s.startswith("c=2 accept unknown (counter reset (") for s in shown), details
            assert not any(re.match(r"c=2 accept \d", s) for s in shown), details
            # the power: unknown for every level, said with its reason, never 0 W or a tok/J
            energy = [s for s in shown if re.match(r"c=\d GPUs: ", s)]
            assert len(energy) == 2, details
            assert all("tok/J unknown (no power from GPU 1)" in s for s in energy), energy
            assert not re.search(r"\d tok/J|(?<![\d,.])0 W", details), details
            # what the box said that was not trusted: the trial's warnings
            warned = [s for s in shown if s.startswith("warning: ")]
            assert any("--help not trusted" in s and "hard-wrapped at 40" in s for s in warned)
            assert any("/server_info answered an HTML page, not JSON" in s for s in warned), warned
            await pilot.press("q")
            await pilot.pause(0.5)
    finally:
        wired.recorder.close()
        await wired.ports.transport.close()
    records = session.load_trials()
    assert [r.status for r in records] == [TrialStatus.OK]
