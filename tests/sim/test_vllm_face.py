"""The simulator's vLLM face as a real process: ``vllm serve MODEL`` on the box, its V1 log
read back with the console's own parser, its routes, its ``/metrics`` counters, its deaths —
for both releases it plays (0.34.0 by default, 0.11.0)."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from specconsole.core.config.model import ServerConfig
from specconsole.core.logs.events import Capacity, FatalCause, KVCacheAllocated, Ready, SpecStats
from specconsole.core.logs.parser import parse_lines
from specconsole.core.measure.acceptance import SpecCounters, counter_deltas, parse_prometheus
from specconsole.sim.forecast import predict
from tests.fixtures.sim import (
    VLLM_DRAFT,
    VLLM_MODEL,
    running_simulator,
    start_simulator,
    vllm_flags,
)

COUNTERS = SpecCounters(
    drafts="vllm:spec_decode_num_drafts_total",
    draft_tokens="vllm:spec_decode_num_draft_tokens_total",
    accepted="vllm:spec_decode_num_accepted_tokens_total",
    per_position="vllm:spec_decode_num_accepted_tokens_per_pos_total",
    output_tokens="vllm:generation_tokens_total",
)
PROMPT = (
    "Please write a friendly note to my neighbour about the garden party next week: mention "
    "the time, ask them to bring a dish, and say that children are welcome too."
)
"""A chat request (the profile's calibrated acceptance: sim/physics/textkind)."""


def _chat(base: str, max_tokens: int, stream: bool = False) -> httpx.Response:
    body = {
        "model": VLLM_MODEL,
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens,
        "stream": stream,
    }
    return httpx.post(base + "/v1/chat/completions", json=body, timeout=30)


def _metrics(base: str) -> dict:
    return parse_prometheus(httpx.get(base + "/metrics", timeout=5).text)


def test_its_start_up_log_routes_and_release() -> None:
    with running_simulator(*vllm_flags(4), base_flags=()) as sim:
        events = parse_lines(sim.lines, engine="vllm")
        kv = [e for e in events if isinstance(e, KVCacheAllocated)]
        cap = [e for e in events if isinstance(e, Capacity)]
        assert kv and kv[0].num_tokens and kv[0].num_tokens > 100_000
        assert cap and cap[0].max_total_num_tokens == kv[0].num_tokens
        assert cap[0].context_len == 131072
        assert any(isinstance(e, Ready) for e in events)
        assert any(
            "KV cache size: " in line and "," in line.split("size: ")[1] for line in sim.lines
        )
        assert httpx.get(sim.base_url + "/health").status_code == 200
        assert httpx.get(sim.base_url + "/version").json() == {"version": "0.34.0"}
        models = httpx.get(sim.base_url + "/v1/models").json()
        assert models["data"][0]["id"] == VLLM_MODEL and models["data"][0]["owned_by"] == "vllm"
        assert httpx.get(sim.base_url + "/server_info").status_code == 404  # vLLM has none


def test_the_port_refuses_connections_until_the_engine_is_up() -> None:
    sim = start_simulator(
        *vllm_flags(2), "--sim-load-seconds", "3", base_flags=(), wait_ready=False
    )
    try:
        sim.wait_for_line("Initializing a V1 LLM engine", timeout=20)
        port = (
            int(next(a for a in reversed(sim.argv) if a.isdigit()))
            if sim.port is None
            else sim.port
        )
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
        sim.wait_ready(30)
        assert httpx.get(sim.base_url + "/health").status_code == 200
    finally:
        sim.stop()


def test_counters_are_the_drafts_and_the_statistics_line_their_interval() -> None:
    env = {"VLLM_LOG_STATS_INTERVAL": "0.5"}
    with running_simulator(*vllm_flags(4), base_flags=(), env=env) as sim:
        before = _metrics(sim.base_url)
        for _ in range(6):
            assert _chat(sim.base_url, 64).status_code == 200
        after = _metrics(sim.base_url)
        got = counter_deltas(before, after, COUNTERS)
        assert got.draft_tokens == 4 * got.drafts  # a chain of K = 4 every draft
        assert sum(got.per_position) == got.accepted and len(got.per_position) == 4
        assert list(got.per_position) == sorted(got.per_position, reverse=True)
        assert got.output_tokens == 6 * 64
        config = ServerConfig(
            model_path=VLLM_MODEL,
            engine="vllm",
            method="eagle3",
            speculative_model=VLLM_DRAFT,
            num_speculative_tokens=4,
            launcher="vllm serve",
        )
        expected = predict(config, 1, input_len=36, output_len=64).accept_length
        assert got.acceptance_length == pytest.approx(expected, rel=0.08)
        sim.wait_for_line("SpecDecoding metrics", timeout=10)
        spec = [e for e in parse_lines(sim.lines, engine="vllm") if isinstance(e, SpecStats)]
        assert spec and spec[0].accept_len and spec[0].per_position
        assert spec[0].accept_len == pytest.approx(
            1 + spec[0].accepted_tokens / (spec[0].drafted_tokens / 4), abs=0.01
        )


def test_a_k_per_batch_size_drafts_what_the_batch_gets() -> None:
    schedule = {"num_speculative_tokens_per_batch_size": [[1, 1, 4], [2, 1024, 1]]}
    with running_simulator(*vllm_flags(4, **schedule), base_flags=()) as sim:
        before = _metrics(sim.base_url)
        assert _chat(sim.base_url, 48).status_code == 200
        one = counter_deltas(before, _metrics(sim.base_url), COUNTERS)
        assert one.draft_tokens == 4 * one.drafts
        before = _metrics(sim.base_url)
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            assert all(
                r.status_code == 200 for r in pool.map(lambda _: _chat(sim.base_url, 48), range(4))
            )
        four = counter_deltas(before, _metrics(sim.base_url), COUNTERS)
        assert four.draft_tokens < 2 * four.drafts  # mostly K = 1 with four running


def test_release_0_11_prints_its_own_lines_and_ignores_the_schedule() -> None:
    schedule = {"num_speculative_tokens_per_batch_size": [[1, 1024, 1]]}
    flags = (*vllm_flags(3, **schedule), "--sim-engine-version", "0.11.0")
    with running_simulator(*flags, base_flags=()) as sim:
        text = sim.log_text()
        assert "\x1b[1;36m(APIServer pid=" in text  # decorate_logs colours its prefix
        assert "Starting to load model " + VLLM_MODEL in text
        assert "vLLM API server version 0.11.0" in text
        assert any(line.endswith(" tokens") and "GPU KV cache size: " in line for line in sim.lines)
        assert httpx.get(sim.base_url + "/version").json() == {"version": "0.11.0"}
        before = _metrics(sim.base_url)
        assert _chat(sim.base_url, 32).status_code == 200
        got = counter_deltas(before, _metrics(sim.base_url), COUNTERS)
        assert got.draft_tokens == 3 * got.drafts  # 0.11 ignored the per-batch-size key


def test_release_0_34_refuses_a_key_its_speculative_config_does_not_know() -> None:
    sim = start_simulator(*vllm_flags(3, prompt_lookup_maxx=4), base_flags=(), wait_ready=False)
    assert sim.wait_exit(20) == 1
    assert "Unexpected keyword argument" in sim.log_text()
    fatal = [e for e in parse_lines(sim.lines, engine="vllm") if e.kind == "fatal"]
    assert [e.cause for e in fatal] == ["speculative_config"]  # vLLM's own cause


@pytest.mark.parametrize(
    ("flags", "cause", "text"),
    [
        (
            ("--gpu-memory-utilization", "0.35"),
            FatalCause.KV_CACHE_NO_MEMORY,
            "max seq len (131072)",
        ),
        (
            ("--gpu-memory-utilization", "0.2"),
            FatalCause.KV_CACHE_NO_MEMORY,
            "No available memory for the cache blocks",
        ),
        (
            ("--gpu-memory-utilization", "0.997", "--sim-engine-version", "0.11.0"),
            FatalCause.CUDA_OOM,
            "on startup is less than desired GPU memory utilization",
        ),
    ],
    ids=["max-model-len", "no-cache-blocks", "startup-oom-0.11"],
)
def test_load_failures_die_as_vllm_dies(flags: tuple[str, ...], cause: str, text: str) -> None:
    sim = start_simulator(*vllm_flags(3), *flags, base_flags=(), wait_ready=False)
    assert sim.wait_exit(20) == 1
    log = sim.log_text()
    assert text in log and "EngineCore failed to start." in log
    assert "Engine core initialization failed. See root cause above. Failed core proc(s): {}" in log
    fatal = [e for e in parse_lines(sim.lines, engine="vllm") if e.kind == "fatal"]
    assert [e.cause for e in fatal] == [cause]  # one death, one event


def test_a_crash_while_serving_is_an_illegal_memory_access_and_exit_1() -> None:
    with running_simulator(*vllm_flags(3), "--sim-crash-after-requests", "1", base_flags=()) as sim:
        assert _chat(sim.base_url, 16).status_code == 200
        with pytest.raises(httpx.HTTPError):
            _chat(sim.base_url, 64, stream=False).raise_for_status()
        assert sim.wait_exit(20) == 1
    fatal = [e for e in parse_lines(sim.lines, engine="vllm") if e.kind == "fatal"]
    assert [e.cause for e in fatal] == [FatalCause.ILLEGAL_MEMORY_ACCESS]
    assert any("EngineDeadError" in line for line in sim.lines)


def test_stream_usage_and_the_too_long_refusal() -> None:
    with running_simulator(*vllm_flags(2), "--max-model-len", "4096", base_flags=()) as sim:
        chunks = []
        body = {
            "model": VLLM_MODEL,
            "prompt": "one two three four",
            "max_tokens": 20,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        with httpx.stream("POST", sim.base_url + "/v1/completions", json=body, timeout=30) as r:
            for line in r.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    chunks.append(json.loads(line[6:]))
        assert chunks[-1]["usage"] == {
            "prompt_tokens": 4,
            "total_tokens": 24,
            "completion_tokens": 20,
        }
        assert chunks[-2]["choices"][0]["finish_reason"] == "length"
        assert "stop_reason" in chunks[-2]["choices"][0]
        text = "".join(c["choices"][0]["text"] for c in chunks if c["choices"])
        assert len(text.split()) == 20
        refused = httpx.post(
            sim.base_url + "/v1/completions", json={**body, "stream": False, "max_tokens": 5000}
        )
        assert (
            refused.status_code == 400
            and "maximum context length is 4096" in refused.json()["message"]
        )
        time.sleep(0)
