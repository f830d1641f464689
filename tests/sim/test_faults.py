"""The box's planted lies (``--sim-*`` faults, :mod:`specconsole.sim.faults`), each seen from
outside as a real box shows it: ``/metrics`` counters that start again from zero after N
requests (the ``*_created`` gauges moved), a proxy's HTML page where ``/server_info`` or
``/version`` should be, a ``--help`` hard-wrapped at N columns, and the box's ``nvidia-smi``
printing ``[N/A]`` or ``[Not Supported]`` for power, hanging (a hung driver) or reporting its
GPU lost (exit 15) — from a moment after the server is ready, for as long as it lives.
The product's side of each (what it refuses to trust) is tested end to end in
``tests/controller/test_hostile_sweeps.py``."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from specconsole.core.engine.registry import get_engine
from specconsole.core.measure.acceptance import counter_deltas
from specconsole.core.measure.gpu import QUERY_FIELDS, GpuSample, parse_sample
from specconsole.core.measure.prometheus import read_prometheus
from specconsole.sim.faults import fold, restarted_text
from specconsole.sim.gpu import nvidia_smi
from tests.fixtures.gpubox import GpuBox, make_gpu_box
from tests.fixtures.sim import SimProcess, running_simulator, vllm_flags

QUERY = "--query-gpu=" + ",".join(QUERY_FIELDS)
BODY = {"text": "hello " * 16, "sampling_params": {"max_new_tokens": 24}}


def _scrape(url: str) -> dict:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    scrape = read_prometheus(text)
    assert scrape.trusted, scrape.problem
    return scrape.samples


def _total(samples: dict, name: str) -> float:
    return sum(samples.get(name, {}).values())


def test_sglang_counters_start_again_after_every_n_requests() -> None:
    names = get_engine("sglang").endpoints.spec_counters
    assert names is not None and names.output_tokens
    flags = ("--enable-metrics", "--sim-unthrottled", "--sim-metrics-reset-after-requests", "3")
    with running_simulator(*flags) as sim, httpx.Client(timeout=30) as client:
        outputs = []
        for _ in range(5):
            assert client.post(f"{sim.base_url}/generate", json=BODY).status_code == 200
            outputs.append(_total(_scrape(sim.base_url), names.output_tokens))
        # 24 tokens a request; the registry restarted as the 3rd finished: 1, 2, 0, 1, 2
        assert outputs == [24.0, 48.0, 0.0, 24.0, 48.0], outputs
        after = _scrape(sim.base_url)
        info = client.get(f"{sim.base_url}/server_info").json()
    assert _total(after, "sglang:e2e_request_latency_seconds_count") == 2.0
    assert _total(after, names.drafts) > 0
    # the engine itself kept counting: its gauges and its own routes are untouched
    assert _total(after, "sglang:max_total_num_tokens") > 0
    assert info["internal_states"][0]["avg_spec_accept_length"] > 1


def test_vllm_counters_restart_with_their_created_gauges_and_the_reader_says_reset() -> None:
    names = get_engine("vllm").endpoints.spec_counters
    assert names is not None and names.output_tokens
    flags = (*vllm_flags(3), "--sim-unthrottled", "--sim-metrics-reset-after-requests", "2")
    body = {"model": "m", "prompt": "hello " * 16, "max_tokens": 24}
    with running_simulator(*flags, base_flags=()) as sim, httpx.Client(timeout=30) as client:
        first = _scrape(sim.base_url)
        assert client.post(f"{sim.base_url}/v1/completions", json=body).status_code == 200
        one = _scrape(sim.base_url)
        created = _total(one, "vllm:spec_decode_num_drafts_created")
        for _ in range(2):
            assert client.post(f"{sim.base_url}/v1/completions", json=body).status_code == 200
        three = _scrape(sim.base_url)
    # restarted as the 2nd request finished: the 3rd request's counts only, a new birth
    assert _total(three, names.output_tokens) == 24.0
    assert _total(three, "vllm:spec_decode_num_drafts_created") > created
    assert _total(three, names.drafts) > 0
    assert counter_deltas(first, one, names).trusted
    # the counts may have grown back past where they were (one request's each side): the
    # creation times say the registry restarted
    moved = counter_deltas(one, three, names)
    assert moved.unknown.startswith("counter reset ("), moved
    assert "was created again" in moved.unknown or "went from" in moved.unknown


def test_restarted_text_subtracts_counts_and_keeps_gauges() -> None:
    text = (
        '# TYPE a_total counter\na_total{x="1"} 10.0\n# TYPE a_created gauge\n'
        'a_created{x="1"} 5.0\n# TYPE g gauge\ng 7.0\n# TYPE h histogram\n'
        'h_bucket{le="1.0"} 4.0\nh_sum 2.5\nh_count 4.0\n'
    )
    baseline = {'a_total{x="1"}': 6.0, 'h_bucket{le="1.0"}': 1.0, "h_sum": 0.5, "h_count": 1.0}
    out = read_prometheus(restarted_text(text, baseline, 99.0)).samples
    assert out["a_total"] == {(("x", "1"),): 4.0}
    assert out["a_created"] == {(("x", "1"),): 99.0}
    assert out["g"] == {(): 7.0}
    assert out["h_count"] == {(): 3.0} and out["h_sum"] == {(): 2.0}


@pytest.mark.parametrize("face", ["sglang", "vllm"])
def test_a_proxy_answers_html_where_the_release_is_read(face: str) -> None:
    route = "/server_info" if face == "sglang" else "/version"
    flags = ("--sim-proxy-html", f"{route},/get_server_info")
    base = () if face == "sglang" else vllm_flags(2)
    with running_simulator(*base, *flags) as sim:
        answer = httpx.get(f"{sim.base_url}{route}", timeout=10)
        health = httpx.get(f"{sim.base_url}/health", timeout=10)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    assert answer.text.startswith("<!DOCTYPE html>")
    assert health.status_code == 200  # the rest is the server's own


@pytest.mark.parametrize("face", [(), ("vllm", "serve", "m")])
def test_a_help_hard_wrapped_at_n_columns(face: tuple[str, ...]) -> None:
    argv = [sys.executable, "-m", "specconsole.sim", *face, "--sim-help-wrap", "40", "--help"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    widths = [len(line) for line in done.stdout.splitlines()]
    assert max(widths) == 40 and widths.count(40) >= 10
    assert "--speculative-num-s" in done.stdout or "--speculative-con" in done.stdout
    assert fold("abcdef\n\nxy", 4) == "abcd\nef\n\nxy"


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GpuBox:
    """The simulated box's GPUs, its nvidia-smi reading this test's own state folder."""
    gpus = make_gpu_box(tmp_path)
    monkeypatch.setenv(nvidia_smi.STATE_ENV, str(gpus.state_dir))
    return gpus


def _past(at: float) -> None:
    """Wait until the wall clock is past ``at`` (bounded: a fault declared for now)."""
    while time.time() < at and at - time.time() < 60:
        time.sleep(0.05)


def _smi(box: GpuBox, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(box.nvidia_smi), *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize(("word", "said"), [("na", "[N/A]"), ("not-supported", "[Not Supported]")])
def test_power_the_driver_cannot_read(word: str, said: str, box: GpuBox) -> None:
    flags = ("--sim-smi-power", word, "--sim-smi-gpus", "1")
    with running_simulator(*flags):
        lines = _smi(box, QUERY, "--format=csv,noheader,nounits").stdout.splitlines()
        units = _smi(box, "--query-gpu=index,power.draw", "--format=csv,noheader").stdout
        table = _smi(box).stdout
    samples = [parse_sample(line) for line in lines]
    assert all(s is not None for s in samples) and len(samples) == 4
    assert samples[1].power_w is None and samples[1].said("power.draw") == said  # type: ignore[union-attr]
    assert all(s.power_w for i, s in enumerate(samples) if i != 1)  # type: ignore[union-attr]
    assert f"1, {said}" in units.splitlines()
    assert "N/A" in table
    # once the simulator is gone, so is its fault
    assert "[N/A]" not in _smi(box, QUERY, "--format=csv,noheader,nounits").stdout


def _declared(box: GpuBox, sim: SimProcess, key: str) -> float:
    """When the live simulator's state file says its fault starts (wall clock)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = json.loads((box.state_dir / f"{sim.pid}.json").read_text())
        if key in state.get("faults", {}):
            return float(state["faults"][key])
        time.sleep(0.05)
    raise AssertionError(f"{key} never declared")


