"""How much CPU the load generator spends per streamed token, and how far one core takes it.

Why: a benchmark client that is itself the bottleneck reports its own limit, not the
server's. Against the *unthrottled* simulator (tokens as fast as it can produce them) at
c = 64, this prints for each placement the client's CPU seconds per 1,000 streamed tokens and
the maximum tokens/s it could sustain on one core (1,000 / that figure), next to the
throughput actually observed (bounded by the simulator sharing this machine):

* direct: the threaded runner (stdlib client for http://) straight at the simulator's URL;
* SSH forward: the same runner through an asyncssh local port forward to a real sshd started
  for the purpose (tests/fixtures/sshd.py helpers) — the console process pays for the tunnel;
* on the box: the self-contained stdlib runner script (the remote-runner placement), run as a
  child process;
* reference: bench_serving's request loop on aiohttp (benchmarks/reference_client.py: a new
  ``ClientSession`` per request, ``json.loads`` per ``data:`` line), the yardstick.

for ``/generate`` and for chat (``/v1/chat/completions``). Each client runs in its own process
pinned to one core, so its CPU time is its own; it also prints µs of CPU per streamed token
and the direct runner's ratio to the reference measured in the same run. Targets (issue 14):
direct <= 4 µs per token and ratio <= 0.85, on both APIs at c = 64, judged on the
calibration EAGLE-3 launch (the traffic this tool tunes: about 3.6 tokens per SSE chunk); the
same figures without speculation (one token per chunk, the per-chunk cost's worst case) are
printed with their own verdict as information.

µs per token is the *marginal* client CPU: the worker process's CPU (``time.process_time``:
user + system, every thread) from the moment the run starts to its result — the interpreter's
start-up and imports excluded, which is where bench_serving's 5.9 s goes — over every token it
streamed (warm-up included: it costs the same). Both clients pay their per-request costs
(a new ``ClientSession`` per request for the reference) and their metrics inside the window.
Direct and reference alternate over ``ROUNDS`` runs and are compared by medians and by the
median of the per-round ratios, because a machine shared with other work can slow any single
run; the load average is printed with the figures.

Run: ``.venv/bin/python benchmarks/loadgen_overhead.py`` (about three minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import statistics
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
TARGET_US_PER_TOKEN = 4.0
TARGET_RATIO = 0.85


def _spec(api: str = "generate") -> Any:
    from specconsole.core.ports import BenchApi, BenchSpec

    return BenchSpec(
        ladder=(CONCURRENCY,),
        requests_per_level=REQUESTS,
        output_len=OUTPUT_LEN,
        input_len=INPUT_LEN,
        prompts="random",
        api=BenchApi(api),
    )


def _streamed_tokens(result: Any) -> int:
    """Every token the client received, warm-up included (it costs the same CPU)."""
    return sum(
        level.total_output_tokens + level.warmup_requests * OUTPUT_LEN for level in result.levels
    )


def _pin_one_core() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[-1]})


async def _reference_worker(api: str, url: str) -> dict[str, Any]:
    """The reference client: warm-up (c requests) and the measured level, both counted."""
    from benchmarks.reference_client import metrics, run_level

    from specconsole.bench.workload.datasets import load_dataset

    pool, _ = load_dataset(
        "random", CONCURRENCY + REQUESTS, input_len=INPUT_LEN, output_len=OUTPUT_LEN
    )
    prompts = [(p.text, OUTPUT_LEN) for p in pool]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    warm, _ = await run_level(url, api, prompts[:CONCURRENCY], CONCURRENCY, warmup=False)
    outputs, duration = await run_level(url, api, prompts[CONCURRENCY:], CONCURRENCY, warmup=False)
    level = metrics(outputs, duration)  # bench_serving computes them in its run too
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "tokens": sum(o.output_len for o in warm) + int(level["total_output_tokens"]),
        "output_throughput": level["output_throughput"],
        "failed": int(level["failed"]) + sum(not o.success for o in warm),
    }


async def _worker(
    mode: str, url: str, sshd: dict[str, Any] | None, api: str = "generate"
) -> dict[str, Any]:
    from specconsole.bench.runner import ForwardedBenchmarkRunner, ThreadedBenchmarkRunner

    if mode == "reference":
        return await _reference_worker(api, url)
    spec = _spec(api)
    transport = None
    if mode == "ssh":
        assert sshd is not None
        from specconsole.core.plans.profile import HostProfile, TransportKind
        from specconsole.remote.transport.ssh import SshTransport

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


def _run_worker(
    mode: str, url: str, sshd: dict[str, Any] | None = None, api: str = "generate"
) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--worker", mode, url, json.dumps(sshd or {}), api]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def _run_remote_script(url: str, api: str = "generate") -> dict[str, Any]:
    """The stdlib runner script as the box would run it, pinned to one core."""
    from specconsole.bench.loadgen import plan_for
    from specconsole.bench.remote_runner import build_script
    from specconsole.core.measure.result import BenchResult

    script = build_script(plan_for(_spec(api)), url)
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
    """Print one client's figures; returns its µs of CPU per streamed token."""
    us = figures["cpu_s"] / figures["tokens"] * 1e6
    print(
        f"{name:<36} {us:6.2f} µs/tok  {us / 1000:7.4f} CPU-s/1k tok  max "
        f"{1e6 / us:8.0f} tok/s/core  observed {figures['output_throughput']:8.0f} tok/s  "
        f"({figures['tokens']} tokens, {figures['cpu_s']:.2f} CPU-s, {figures['failed']} failed)"
    )
    return us


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


