"""The simulated box's ``nvidia-smi``: the real tool's flags and shapes, and what it reports
as the simulator loads (weights, draft, workspace and KV pool, graphs), serves (utilisation
and power follow the batch) and dies of memory (the rise past the static budget, held)."""

from __future__ import annotations

import io
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from specconsole.core.measure.gpu import QUERY_FIELDS, parse_sample, query_args
from specconsole.sim.forecast import calibration_config, resolve_config
from specconsole.sim.gpu import nvidia_smi
from specconsole.sim.gpu.gpustate import FOLLOW_S, UTILIZATION_PERIOD_S, GpuBoard
from specconsole.sim.physics.model import GIB, plan_memory
from specconsole.sim.profile import load_default_profile
from tests.fixtures.gpubox import GpuBox, make_gpu_box
from tests.fixtures.sim import SimProcess, running_simulator

QUERY = "--query-gpu=" + ",".join(QUERY_FIELDS)


def _run(box: GpuBox, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(box.nvidia_smi), *args], capture_output=True, text=True, timeout=30)


def test_shapes_of_the_real_tool(tmp_path: Path) -> None:
    box = make_gpu_box(tmp_path)
    done = _run(box, QUERY, "--format=csv,noheader,nounits")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert len(lines) == 4 and all(parse_sample(line) is not None for line in lines)
    sample = parse_sample(lines[2])
    assert sample is not None and sample.index == 2 and sample.memory_total_mib == 49152
    with_header = _run(box, "--query-gpu=index,memory.used,power.draw", "--format=csv").stdout
    assert with_header.splitlines()[:2] == [
        "index, memory.used [MiB], power.draw [W]",
        "0, 1 MiB, 30.00 W",
    ]
    probe = _run(box, "--query-gpu=name,memory.total,memory.used", "--format=csv,noheader,nounits")
    assert probe.stdout.splitlines()[0] == "NVIDIA RTX 6000 Ada Generation, 49152, 1"
    assert _run(box, "-L").stdout.startswith("GPU 0: NVIDIA RTX 6000 Ada Generation (UUID: GPU-")
    assert "NVIDIA-SMI" in _run(box).stdout
    bad = _run(box, "--query-gpu=memory.usedd", "--format=csv")
    assert bad.returncode == 2 and 'Field "memory.usedd" is not a valid field' in bad.stdout
    assert _run(box, "--bogus").returncode == 2


def test_the_console_query_loops_at_its_interval(tmp_path: Path) -> None:
    box = make_gpu_box(tmp_path)
    out = io.StringIO()
    args = list(query_args(100))[1:]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(nvidia_smi.STATE_ENV, str(box.state_dir))
        stop = threading.Timer(0.45, lambda: (_ for _ in ()).throw(SystemExit))
        worker = threading.Thread(target=lambda: _loop(args, out), daemon=True)
        worker.start()
        worker.join(0.55)
        stop.cancel()
    lines = [line for line in out.getvalue().splitlines() if line]
    assert 12 <= len(lines) <= 28  # 4 GPUs every 100 ms for about half a second


def _loop(args: list[str], out: io.StringIO) -> None:
    nvidia_smi.main(args, out=out)


