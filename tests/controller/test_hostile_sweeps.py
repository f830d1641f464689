"""Planted faults through the whole product (issue 44): a real headless sweep — the controller,
the process backend, the load generator, the GPU telemetry over the local transport — against
the simulator as a real HTTP server process with its own ``nvidia-smi``, each with one of the
box's lies planted (``--sim-*`` faults, ``sim/faults.py``):

* counters that start again from zero mid-level (SGLang's, backwards; vLLM's, grown back past
  where they were, their ``*_created`` moved);
* power the driver cannot read (``[N/A]`` on one GPU, ``[Not Supported]`` on all);
* an ``nvidia-smi`` that hangs (a hung driver) or reports its GPU lost, mid-benchmark;
* a proxy's HTML page where ``/server_info`` (SGLang) or ``/version`` (vLLM) should be;
* a ``--help`` hard-wrapped at 40 columns.

Each ends in a trial record that says what was not trusted, and no wrong figure reaches the
record, the headless console's lines or the Markdown, JSON and HTML reports: a level's
acceptance ``unknown (counter reset …)``, its power ``unknown (no power from GPU 1)`` and no
tokens per joule, ``GPU telemetry lost (…)`` instead of stale or zero figures, the release
``unknown`` and portable flags, the flags checked by the engine's rules. Short ladders and few
requests keep each sweep to seconds; the windows that must outlast the telemetry's silence
bound are derived from it. The console's panes are ``tests/ui/test_hostile_console.py``'s.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from specconsole.controller import telemetry
from specconsole.core.config.concepts import Concept, concept_key
from specconsole.core.machine.state import TrialRecord, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.core.plans.plan import SweepPlan
from specconsole.headless.sweep import run_headless
from specconsole.session.reports.report import render
from specconsole.session.reports.report_html import to_html
from specconsole.session.store import Session
from tests.controller.test_e2e import run_dir  # noqa: F401  (the fixture: stops the server)
from tests.fixtures.gpubox import GpuBox, local_gpus
from tests.fixtures.plans import SEED_SERVER as SGLANG_SERVER
from tests.fixtures.plans import SIM_LAUNCHER, VLLM_LAUNCHER, VLLM_SERVER, sim_plan_text
from tests.fixtures.sshd import free_port

pytestmark = pytest.mark.slow


def sweep_table(engine: str) -> str:
    """One trial at draft length 3, written in ``engine``'s own key."""
    return f"""[sweep]
strategy = "grid"
on_crash = "auto"
load_timeout = 60
finally = "stop"

[sweep.axes]
{concept_key(engine, Concept.DRAFT_LENGTH)} = [3]
"""


SWEEP = sweep_table("sglang")
FACES = {
    "sglang": (SGLANG_SERVER, SIM_LAUNCHER, "generate"),
    "vllm": (VLLM_SERVER, VLLM_LAUNCHER, "chat"),
}


def counted_bench(api: str, *, ladder: str = "[1, 2]", requests: int = 4, warmup: int = 0) -> str:
    """Levels of a fixed number of requests: where a fault keyed to finished requests lands."""
    return f"""[bench]
ladder = {ladder}
input_len = 64
output_len = 48
requests_per_level = {requests}
warmup_requests = {warmup}
api = "{api}"
"""


def windowed_bench(api: str, window_s: float, ladder: str = "[1, 2]") -> str:
    """Steady windows of ``window_s``: long enough for the GPUs to be sampled during each."""
    return f"""[bench]
ladder = {ladder}
input_len = 64
output_len = 256
window = "steady"
window_s = {window_s}
warmup_requests = 0
api = "{api}"
"""


@dataclass
class Swept:
    """A finished sweep: its exit code, what the headless console printed, the records, and
    the reports as a user gets them."""

    code: int
    said: str
    trials: list[TrialRecord]
    session: Session
    plan: SweepPlan

    @property
    def trial(self) -> TrialRecord:
        (only,) = self.trials
        return only

    @property
    def meta(self) -> dict:
        return tomllib.loads((self.session.path / "session.toml").read_text())["session"]

    def md(self) -> str:
        return render(self.trials, self.plan, "md")

    def json(self) -> dict:
        return json.loads(render(self.trials, self.plan, "json"))

    def html(self) -> str:
        return to_html(self.trials, self.plan)


async def sweep(
    tmp_path: Path,
    run: Path,
    faults: list[str],
    bench: str,
    *,
    face: str = "sglang",
    launcher: str | None = None,
) -> Swept:
    server, face_launcher, _api = FACES[face]
    text = sim_plan_text(
        run,
        port=free_port(),
        extra_args=["--sim-load-seconds", "0.3", *faults],
        sweep=sweep_table(face),
        bench=bench,
        name=f"hostile {face}",
        server=server,
        launcher=launcher or face_launcher,
    )
    plan = replace(resolve_placeholders(loads_plan(text), {"python": sys.executable}), source=text)
    session = Session.create(tmp_path / "sessions", plan)
    out = io.StringIO()
    code = await asyncio.wait_for(run_headless(plan, session, out=out), 240)
    return Swept(code, out.getvalue(), list(session.load_trials()), session, plan)


