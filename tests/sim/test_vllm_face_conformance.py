"""The simulator's vLLM face held to a real vLLM: its start-up, statistics and fatal lines and
its ``/metrics`` families, shape for shape, against the real 0.32.0 server's recorded logs and
``/metrics`` (tests/data/vllm/, from the vLLM test bed: ``vllm serve`` on the CPU).

Why: the face is what the demo, the console's tests and most end-to-end tests run against;
it must print what a real vLLM prints, or the product is tested against a server that does not
exist. The face plays 0.34.0 on a GPU box, the real server is 0.32.0 on a CPU, so a line's
*shape* is compared — numbers, quoted strings and URLs stand for themselves as ``N``, ``'S'``
and ``URL``, and ``GPU``/``CPU`` are the device — and only the lines both releases print.
"""

from __future__ import annotations

import json
import re
import time

import httpx
import pytest

from specconsole.core.measure.acceptance import parse_prometheus
from tests.fixtures.sim import VLLM_MODEL, running_simulator, start_simulator, vllm_flags
from tests.realengine.vllm_recipes import recorded

HEADER = re.compile(
    r"^(?:\(\w+(?:-\d+)? pid=\d+\) )?(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d "
    r"\[[\w.]+:\d+\] "
)

KINDS: dict[str, str] = {
    "engine": "Initializing a V1 LLM engine",
    "kv": "KV cache size:",
    "init": "init engine (profile, create kv cache, warmup model) took",
    "tasks": "Supported tasks:",
    "serving": "Starting vLLM server on",
    "stats": "Engine 000: Avg prompt throughput",
    "spec": "SpecDecoding metrics:",
    "ready": "Application startup complete.",
    "failed": "EngineCore failed to start.",
    "front": "RuntimeError: Engine core initialization failed.",
}
"""The lines compared, by a text each holds (start-up, serving, the death's first and last)."""


def message(line: str) -> str:
    """A line without vLLM's process prefix and record header."""
    return HEADER.sub("", line.rstrip("\n"))


def shape(text: str) -> str:
    """What a line says, without the values only one server would print."""
    text = re.sub(r"https?://\S+", "URL", text)
    text = re.sub(r"'[^']*'", "'S'", text)
    text = re.sub(r"\d[\d,]*(?:\.\d+)?", "N", text)
    return text.replace("GPU", "DEV").replace("CPU", "DEV")


def first(lines: list[str], text: str) -> str:
    found = [message(line) for line in lines if text in line]
    assert found, f"no line holds {text!r}"
    return found[0]


def engine_spec(line: str) -> str:
    """The speculative part of the engine's start-up record (the rest is abridged by the face)."""
    found = re.search(r"speculative_config=(SpeculativeConfig\([^)]*\)|None)", line)
    assert found, line
    return found[1]


@pytest.fixture(scope="module")
def face_lines() -> list[str]:
    """The face's log serving n-gram speculation (K = 4), after two requests and its
    statistics interval."""
    spec = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}
    flags = ("vllm", "serve", VLLM_MODEL, "--speculative-config", json.dumps(spec))
    env = {"VLLM_LOG_STATS_INTERVAL": "0.5"}
    with running_simulator(*flags, base_flags=(), env=env) as sim:
        body = {"model": VLLM_MODEL, "prompt": "one two three one two three", "max_tokens": 16}
        for _ in range(2):
            httpx.post(sim.base_url + "/v1/completions", json=body, timeout=30).raise_for_status()
        sim.wait_for_line("Engine 000:", timeout=10)
        time.sleep(1.0)
        return list(sim.lines)


@pytest.fixture(scope="module")
def face_eagle_lines() -> list[str]:
    """The face's log drafting with an EAGLE-3 head (its speculation is modelled)."""
    env = {"VLLM_LOG_STATS_INTERVAL": "0.5"}
    with running_simulator(*vllm_flags(4), base_flags=(), env=env) as sim:
        body = {"model": VLLM_MODEL, "prompt": "Write a note to a friend.", "max_tokens": 32}
        httpx.post(sim.base_url + "/v1/completions", json=body, timeout=30).raise_for_status()
        sim.wait_for_line("SpecDecoding metrics", timeout=10)
        return list(sim.lines)


