"""The self-contained remote runner: as a bare stdlib script, and over real transports."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from specconsole.bench.loadgen import plan_for
from specconsole.bench.remote_runner import RemoteBenchmarkRunner, build_script
from specconsole.bench.runner import ForwardedBenchmarkRunner
from specconsole.core.ports import BenchApi, BenchProgress, BenchSpec, Transport
from specconsole.remote.transport.local import LocalTransport
from specconsole.remote.transport.ssh import SshTransport
from tests.bench.servers import mini_server
from tests.fixtures.sshd import SshdServer
from tests.remote.helpers import ssh_profile


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with mini_server("--step-s", "0.01", "--chunks", "1,3,2") as base:
        yield base


def run_on_bare_python(script: str) -> list[dict]:
    """Run a runner script as `python3 -I -S -` (no site-packages: no httpx, no
    specconsole; the script on stdin); it must succeed. Returns its JSON lines."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-"],
        input=script,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_script_runs_on_a_bare_python_from_stdin(url: str) -> None:
    """`python3 -I -S -`: no site-packages (no httpx, no specconsole), script on stdin."""
    spec = BenchSpec(ladder=(1, 3), requests_per_level=6, output_len=12, input_len=40)
    messages = run_on_bare_python(build_script(plan_for(spec), url))
    assert messages[0]["type"] == "hello" and messages[0]["pid"] > 0
    assert any(m["type"] == "progress" for m in messages)
    result = messages[-1]
    assert result["type"] == "result"
    levels = result["result"]["levels"]
    assert [level["max_concurrency"] for level in levels] == [1, 3]
    assert all(level["completed"] == 6 and level["total_output_tokens"] == 72 for level in levels)
    assert levels[0]["accept_length"] == pytest.approx(2.0)
    assert levels[1]["max_concurrent_requests"] >= 3


def test_bad_plan_reports_an_error_line(url: str) -> None:
    spec = BenchSpec(ladder=(1,), requests_per_level=1)
    script = build_script(plan_for(spec), url).replace('"ladder":[1]', '"ladder":[]')
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-"],
        input=script,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    last = json.loads(done.stdout.splitlines()[-1])
    assert done.returncode == 2 and last["type"] == "error" and "ladder" in last["message"]


async def test_remote_runner_over_a_transport(
    transport: Transport, url: str, tmp_path: Path
) -> None:
    events: list[BenchProgress] = []
    workdir = tmp_path / "box-tmp"  # its own folder: other tests' runners share /tmp
    workdir.mkdir()
    runner = RemoteBenchmarkRunner(transport, workdir=str(workdir))
    spec = BenchSpec(ladder=(2,), requests_per_level=6, output_len=12, api=BenchApi.CHAT)
    result = await runner.run(spec, url, on_progress=events.append)
    level = result.levels[0]
    assert level.completed == 6 and level.total_output_tokens == 72
    assert result.settings["backend"] == "sglang-oai-chat" and not result.partial
    assert events and events[-1].completed == 6 and events[-1].concurrency == 2
    assert list(workdir.iterdir()) == []  # the script it uploaded is gone


async def test_remote_runner_stop_keeps_partial_result(transport: Transport, url: str) -> None:
    runner = RemoteBenchmarkRunner(transport)

    def on_progress(p: BenchProgress) -> None:
        if not p.warmup and p.completed >= 2:
            runner.stop()

    spec = BenchSpec(ladder=(2, 4), requests_per_level=300, output_len=30)
    result = await asyncio.wait_for(runner.run(spec, url, on_progress=on_progress), 60)
    assert result.cancelled and result.partial
    assert len(result.levels) == 1 and 2 <= result.levels[0].completed < 300


@pytest.mark.ssh
async def test_threaded_runner_through_an_ssh_forward(sshd: SshdServer, url: str) -> None:
    ssh = SshTransport(ssh_profile(sshd))
    try:
        runner = ForwardedBenchmarkRunner(ssh)
        spec = BenchSpec(ladder=(2,), requests_per_level=4, output_len=12)
        result = await runner.run(spec, url)
        assert result.levels[0].completed == 4
        assert result.levels[0].accept_length == pytest.approx(2.0)
    finally:
        await ssh.close()