@pytest.fixture
def gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GpuBox]:
    """This machine as the simulated box with its GPUs and their ``nvidia-smi``."""
    with local_gpus(tmp_path / "box", monkeypatch) as box:
        yield box


FIGURE = r"\d+\.\d+"


def level_lines(said: str, concurrency: int) -> list[str]:
    """The headless console's lines for one level (``[hh:mm:ss]   c=2   aggregate …``)."""
    return [
        line for line in said.splitlines() if re.match(rf"\[[\d:]+\]\s+c={concurrency}\s", line)
    ]


# -- counters -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("face", "faults", "bench", "reset"),
    [
        # 4 requests at c=1, then the registry restarts as the 6th finishes (mid c=2): the
        # counters end below where they began
        ("sglang", ["--enable-metrics"], counted_bench("generate"), ("went from",)),
        # a warm-up, then c=2 restarts as the 3rd finishes: two more requests count back past
        # the one before the level — the *_created gauges say it restarted (or a read during
        # the level saw the counts fall)
        ("vllm", [], counted_bench("chat", ladder="[2]", warmup=1), ("created again", "went from")),
    ],
)
async def test_counters_reset_mid_level_make_that_levels_acceptance_unknown(
    face: str,
    faults: list[str],
    bench: str,
    reset: tuple[str, ...],
    tmp_path: Path,
    run_dir: Path,  # noqa: F811  (the fixture)
) -> None:
    every = "6" if face == "sglang" else "3"
    faults = [*faults, "--sim-metrics-reset-after-requests", every]
    swept = await sweep(tmp_path, run_dir, faults, bench, face=face)
    assert swept.code == 0, swept.said
    trial = swept.trial
    assert trial.status is TrialStatus.OK, swept.said
    *trusted, hit = trial.levels
    counters = hit.counters
    assert counters is not None and counters.unknown.startswith("counter reset ("), hit
    assert any(why in counters.unknown for why in reset), counters.unknown
    # no figure from the counters: none in the record, the trial's own from the others only
    assert hit.accept_length is None and counters.acceptance_length is None
    assert counters.drafts == counters.accepted == 0 and counters.acceptance_rate is None
    for level in trusted:
        assert level.counters is not None and level.counters.trusted, level
        assert level.accept_length is not None and level.accept_length > 1
    if trusted:
        assert trial.accept_length == pytest.approx(trusted[0].accept_length)
    else:
        assert trial.accept_length is None, trial.accept_length
    # the throughput is the load generator's own: still there
    assert hit.output_tok_s > 0 and hit.completed == 4
    # the headless console: the level's line has no acceptance figure; the trial's is the
    # trusted levels' (or none)
    lines = level_lines(swept.said, hit.concurrency)
    assert lines and not any("accept" in line for line in lines), lines
    summary = next(line for line in swept.said.splitlines() if ": ok, capacity" in line)
    if trial.accept_length is None:
        assert "accept" not in summary, summary
    else:
        assert f"accept {trial.accept_length:.2f}" in summary, summary
    # the reports
    md = swept.md()
    row = next(
        line
        for line in md.splitlines()
        if line.startswith("| 1 | ") and "unknown (counter reset (" in line
    )
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == str(hit.concurrency) and cells[3:6] == ["—", "—", "—"], row
    level = swept.json()["trials"][0]["levels"][-1]
    assert level["accept_length"] is None, level
    assert level["counters"]["unknown"] == counters.unknown
    assert level["counters"]["acceptance_length"] is None
    html = swept.html()
    assert f"c={hit.concurrency} accept unknown (counter reset (" in html
    assert not re.search(rf"c={hit.concurrency} accept {FIGURE}", html)


# -- GPU telemetry ------------------------------------------------------------------------------

SAMPLED_WINDOW_S = 2.5
"""A steady window the GPUs are sampled in more than once at the telemetry's interval (1 s)."""