REAL_START = recorded("ngram4").read_text().splitlines()


@pytest.mark.parametrize("kind", ["kv", "init", "tasks", "serving", "stats", "ready"])
def test_the_start_up_and_statistics_lines_are_a_real_vllms(kind: str, face_lines) -> None:
    assert shape(first(face_lines, KINDS[kind])) == shape(first(REAL_START, KINDS[kind]))


def test_the_engine_record_names_the_speculation_as_a_real_vllm(face_lines) -> None:
    """n-gram speculation is in the engine's record (``model=None``: no draft), and the
    arguments echo the method as it was given."""
    real = first(REAL_START, KINDS["engine"])
    ours = first(face_lines, KINDS["engine"])
    assert (
        engine_spec(ours)
        == engine_spec(real)
        == ("SpeculativeConfig(method='ngram', model=None, num_spec_tokens=4)")
    )
    assert "'method': 'ngram'" in first(face_lines, "non-default args:")
    assert "'method': 'ngram'" in first(REAL_START, "non-default args:")


def test_the_acceptance_line_is_a_real_vllms(face_eagle_lines) -> None:
    assert shape(first(face_eagle_lines, KINDS["spec"])) == shape(first(REAL_START, KINDS["spec"]))


def test_a_death_in_load_begins_and_ends_as_a_real_vllms() -> None:
    """The KV cache that cannot hold one request: the face's GPU box and the real CPU one
    say it with the same words, between the same first and last lines."""
    sim = start_simulator(
        *vllm_flags(3), "--gpu-memory-utilization", "0.35", base_flags=(), wait_ready=False
    )
    assert sim.wait_exit(20) == 1
    real = recorded("crash-long-context").read_text().splitlines()
    for kind in ("failed", "front"):
        assert shape(first(sim.lines, KINDS[kind])) == shape(first(real, KINDS[kind])), kind
    said = "To serve at least one request with the model's max seq len"
    ours, theirs = first(sim.lines, said), first(real, said)
    cut = "estimated maximum model length is"
    assert shape(ours.split(cut)[0]) == shape(theirs.split(cut)[0])


def test_its_metrics_are_a_real_vllms_families() -> None:
    """Every family the face exports exists on the real server with its type, help and label
    names; every counter has its ``_created`` series, as prometheus_client exposes them."""
    real_text = (recorded("ngram4").parent / "metrics-after.txt").read_text()
    with running_simulator(*vllm_flags(4), base_flags=()) as sim:
        body = {"model": VLLM_MODEL, "prompt": "Write a note.", "max_tokens": 8}
        httpx.post(sim.base_url + "/v1/completions", json=body, timeout=30).raise_for_status()
        face_text = httpx.get(sim.base_url + "/metrics", timeout=5).text
    real, face = parse_prometheus(real_text), parse_prometheus(face_text)

    def declared(text: str) -> dict[str, tuple[str, str]]:
        help_ = dict(re.findall(r"^# HELP (\S+) (.*)$", text, re.M))
        return {name: (kind, help_.get(name, "")) for name, kind in re.findall(
            r"^# TYPE (\S+) (\S+)$", text, re.M)}  # fmt: skip

    real_families, face_families = declared(real_text), declared(face_text)
    for name, kind_help in face_families.items():
        assert real_families.get(name) == kind_help, name
    for series, samples in face.items():
        if series.endswith(("_bucket", "_sum", "_count")):
            continue
        assert series in real, series
        labels = {tuple(sorted(k for k, _v in key)) for key in samples}
        assert labels == {tuple(sorted(k for k, _v in key)) for key in real[series]}, series
        if series.endswith("_total"):
            assert series.removesuffix("_total") + "_created" in face, series

    def reasons(samples: dict) -> set[str]:
        return {dict(key)["finished_reason"] for key in samples}

    success = "vllm:request_success_total"
    assert reasons(real[success]) == reasons(face[success])