async def test_raw_client_maps_failures_like_httpx(url: str, tmp_path: Path) -> None:
    from specconsole.bench.ladder_run import LadderRun
    from specconsole.bench.wire.rawhttp import RawStreamClient

    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "fine"}\n{"prompt": "FAIL500"}\n{"prompt": "DROP it"}\n')
    spec = BenchSpec(
        ladder=(3,),
        requests_per_level=9,
        warmup_requests=0,
        output_len=12,
        prompts=str(prompts),
        flush_cache=False,
    )
    run = LadderRun(plan_for(spec), lambda c: RawStreamClient(url, c, timeout_s=30))
    level = (await run.run()).levels[0]
    assert level.completed == 3 and level.errors.get("http_500") == 3
    assert sum(level.errors.values()) == 6
    refused = LadderRun(
        plan_for(
            BenchSpec(ladder=(1,), requests_per_level=1, flush_cache=False, warmup_requests=0)
        ),
        lambda c: RawStreamClient("http://127.0.0.1:9", c),
    )
    result = await refused.run()
    assert result.levels[0].errors == {"connect": 1} and result.error is not None


def test_every_runner_implements_the_port() -> None:
    from specconsole.bench.runner import ThreadedBenchmarkRunner
    from specconsole.core.ports import BenchmarkRunner

    local = LocalTransport()
    for runner in (
        ThreadedBenchmarkRunner(),
        ForwardedBenchmarkRunner(local),
        RemoteBenchmarkRunner(local),
    ):
        assert isinstance(runner, BenchmarkRunner)


async def test_cancelling_a_remote_run_ends_the_remote_process(
    transport: Transport, url: str
) -> None:
    seen = asyncio.Event()
    runner = RemoteBenchmarkRunner(transport)
    spec = BenchSpec(ladder=(2,), requests_per_level=500, output_len=30)
    task = asyncio.ensure_future(runner.run(spec, url, on_progress=lambda p: seen.set()))
    await asyncio.wait_for(seen.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):  # bounded: 10 s
        alive = await transport.run("pgrep -f 'specconsole-bench-[0-9a-f]*[.]py' || true")
        if not alive.stdout.strip():
            break
        await asyncio.sleep(0.1)
    assert not alive.stdout.strip(), "the remote runner outlived its stream"


def test_make_runner_per_placement() -> None:
    from specconsole.bench.runner import Placement, ThreadedBenchmarkRunner, make_runner

    local = LocalTransport()
    assert isinstance(make_runner("direct"), ThreadedBenchmarkRunner)
    assert isinstance(make_runner(Placement.FORWARD, local), ForwardedBenchmarkRunner)
    assert isinstance(make_runner("remote", local), RemoteBenchmarkRunner)
    with pytest.raises(ValueError, match="needs the transport"):
        make_runner("remote")
    with pytest.raises(ValueError, match="placement: must be one of direct, forward, remote"):
        make_runner("moon")


@pytest.mark.parametrize("placement", ["direct", "forward", "remote"])
async def test_each_level_result_arrives_while_the_ladder_still_runs(
    placement: str, url: str
) -> None:
    """Every runner delivers a finished level's metrics at once, not only with the result:
    level 0's numbers come before any progress of level 1, and are the ladder's own."""
    from specconsole.bench.runner import make_runner

    runner = make_runner(placement, None if placement == "direct" else LocalTransport())
    seen: list[BenchProgress] = []
    spec = BenchSpec(ladder=(1, 2), requests_per_level=4, output_len=8)
    result = await asyncio.wait_for(runner.run(spec, url, on_progress=seen.append), 60)
    finished = [i for i, p in enumerate(seen) if p.level_result is not None]
    assert [seen[i].level_index for i in finished] == [0, 1]
    later = seen[finished[0] + 1 :]
    assert any(p.level_index == 1 and p.level_result is None for p in later), later
    assert not any(p.level_index == 0 for p in later)
    live = [seen[i].level_result for i in finished]
    assert [lv.to_record() for lv in live if lv is not None] == [
        lv.to_record() for lv in result.levels
    ]
    assert live[0] is not None and live[0].max_concurrency == 1 and live[0].completed == 4


def test_the_bundled_metrics_reader_runs_on_a_bare_python() -> None:
    """``prometheus_client``'s parser travels in the script: a box without it reads
    ``/metrics`` as strictly as the console (issue 44)."""
    spec = BenchSpec(ladder=(1,), requests_per_level=1)
    script = build_script(plan_for(spec), "http://127.0.0.1:9").rsplit("sys.exit(", 1)[0]
    script += (
        "from specconsole.core.measure.prometheus import read_prometheus\n"
        "import json\n"
        "good = read_prometheus('# TYPE a_total counter\\na_total{engine=\"0\"} 3\\n')\n"
        "bad = read_prometheus('<html>502</html>')\n"
        "print(json.dumps({'type': 'x', 'good': good.samples['a_total'][(('engine', '0'),)],"
        " 'bad': bad.problem, 'isolated': 'prometheus_client.exposition' not in sys.modules}))\n"
    )
    (message,) = run_on_bare_python(script)
    assert message["good"] == 3.0 and message["isolated"]
    assert message["bad"].startswith("not Prometheus text")