ROUNDS = 3
"""Direct and reference are measured this many times, alternating (ABBA...), and compared by
their medians: on a shared machine one run of either can land on a busy second."""


def _placements(url: str, sshd: dict[str, Any] | None, api: str) -> tuple[float, float]:
    """Every placement and the reference on ``api``; returns (direct µs/token, ratio)."""
    directs: list[float] = []
    references: list[float] = []
    ratios: list[float] = []
    for round_ in range(ROUNDS):
        order = ("direct", "reference") if round_ % 2 == 0 else ("reference", "direct")
        pair: dict[str, float] = {}
        for mode in order:
            label = (
                "direct (threaded runner)"
                if mode == "direct"
                else ("reference (aiohttp, bench_serving loop)")
            )
            pair[mode] = _report(f"{api}: {label} #{round_ + 1}", _run_worker(mode, url, api=api))
        directs.append(pair["direct"])
        references.append(pair["reference"])
        ratios.append(pair["direct"] / pair["reference"])
    if sshd is not None and api == "generate":
        _report(f"{api}: SSH forward (via asyncssh)", _run_worker("ssh", url, sshd, api))
    _report(f"{api}: on the box (stdlib runner script)", _run_remote_script(url, api))
    direct, reference = statistics.median(directs), statistics.median(references)
    ratio = statistics.median(ratios)
    print(
        f"{api}: median of {ROUNDS}: direct {direct:.2f} µs/tok, reference {reference:.2f} "
        f"µs/tok, direct / reference = {ratio:.2f} (per round: "
        + ", ".join(f"{r:.2f}" for r in ratios)
        + ")"
    )
    return direct, ratio


def main() -> int:
    from tests.fixtures.sim import DEFAULT_FLAGS, running_simulator

    # A SIGTERM (e.g. from ``timeout``) unwinds like Ctrl-C: the sshd and simulator are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    from tests.fixtures.sshd import SshdServer, SshdUnavailable

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"load generator overhead: unthrottled simulator, c={CONCURRENCY}, {REQUESTS} "
        f"requests x {OUTPUT_LEN} output tokens (+{CONCURRENCY} warm-up), /generate and chat, "
        f"each client pinned to one core; load average {load} on {os.cpu_count()} CPUs"
    )
    figures: dict[tuple[str, str], tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="specconsole-loadgen-sshd-") as tmp:
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
            for launch, title, flags in (
                ("eagle", "EAGLE-3 3/1/4 (about 3.6 tokens per SSE chunk)", DEFAULT_FLAGS),
                ("none", "no speculation (1 token per SSE chunk: the worst case)", NO_SPEC_FLAGS),
            ):
                print(f"-- {title}")
                with running_simulator("--sim-unthrottled", base_flags=flags) as sim:
                    for api in ("generate", "chat"):
                        figures[launch, api] = _placements(sim.base_url, sshd, api)
        finally:
            if server is not None:
                server.stop()
    for launch, label in (
        ("eagle", "target (issue 14), EAGLE-3 launch"),
        ("none", "worst case, no speculation (informational)"),
    ):
        cells = []
        for api in ("generate", "chat"):
            us, ratio = figures[launch, api]
            met = us <= TARGET_US_PER_TOKEN and ratio <= TARGET_RATIO
            cells.append(f"{api} {us:.2f} µs, ratio {ratio:.2f} {'met' if met else 'OVER'}")
        print(
            f"{label}: direct <= {TARGET_US_PER_TOKEN:g} µs per token and <= "
            f"{TARGET_RATIO:g} x the reference: " + "; ".join(cells)
        )
    print("load average now " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=4, metavar=("MODE", "URL", "SSHD_JSON", "API"))
    ns = parser.parse_args()
    if ns.worker:
        mode, url, sshd_json, api = ns.worker
        _pin_one_core()
        figures = asyncio.run(_worker(mode, url, json.loads(sshd_json) or None, api))
        print(json.dumps(figures))
        raise SystemExit(0)
    raise SystemExit(main())