def _stamp(sample: GpuSample) -> float:
    whole, _, millis = sample.stamp.partition(".")
    return time.mktime(time.strptime(whole, "%Y/%m/%d %H:%M:%S")) + int(millis or 0) / 1000


def test_a_hung_driver_from_a_moment_after_ready(box: GpuBox) -> None:
    with running_simulator("--sim-smi-stall-after", "2.0") as sim:
        stall_at = _declared(box, sim, "stall_at")
        loop = subprocess.Popen(
            [str(box.nvidia_smi), QUERY, "--format=csv,noheader,nounits", "-lms", "100"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            _past(stall_at + 1.0)
            with pytest.raises(subprocess.TimeoutExpired):  # a new run hangs too
                _smi(box, QUERY, "--format=csv,noheader,nounits", timeout=1.0)
            assert loop.poll() is None  # alive, printing nothing
        finally:
            loop.kill()
        printed = [parse_sample(line) for line in loop.communicate(timeout=10)[0].splitlines()]
    assert printed and all(s is not None for s in printed)
    assert max(_stamp(s) for s in printed if s) < stall_at + 0.05  # nothing after the stall
    # the hang ends with the simulator that declared it
    assert _smi(box, QUERY, "--format=csv,noheader,nounits").returncode == 0


def test_a_gpu_lost_from_a_moment_after_ready(box: GpuBox) -> None:
    with running_simulator("--sim-smi-exit-after", "0.5") as sim:
        exit_at = _declared(box, sim, "exit_at")
        _past(exit_at + 0.1)
        lost = _smi(box, QUERY, "--format=csv,noheader,nounits", "-lms", "100")
    assert lost.returncode == nvidia_smi.GPU_LOST_EXIT
    assert lost.stdout == (
        "Unable to determine the device handle for GPU00000000:18:00.0: GPU is lost.  "
        "Reboot the system to recover this GPU\n"
    )
    assert _smi(box, QUERY, "--format=csv,noheader,nounits").returncode == 0
