"""Benchmarking an authenticated, customised server: the simulator with ``--api-key``
rejects a client without the key, accepts it with one, and the key appears nowhere the
benchmark writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specconsole.bench.api import build_request
from specconsole.bench.loadgen import plan_for
from specconsole.bench.remote_runner import RemoteBenchmarkRunner
from specconsole.bench.runner import ThreadedBenchmarkRunner
from specconsole.bench.wire.auth import parse_header, request_headers
from specconsole.core.plans.parse import parse_plan
from specconsole.core.plans.plan import PlanError
from specconsole.core.ports import BenchSpec
from specconsole.remote.transport.local import LocalTransport
from tests.bench.servers import ROOT
from tests.fixtures.sim import running_simulator

KEY = "sk-test-5ec4e7-do-not-leak"


def test_headers_resolve_env_and_the_key_never_reaches_records_or_repr() -> None:
    spec = BenchSpec(api_key="env:BENCH_KEY", headers=(("X-Team", "tuning"),))
    assert request_headers(spec, {"BENCH_KEY": KEY}) == (
        ("X-Team", "tuning"),
        ("Authorization", f"Bearer {KEY}"),
    )
    with pytest.raises(ValueError, match="BENCH_KEY is not set"):
        request_headers(spec, {})
    assert KEY not in repr(BenchSpec(api_key=KEY))
    assert parse_header("X-A: b c") == ("X-A", "b c")
    with pytest.raises(ValueError, match="--header"):
        parse_header("no colon")
    _, body = build_request(
        "generate",
        text="t",
        messages=None,
        output_len=2,
        temperature=0.0,
        model=None,
        extra_body={"sampling_params": {"max_new_tokens": 2, "top_k": 1}, "rid": "r1"},
    )
    assert json.loads(body)["rid"] == "r1" and json.loads(body)["sampling_params"]["top_k"] == 1


def test_a_plan_names_the_variable_never_the_key() -> None:
    with pytest.raises(PlanError, match='api_key = "env:SERVER_API_KEY"'):
        parse_plan({"server": {"model_path": "m"}, "bench": {"api_key": KEY}})
    plan = parse_plan(
        {
            "server": {"model_path": "m"},
            "bench": {"api_key": "env:K", "headers": {"X-T": "1"}, "extra_body": {"top_k": 1}},
        }
    )
    assert plan.bench.api_key == "env:K" and plan.bench.headers == (("X-T", "1"),)


@pytest.mark.slow
async def test_a_server_that_requires_the_key_rejects_requests_without_it(tmp_path: Path) -> None:
    base = BenchSpec(
        ladder=(2,),
        requests_per_level=2,
        warmup_requests=0,
        output_len=8,
        input_len=16,
        prompts="random",
    )
    with_key = BenchSpec(
        ladder=(2,),
        requests_per_level=2,
        warmup_requests=0,
        output_len=8,
        input_len=16,
        prompts="random",
        api_key="env:SPECCONSOLE_TEST_KEY",
        headers=(("X-Team", "tuning"),),
        extra_body={"rid": None},
    )
    os.environ["SPECCONSOLE_TEST_KEY"] = KEY
    try:
        with running_simulator("--api-key", KEY) as sim:
            denied = await ThreadedBenchmarkRunner().run(base, sim.base_url)
            allowed = await ThreadedBenchmarkRunner().run(with_key, sim.base_url)
            remote = await RemoteBenchmarkRunner(LocalTransport()).run(with_key, sim.base_url)
            out = tmp_path / "records.jsonl"
            cli = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "specconsole",
                    "bench",
                    sim.base_url,
                    "--ladder",
                    "1",
                    "--requests",
                    "2",
                    "--output-len",
                    "4",
                    "--api-key",
                    "env:SPECCONSOLE_TEST_KEY",
                    "--json",
                    "--output-file",
                    str(out),
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
                env={**os.environ},
            )
            sim_log = "\n".join(sim.lines)
            plan_repr = repr(plan_for(with_key))
    finally:
        del os.environ["SPECCONSOLE_TEST_KEY"]
    assert denied.levels[0].errors == {"http_401": 2} and denied.error is not None
    assert allowed.levels[0].completed == 2 and allowed.levels[0].failed == 0
    assert remote.levels[0].completed == 2
    assert allowed.settings["header_names"] == ["X-Team", "Authorization"]
    assert cli.returncode == 0, cli.stderr
    for text in (
        json.dumps(allowed.to_dict()),
        json.dumps(remote.to_dict()),
        cli.stdout,
        cli.stderr,
        out.read_text(),
        sim_log,
        plan_repr,
    ):
        assert KEY not in text