@pytest.mark.parametrize(
    ("faults", "said", "gpus_named"),
    [
        (["--sim-smi-power", "na", "--sim-smi-gpus", "1"], "[N/A]", "1"),
        (["--sim-smi-power", "not-supported"], "[Not Supported]", "0, 1, 2, 3"),
    ],
)
async def test_power_the_driver_cannot_read_is_never_a_figure(
    faults: list[str],
    said: str,
    gpus_named: str,
    gpus: GpuBox,
    tmp_path: Path,
    run_dir: Path,  # noqa: F811  (the fixture)
) -> None:
    bench = windowed_bench("generate", SAMPLED_WINDOW_S)
    swept = await sweep(tmp_path, run_dir, faults, bench)
    assert swept.code == 0, swept.said
    trial = swept.trial
    assert trial.status is TrialStatus.OK and trial.gpu is not None, swept.said
    why = f"no power from GPU {gpus_named}"
    # the record: the box's words kept, no power, no tokens per joule — never 0 W
    unread = [s for s in trial.gpu.ready if s.power_w is None]
    assert unread and all(s.said("power.draw") == said for s in unread), trial.gpu.ready
    assert [s.index for s in unread] == [int(i) for i in gpus_named.split(", ")]
    for level in trial.levels:
        span = level.gpu
        assert span is not None and span.samples >= 1, level
        assert span.power_unknown == why and span.power_w is None, span
        assert level.tokens_per_joule is None, level
        assert span.memory_peak_mib and span.utilization_pct, span  # the rest was read
    # the headless console: no energy figure, no 0 W
    assert not re.search(rf"{FIGURE} tok/J| 0 W", swept.said), swept.said
    # the reports
    md = swept.md()
    rows = [line for line in md.splitlines() if re.match(r"\| 1 \| \d+ \| [\d,.]+ \| ", line)]
    assert len(rows) == len(trial.levels), md
    assert all(f"| unknown ({why}) |" in line for line in rows), rows
    assert all(line.rstrip().endswith("| unknown |") for line in rows), rows
    doc = swept.json()["trials"][0]
    assert all(lv["tokens_per_joule"] is None for lv in doc["levels"]), doc["levels"]
    assert all(lv["gpu"]["power_w"] is None for lv in doc["levels"]), doc["levels"]
    html = swept.html()
    assert html.count(f"unknown ({why})") == len(trial.levels)
    assert not re.search(rf"{FIGURE} tok/J| 0 W", html)


INTERVAL_S = telemetry.INTERVAL_MS / 1000
"""How often the telemetry samples the GPUs."""
SILENCE_S = max(telemetry.MIN_SILENCE_S, telemetry.SILENT_TICKS * INTERVAL_S)
"""How long an nvidia-smi may print nothing before the telemetry takes it as hung."""
FAULT_AFTER_S = 2 * INTERVAL_S
"""When nvidia-smi hangs or dies after ready: c=1 has been sampled by then."""
LOST_WINDOW_S = (FAULT_AFTER_S + SILENCE_S) / 2 + INTERVAL_S
"""Each of two levels' window: c=1 begins sampled, c=2 begins after the fault, and the two
outlast the silence that says a hung one is lost, with an interval to spare."""


@pytest.mark.parametrize(
    ("fault", "lost"),
    [
        ("--sim-smi-stall-after", f"nvidia-smi printed nothing for {SILENCE_S:g} s"),
        ("--sim-smi-exit-after", "GPU is lost.  Reboot the system to recover this GPU"),
    ],
)
async def test_a_hung_or_dead_nvidia_smi_is_said_lost_and_no_figure_follows(
    fault: str,
    lost: str,
    gpus: GpuBox,
    tmp_path: Path,
    run_dir: Path,  # noqa: F811  (the fixture)
) -> None:
    bench = windowed_bench("generate", LOST_WINDOW_S)
    swept = await sweep(tmp_path, run_dir, [fault, f"{FAULT_AFTER_S:g}"], bench)
    assert swept.code == 0, swept.said
    trial = swept.trial
    assert trial.status is TrialStatus.OK and trial.gpu is not None, swept.said
    assert lost in trial.gpu.lost, trial.gpu.lost
    first, second = trial.levels
    assert first.gpu is not None and first.gpu.samples >= 1  # sampled before the fault
    assert first.gpu.power_w and first.gpu.power_w > 0
    # after it was lost: no sample, so no figure — never a stale one or 0
    assert second.gpu is None or not second.gpu.samples, second.gpu
    assert second.tokens_per_joule is None
    # the headless console said it once, with the reason
    warned = [line for line in swept.said.splitlines() if "GPU telemetry lost" in line]
    assert warned and lost in warned[0], swept.said
    assert "they are not 0" in warned[0]
    # the reports say it, and have no row for the level measured without telemetry
    md = swept.md()
    assert "## Warnings" in md and "GPU telemetry lost: " in md.split("## Warnings")[1], md
    level_rows = [line for line in md.splitlines() if re.match(r"\| 1 \| \d+ \| ", line)]
    assert [line.split("|")[2].strip() for line in level_rows] == ["1"], level_rows
    assert swept.json()["trials"][0]["gpu"]["lost"] == trial.gpu.lost
    html = swept.html()
    assert "<h2>Warnings</h2>" in html and "GPU telemetry lost: " in html


