"""How much CPU the load generator spends per streamed token, and how far one core takes it.

Why: a benchmark client that is itself the bottleneck reports its own limit, not the
server's. Against the *unthrottled* simulator (tokens as fast as it can produce them) at
c = 64, this prints for each placement the client's CPU seconds per 1,000 streamed tokens and
the maximum tokens/s it could sustain on one core (1,000 / that figure), next to the
throughput actually observed (bounded by the simulator sharing this machine):

* direct: the threaded httpx runner straight at the simulator's URL;
* SSH forward: the same runner through an asyncssh local port forward to a real sshd started
  for the purpose (tests/fixtures/sshd.py helpers) — the console process pays for the tunnel;
* on the box: the self-contained stdlib runner script (the remote-runner placement), run as a
  child process.

Each client runs in its own process pinned to one core, so its CPU time is its own. Target:
<= 0.05 CPU-s per 1,000 tokens direct.

Run: ``.venv/bin/python benchmarks/loadgen_overhead.py`` (about a minute).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CONCURRENCY = 64
REQUESTS = 256
OUTPUT_LEN = 256
INPUT_LEN = 64
TARGET_CPU_PER_1K = 0.05


def _spec() -> Any:
    from specconsole.core.ports import BenchSpec

    return BenchSpec(
        ladder=(CONCURRENCY,),
        requests_per_level=REQUESTS,
        output_len=OUTPUT_LEN,
        input_len=INPUT_LEN,
        prompts="random",
    )


def _streamed_tokens(result: Any) -> int:
    """Every token the client received, warm-up included (it costs the same CPU)."""
    return sum(
        level.total_output_tokens + level.warmup_requests * OUTPUT_LEN for level in result.levels
    )


def _pin_one_core() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[-1]})


async def _worker(mode: str, url: str, sshd: dict[str, Any] | None) -> dict[str, Any]:
    from specconsole.bench.runner import ForwardedBenchmarkRunner, ThreadedBenchmarkRunner

    spec = _spec()
    transport = None
    if mode == "ssh":
        assert sshd is not None
        from specconsole.core.profile import HostProfile, TransportKind
        from specconsole.remote.ssh import SshTransport

        transport = SshTransport(
            HostProfile(
                transport=TransportKind.SSH,
                hostname="127.0.0.1",
                port=sshd["port"],
                user=sshd["user"],
                identity_files=(sshd["key"],),
                known_hosts=sshd["known_hosts"],
                ssh_config="",
                use_agent=False,
                connect_timeout=10.0,
            )
        )
        await transport.run("true")  # connect before the clock starts
        runner: Any = ForwardedBenchmarkRunner(transport)
    else:
        runner = ThreadedBenchmarkRunner()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = await runner.run(spec, url)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    if transport is not None:
        await transport.close()
    level = result.levels[0]
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "tokens": _streamed_tokens(result),
        "output_throughput": level.output_throughput,
        "failed": level.failed,
    }


def _run_worker(mode: str, url: str, sshd: dict[str, Any] | None = None) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--worker", mode, url, json.dumps(sshd or {})]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def _run_remote_script(url: str) -> dict[str, Any]:
    """The stdlib runner script as the box would run it, pinned to one core."""
    from specconsole.bench.loadgen import plan_for
    from specconsole.bench.remote_runner import build_script
    from specconsole.core.metrics import BenchResult

    script = build_script(plan_for(_spec()), url)
    cpus = sorted(os.sched_getaffinity(0))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall0 = time.perf_counter()
    done = subprocess.run(
        ["taskset", "-c", str(cpus[-1]), sys.executable, "-I", "-S", "-"],
        input=script,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    wall = time.perf_counter() - wall0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = json.loads(done.stdout.splitlines()[-1])
    result = BenchResult.from_dict(last["result"])
    level = result.levels[0]
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "tokens": _streamed_tokens(result),
        "output_throughput": level.output_throughput,
        "failed": level.failed,
    }


def _report(name: str, figures: dict[str, Any]) -> float:
    per_1k = figures["cpu_s"] / figures["tokens"] * 1000
    print(
        f"{name:<34} {per_1k:8.4f} CPU-s/1k tok   max {1000 / per_1k:9.0f} tok/s/core   "
        f"observed {figures['output_throughput']:9.0f} tok/s   "
        f"({figures['tokens']} tokens, {figures['cpu_s']:.2f} CPU-s, "
        f"{figures['failed']} failed)"
    )
    return per_1k


NO_SPEC_FLAGS: tuple[str, ...] = (
    "--model-path",
    "Qwen/Qwen3.5-122B-A10B-FP8",
    "--tp-size",
    "4",
    "--mem-fraction-static",
    "0.88",
    "--cuda-graph-max-bs",
    "64",
    "--max-running-requests",
    "64",
)
"""The calibration launch without speculative decoding: one token per SSE chunk (worst case)."""


def _placements(url: str, sshd: dict[str, Any] | None) -> float:
    direct = _report("direct (httpx, threaded runner)", _run_worker("direct", url))
    if sshd is not None:
        _report("SSH forward (httpx via asyncssh)", _run_worker("ssh", url, sshd))
    _report("on the box (stdlib runner script)", _run_remote_script(url))
    return direct


def main() -> int:
    from tests.fixtures.sim import DEFAULT_FLAGS, running_simulator
    from tests.fixtures.sshd import SshdServer, SshdUnavailable

    print(
        f"load generator overhead: unthrottled simulator, c={CONCURRENCY}, {REQUESTS} "
        f"requests x {OUTPUT_LEN} output tokens (+{CONCURRENCY} warm-up), /generate, "
        "each client pinned to one core"
    )
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="specconsole-bench-sshd-") as tmp:
        server: SshdServer | None = None
        sshd: dict[str, Any] | None = None
        try:
            server = SshdServer.start(Path(tmp))
            sshd = {
                "port": server.port,
                "user": server.username,
                "key": str(server.client_key),
                "known_hosts": str(server.known_hosts),
            }
        except SshdUnavailable as exc:
            print(f"SSH forward: skipped ({exc})")
        try:
            for title, flags in (
                ("EAGLE-3 3/1/4 (about 3.6 tokens per SSE chunk)", DEFAULT_FLAGS),
                ("no speculation (1 token per SSE chunk: the worst case)", NO_SPEC_FLAGS),
            ):
                print(f"-- {title}")
                with running_simulator("--sim-unthrottled", base_flags=flags) as sim:
                    worst = max(worst, _placements(sim.base_url, sshd))
        finally:
            if server is not None:
                server.stop()
    verdict = "OK" if worst <= TARGET_CPU_PER_1K else "OVER TARGET"
    print(
        f"target: direct <= {TARGET_CPU_PER_1K} CPU-s per 1k tokens (worst case "
        f"{worst:.4f}): {verdict}"
    )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=3, metavar=("MODE", "URL", "SSHD_JSON"))
    ns = parser.parse_args()
    if ns.worker:
        mode, url, sshd_json = ns.worker
        _pin_one_core()
        figures = asyncio.run(_worker(mode, url, json.loads(sshd_json) or None))
        print(json.dumps(figures))
        raise SystemExit(0)
    raise SystemExit(main())
