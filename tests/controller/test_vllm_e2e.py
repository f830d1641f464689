"""A vLLM sweep end to end over the real test sshd: the simulator's vLLM face deployed by the
plain-process backend, its V1 log followed with ``tail -F`` over SSH, the benchmark through an
SSH port forward on vLLM's chat API, acceptance per level from vLLM's own ``/metrics``
counters.

The plan is the vLLM seed story in small: ``num_speculative_tokens`` 1, 2, 3 at
``--gpu-memory-utilization`` 0.9 (all load), then 0.35, where the KV cache cannot hold one
request of the model's 131,072-token context and vLLM refuses to start. ``finally = "best"``
leaves the best trial serving.
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
import urllib.request
from pathlib import Path

import pytest

from specconsole.core.machine.state import Phase, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.core.plans.verdict import assess
from specconsole.headless.sweep import run_headless
from specconsole.session.reports.report import render
from specconsole.session.store import Session
from tests.controller.test_e2e import run_dir  # noqa: F401  (the fixture: stops the server)
from tests.fixtures.plans import VLLM_LAUNCHER, VLLM_SERVER, sim_plan_text, ssh_host
from tests.fixtures.sshd import SshdServer, free_port

pytestmark = [pytest.mark.ssh, pytest.mark.slow]

OUTPUT_LEN = 48


def vllm_plan_text(sshd: SshdServer, folder: Path, port: int) -> str:
    host = ssh_host(sshd)
    sweep = """[sweep]
strategy = "boundary"
axis = "num_speculative_tokens"
on_crash = "auto"
load_timeout = 60
max_trials = 8
finally = "best"

[sweep.axes]
num_speculative_tokens = [1, 2, 3]
gpu_memory_utilization = [0.9, 0.35]
"""
    bench = f"""[bench]
ladder = [1, 4]
input_len = 64
output_len = {OUTPUT_LEN}
requests_per_level = 8
warmup_requests = 0
api = "chat"
"""
    return sim_plan_text(
        folder,
        host=host,
        port=port,
        extra_args=["--sim-load-seconds", "0.5"],
        sweep=sweep,
        bench=bench,
        name="vllm e2e",
        server=VLLM_SERVER,
        launcher=VLLM_LAUNCHER,
    )


def _get(port: int, path: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
        return resp.read().decode()


async def test_vllm_sweep_headless(
    sshd: SshdServer,
    tmp_path: Path,
    run_dir: Path,  # noqa: F811  (the fixture)
) -> None:
    port = free_port()
    text = vllm_plan_text(sshd, run_dir, port)
    plan = resolve_placeholders(loads_plan(text), {"python": sys.executable})
    from dataclasses import replace

    plan = replace(plan, source=text)
    session = Session.create(tmp_path / "sessions", plan)
    out = io.StringIO()
    code = await asyncio.wait_for(run_headless(plan, session, out=out), 280)
    said = out.getvalue()
    assert code == 0, said

    trials = session.load_trials()
    shape = [(t.config.num_speculative_tokens, t.config.gpu_memory_utilization) for t in trials]
    assert shape == [(1, 0.9), (2, 0.9), (3, 0.9), (1, 0.35)], shape
    loaded, crashed = trials[:3], trials[3]
    for t in loaded:
        k = t.config.num_speculative_tokens
        assert t.status is TrialStatus.OK, t
        assert t.capacity and t.capacity > 100_000  # vLLM's KV size line, separators and all
        assert [lv.concurrency for lv in t.levels] == [1, 4]
        for level in t.levels:
            c = level.counters
            assert c is not None and c.drafts > 0, (k, level)
            # the level's own counters: what the load generator counted, not since start
            assert c.output_tokens == level.completed * OUTPUT_LEN, (k, level)
            assert c.draft_tokens == k * c.drafts  # a chain of K every draft
            assert len(c.per_position) == k and sum(c.per_position) == c.accepted
            assert level.accept_length == pytest.approx(1 + c.accepted / c.drafts)
            assert level.accept_rate == pytest.approx(c.accepted / c.draft_tokens)
    lengths = [t.levels[0].accept_length or 0.0 for t in loaded]
    assert lengths[0] < lengths[1] < lengths[2], lengths

    assert crashed.status is TrialStatus.CRASHED
    assert crashed.crash is not None and crashed.crash.cause == "kv_cache_no_memory"
    assert crashed.crash.phase is Phase.LOADING
    excerpt = "\n".join(crashed.crash.excerpt)
    assert "larger than the available KV cache memory" in excerpt
    assert any("--gpu-memory-utilization" in f for f in crashed.crash.fixes)
    assert any("--max-model-len" in f for f in crashed.crash.fixes)
    assert not any("SGLang" in f or "mem-fraction-static" in f for f in crashed.crash.fixes)

    # finally = "best": the best trial serves, as its own /metrics and /version say
    best = assess(trials, plan.goal).best
    assert best is not None and best.status is TrialStatus.OK
    assert json.loads(_get(port, "/version")) == {"version": "0.34.0"}
    positions = _get(port, "/metrics").count("vllm:spec_decode_num_accepted_tokens_per_pos_total{")
    assert positions == best.config.num_speculative_tokens
    assert "finally = best" in said

    report = render(trials, plan, "md")
    assert "| 1 | spec-tokens=1 |" in report and "spec-tokens=1 gpu-mem=0.35" in report
    assert "gpu_memory_utilization=0.35: num_speculative_tokens: even 1 fails" in report
    assert "Acceptance per level (the engine's own counters)" in report
    doc = json.loads(render(trials, plan, "json"))
    assert doc["trials"][0]["levels"][0]["counters"]["drafts"] > 0
    meta = (session.path / "session.toml").read_text()
    assert 'engine_version = "0.34.0"' in meta
