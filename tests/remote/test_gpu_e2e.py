"""GPU telemetry end to end over the real sshd (issue 31's done-when).

The simulated box — the simulator run by the plain-process backend over SSH, or as a systemd
unit in the container — has its own ``nvidia-smi`` on its PATH (``tests/fixtures/gpubox.py``)
that reports what the simulator's memory model holds as it loads and how busy it keeps the
GPUs. A headless sweep of steps 3 (loads) then 10 (fails: not enough memory) records, per
trial, the memory sampled while loading and at ready, every level's power, utilisation and
tokens per joule, and for the crash each GPU's memory at the fatal line — past the static
budget. The same sweep on a box without ``nvidia-smi`` runs with no error and says once that
there is no GPU.
"""

from __future__ import annotations

import asyncio
import io
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.core.machine.state import TrialRecord, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.headless.sweep import run_headless
from specconsole.session.store import Session
from specconsole.sim.forecast import calibration_config, resolve_config
from specconsole.sim.physics.model import plan_memory
from specconsole.sim.profile import load_default_profile
from tests.controller.test_e2e import run_dir  # noqa: F401  (the fixture: stops the server)
from tests.fixtures.gpubox import GpuBox, gpu_sshd, install_in_container
from tests.fixtures.nspawn import NspawnBox
from tests.fixtures.plans import sim_plan_text, ssh_host
from tests.fixtures.sshd import SshdServer, free_port

pytestmark = [pytest.mark.ssh, pytest.mark.slow]

SWEEP = """[sweep]
strategy = "grid"
on_crash = "auto"
load_timeout = 60
finally = "stop"

[sweep.axes]
speculative_num_steps = [3, 10]
"""
BENCH = """[bench]
ladder = [1, 16]
input_len = 256
output_len = 512
window = "steady"
window_s = 5.0
warmup_requests = 0
api = "generate"
"""
UNIT = "specconsole-gpu-e2e.service"
BUDGET_MIB = 48.0 * 0.88 * 1024
"""The static budget of the seed box's GPUs (mem_fraction_static 0.88 of 48 GiB)."""


@pytest.fixture(scope="module")
def gpu_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SshdServer, GpuBox]]:
    with gpu_sshd(tmp_path_factory.mktemp("gpu-sshd")) as box:
        yield box


async def sweep(host: str, run: Path, tmp_path: Path, service: str = "") -> tuple[int, str, list]:
    text = sim_plan_text(
        run,
        host=host,
        port=free_port(),
        extra_args=["--sim-load-seconds", "1.0"],
        sweep=SWEEP,
        bench=BENCH,
        name="gpu e2e",
        service=service,
    )
    plan = replace(resolve_placeholders(loads_plan(text), {"python": sys.executable}), source=text)
    session = Session.create(tmp_path / "sessions", plan)
    out = io.StringIO()
    code = await asyncio.wait_for(run_headless(plan, session, out=out), 240)
    return code, out.getvalue(), list(session.load_trials())


def assert_gpu_figures(trials: list[TrialRecord], said: str) -> None:
    loaded, crashed = trials
    assert loaded.status is TrialStatus.OK and crashed.status is TrialStatus.CRASHED, said
    gpu = loaded.gpu
    assert gpu is not None, said
    assert any(g.samples for g in gpu.load), gpu  # samples arrived while it loaded
    profile = load_default_profile()
    plan = plan_memory(resolve_config(calibration_config(profile, 3), profile), profile)
    held_mib = (plan.total_gb - plan.avail_after_graph_gb) * 1024
    assert gpu.ready_mib == pytest.approx(held_mib, abs=2), gpu
    assert gpu.memory_total_mib == 48 * 1024 and [s.index for s in gpu.ready] == [0, 1, 2, 3]
    for level in loaded.levels:
        span = level.gpu
        assert span is not None and span.samples >= 4, level  # 5 s, sampled each second
        assert span.utilization_pct and span.utilization_pct > 50, span
        assert span.power_w and span.power_w > 4 * 30 + 100, span  # above idle: it follows load
        assert level.tokens_per_joule == pytest.approx(level.output_tok_s / span.power_w)
    c1, c16 = sorted(loaded.levels, key=lambda lv: lv.concurrency)
    assert c16.gpu.power_w > c1.gpu.power_w  # type: ignore[union-attr]  # power follows load
    crash = crashed.crash
    assert crash is not None and crash.cause == "kv_cache_no_memory", crash
    memory = crash.gpu_memory
    assert [s.index for s in memory] == [0, 1, 2, 3], crash
    assert all(s.memory_used_mib > BUDGET_MIB for s in memory), memory  # past the budget
    assert "at the fatal line" in said and "tok/J at c=16" in said, said
    assert "no GPUs on this box" not in said


async def test_process_box_over_ssh_records_gpus(
    gpu_box: tuple[SshdServer, GpuBox],
    tmp_path: Path,
    run_dir: Path,  # noqa: F811  (the fixture)
) -> None:
    sshd, _box = gpu_box
    code, said, trials = await sweep(ssh_host(sshd), run_dir, tmp_path)
    assert code == 0, said
    assert_gpu_figures(trials, said)


async def test_a_box_without_nvidia_smi_runs_the_same_sweep(
    sshd: SshdServer,
    tmp_path: Path,
    run_dir: Path,  # noqa: F811  (the fixture)
) -> None:
    code, said, trials = await sweep(ssh_host(sshd), run_dir, tmp_path)
    assert code == 0, said
    assert [t.status for t in trials] == [TrialStatus.OK, TrialStatus.CRASHED], said
    assert said.count("no GPUs on this box (no nvidia-smi)") == 1, said
    assert all(t.gpu is None for t in trials) and trials[1].crash is not None
    assert trials[1].crash.gpu_memory == ()
    assert said.count("GPU telemetry") == 1, said  # said once, nothing else
    assert "Traceback" not in said and "nvidia-smi failed" not in said, said


@pytest.mark.systemd
async def test_systemd_box_records_gpus(nspawn_box: NspawnBox, tmp_path: Path) -> None:
    service = f'kind = "systemd"\nunit = "{UNIT}"\n'
    with install_in_container(nspawn_box):
        try:
            code, said, trials = await sweep(
                ssh_host(nspawn_box), tmp_path / "run", tmp_path, service
            )
        finally:
            nspawn_box.ssh(f"systemctl stop {UNIT}; rm -f /etc/systemd/system/{UNIT}; true")
    assert code == 0, said
    assert_gpu_figures(trials, said)