# -- the release and the help ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("face", "route"),
    [("vllm", "/version"), ("sglang", "/server_info")],
)
async def test_a_proxys_html_where_the_release_should_be_leaves_it_unknown_never_guessed(
    face: str,
    route: str,
    tmp_path: Path,
    run_dir: Path,  # noqa: F811  (the fixture)
) -> None:
    """The launcher's interpreter cannot say the release here (no engine installed), so the
    running server is asked — and a proxy answers its HTML page: the release stays unknown,
    with both reasons in the session, the trial keeps the refusal among its warnings, and it
    was deployed with the flags every release accepts (no release-dependent spelling guessed).
    Without the fault the same sweep learns the release from the server (the control)."""
    api = FACES[face][2]
    bench = counted_bench(api, ladder="[1]", requests=2)
    swept = await sweep(tmp_path, run_dir, ["--sim-proxy-html", route], bench, face=face)
    assert swept.code == 0, swept.said
    trial = swept.trial
    assert trial.status is TrialStatus.OK, swept.said
    html_said = f"{route} answered an HTML page, not JSON"
    meta = swept.meta
    assert meta["engine_version"] == "unknown" and meta["engine_version_source"] == "unknown"
    assert f"the running server's answer: {html_said}" in meta["engine_version_detail"], meta
    refused = f"server_info: {html_said} (a proxy or another server answered)"
    assert refused in trial.warnings, trial.warnings
    assert trial.effective.engine_version is None, trial.effective
    assert "the box runs release" not in swept.said, swept.said  # never a guess
    assert "release unknown: portable flags" in swept.said, swept.said  # the pre-flight
    if face == "sglang":  # the one release-dependent flag: left out, said, not guessed
        assert any(
            w.startswith("the SGLang release on the box is not known: left out")
            for w in trial.warnings
        ), trial.warnings
        command = next(ln for ln in swept.said.splitlines() if "-m specconsole.sim " in ln)
        assert "--cuda-graph-max-bs" not in command, command
    # the figures the server measured are its own: acceptance and throughput still there
    assert trial.accept_length is not None and trial.levels[0].output_tok_s > 0
    md = swept.md()
    assert "## Warnings" in md and refused in md.split("## Warnings")[1], md
    assert refused in swept.json()["trials"][0]["warnings"]
    html = swept.html()
    assert "<h2>Warnings</h2>" in html and html_said in html


async def test_the_control_sweep_learns_the_release_from_its_server(
    tmp_path: Path,
    run_dir: Path,  # noqa: F811  (the fixture)
) -> None:
    """The HTML test's control: the same vLLM sweep without the proxy learns the release."""
    bench = counted_bench("chat", ladder="[1]", requests=2)
    swept = await sweep(tmp_path, run_dir, [], bench, face="vllm")
    assert swept.code == 0, swept.said
    assert swept.meta["engine_version_source"] == "server_info", swept.meta
    assert swept.trial.warnings == (), swept.trial.warnings


@pytest.mark.parametrize("face", ["sglang", "vllm"])
async def test_a_hard_wrapped_help_is_not_trusted_and_the_trial_runs_on_the_rules(
    face: str,
    tmp_path: Path,
    run_dir: Path,  # noqa: F811  (the fixture)
) -> None:
    """The box's binary prints its help folded at 40 columns: its flags cut in two. Read as
    is, the configuration's own flags would be "not accepted" and the trial refused; not
    trusted, the pre-flight and the trial's record say so and the engine's rules check it."""
    _server, launcher, api = FACES[face]
    bench = counted_bench(api, ladder="[1]", requests=2)
    wrapped = f"{launcher} --sim-help-wrap 40"
    swept = await sweep(tmp_path, run_dir, [], bench, face=face, launcher=wrapped)
    assert swept.code == 0, swept.said
    trial = swept.trial
    assert trial.status is TrialStatus.OK and trial.levels, swept.said  # not refused
    (distrust,) = [w for w in trial.warnings if w.startswith("--help not trusted: ")]
    assert "printed a help in another layout (hard-wrapped at 40 columns" in distrust
    preflight = next(ln for ln in swept.said.splitlines() if "warning: pre-flight:" in ln)
    assert "flags: --help not trusted" in preflight, preflight
    assert not any("not accepted" in e or "unknown flag" in e for e in trial.errors), trial
    md = swept.md()
    assert "## Warnings" in md and "hard-wrapped at 40 columns" in md.split("## Warnings")[1]
    assert distrust in swept.json()["trials"][0]["warnings"]
    assert "hard-wrapped at 40 columns" in swept.html()