def test_no_devices(tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(nvidia_smi.STATE_ENV, str(tmp_path / "nothing"))
        out = io.StringIO()
        assert nvidia_smi.main([QUERY, "--format=csv"], out=out) == 6
    assert out.getvalue().strip() == "No devices were found"


def _memory(box: GpuBox) -> float:
    line = _run(box, QUERY, "--format=csv,noheader,nounits", "-i", "0").stdout.strip()
    sample = parse_sample(line)
    assert sample is not None, line
    return sample.memory_used_mib


def _watch(box: GpuBox, seconds: float) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        out.append((time.monotonic(), _memory(box)))
        time.sleep(0.05)
    return out


def _stream_until_ready(box: GpuBox, sim: SimProcess, bound_s: float) -> list[float]:
    """GPU 0's memory as one streaming run of the box's nvidia-smi prints it (``-lms 50``,
    like the console's), from before the simulator loads until it says it is ready (bounded
    by ``bound_s``). The watch follows the simulator's own start-up, however slow a loaded
    machine makes its imports, and costs one process start in all, not one per sample."""
    args = [str(box.nvidia_smi), QUERY, "--format=csv,noheader,nounits", "-i", "0", "-lms", "50"]
    loop = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        sim.wait_for_line("ready to roll", timeout=bound_s)
        time.sleep(0.3)  # a few ticks at ready
    finally:
        loop.kill()
    lines = loop.communicate(timeout=10)[0].splitlines()
    samples = [parse_sample(line) for line in lines]
    return [s.memory_used_mib for s in samples if s is not None]


def test_memory_follows_the_load_and_the_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = make_gpu_box(tmp_path)
    monkeypatch.setenv(nvidia_smi.STATE_ENV, str(box.state_dir))
    profile = load_default_profile()
    plan = plan_memory(resolve_config(calibration_config(profile, 3), profile), profile)
    with running_simulator(load_seconds=2.0, wait_ready=False) as sim:
        values = _stream_until_ready(box, sim, 60.0)
        ready = _memory(box)
        used = plan.total_gb - plan.avail_after_graph_gb
        assert ready / 1024 == pytest.approx(used, abs=0.01)  # context, weights, pool, graphs
        assert values == sorted(values) and values[0] < ready == values[-1]  # it rose as it loaded
        assert len(set(values)) >= 5, values
        idle_power = _run(box, "--query-gpu=power.draw", "--format=csv,noheader,nounits")
        busy = threading.Thread(target=_load, args=(sim.base_url,), daemon=True)
        busy.start()
        time.sleep(UTILIZATION_PERIOD_S + 2 * FOLLOW_S)  # a whole sample period of load
        loaded = _run(
            box, "--query-gpu=utilization.gpu,power.draw", "--format=csv,noheader,nounits"
        )
        busy.join(30)
        util, power = (float(x) for x in loaded.stdout.splitlines()[0].split(","))
        assert util == 100.0 and power > float(idle_power.stdout.splitlines()[0]) + 100
    assert _memory(box) == 1.0  # its memory freed when it stopped


def _load(url: str) -> None:
    body = {"text": "hello " * 32, "sampling_params": {"max_new_tokens": 512}}
    with httpx.Client(timeout=60) as client:
        threads = [
            threading.Thread(target=client.post, args=(f"{url}/generate",), kwargs={"json": body})
            for _ in range(16)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def test_not_enough_memory_rises_past_the_budget_and_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = make_gpu_box(tmp_path)
    monkeypatch.setenv(nvidia_smi.STATE_ENV, str(box.state_dir))
    profile = load_default_profile()
    config = calibration_config(profile, 10)
    plan = plan_memory(resolve_config(config, profile), profile)
    budget_mib = profile.gpu.memory_gb * 0.88 * 1024
    flags = ("--speculative-num-steps", "10", "--speculative-num-draft-tokens", "11")
    with running_simulator(*flags, load_seconds=1.0, wait_ready=False) as sim:
        seen = _watch(box, 0.5)
        while sim.popen.poll() is None and len(seen) < 1000:
            seen += _watch(box, 0.2)
        seen += _watch(box, 0.2)
        assert any("Not enough memory" in line for line in sim.lines)
        assert sim.wait_exit(timeout=30) == -9
    peak = max(m for _, m in seen)
    expected = (plan.total_gb - plan.avail_after_draft_gb + plan.spec_workspace_gb) * GIB / 2**20
    assert peak == pytest.approx(expected, abs=2) and peak > budget_mib  # past the budget
    held = [t for t, m in seen if m == peak]
    assert held[-1] - held[0] >= 1.0  # long enough for a sampler at 1 Hz to see it
    assert seen[-1][1] == 1.0  # killed: the driver freed it


def test_utilization_is_a_sample_periods_average_not_an_instant(tmp_path: Path) -> None:
    """NVML's utilization.gpu is the share of its sample period a kernel ran: the instant
    between two requests at c = 1 reads close to the busy figure, not 0 %, and a load that
    has ended fades to 0 within one period."""
    board = GpuBoard(load_default_profile(), 1, tmp_path)

    def busy_pct() -> float:
        return round(100 * nvidia_smi.read_box(tmp_path)[0]["busy"], 1)

    try:
        for _ in range(10):
            board.load(1, 8)
        assert busy_pct() == 65.0
        board.load(0, 8)  # the gap between two requests
        assert 50.0 < busy_pct() < 65.0
        for _ in range(round(UTILIZATION_PERIOD_S / FOLLOW_S)):
            board.load(0, 8)
        assert busy_pct() == 0.0
    finally:
        board.close()
