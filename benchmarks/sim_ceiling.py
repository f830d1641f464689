"""How fast can the simulated GPU box stream when nothing paces it?

The load generator and the controller are measured against the simulator, so the simulator
must never be what limits a benchmark: at the calibrated rates (peak ~2,000 tok/s at
concurrency 64) it must have at least 10x headroom on one core. This script starts
``python -m specconsole.sim --sim-unthrottled`` (the scheduler runs steps back to back),
drives it at concurrency 64 from a minimal raw-socket client in this process (so the client's
cost stays small and lands on the other core), and prints streamed tokens/s and chunks/s by
wall clock and per CPU-second of the simulator process (psutil), which is the one-core figure.

Run: ``.venv/bin/python benchmarks/sim_ceiling.py [--concurrency 64] [--requests 256]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fixtures.sim import DEFAULT_FLAGS, running_simulator

from specconsole.sim.faces.sglang.args import parse_argv
from specconsole.sim.faces.sglang.resolve import resolve
from specconsole.sim.forecast import calibration_config, peak_aggregate, predict
from specconsole.sim.physics.model import CALIBRATION_LADDER
from specconsole.sim.profile import load_default_profile


async def _one(host: str, port: int, path: str, body: bytes) -> tuple[int, int]:
    """One streamed request over a fresh connection; returns (chunks, bytes)."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    chunks = 0
    total = 0
    tail = b""
    while True:
        data = await reader.read(1 << 16)
        if not data:
            break
        total += len(data)
        joined = tail + data
        chunks += joined.count(b"data: ") - tail.count(b"data: ")
        tail = joined[-64:]
    writer.close()
    if b"data: [DONE]" not in tail:
        raise RuntimeError(f"incomplete stream from the simulator ({total} bytes)")
    return chunks, total


async def _drive(
    host: str, port: int, concurrency: int, requests: int, output_len: int, endpoint: str
) -> tuple[float, int, int]:
    if endpoint == "generate":
        path = "/generate"
        body = json.dumps(
            {
                "text": "benchmark " * 64,
                "stream": True,
                "sampling_params": {"max_new_tokens": output_len},
            }
        ).encode()
    else:
        path = "/v1/chat/completions"
        body = json.dumps(
            {
                "messages": [{"role": "user", "content": "benchmark " * 64}],
                "max_tokens": output_len,
                "stream": True,
            }
        ).encode()
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(requests):
        queue.put_nowait(i)
    chunks = 0

    async def worker() -> None:
        nonlocal chunks
        while not queue.empty():
            queue.get_nowait()
            c, _ = await _one(host, port, path, body)
            chunks += c

    start = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(concurrency))), timeout=600)
    return time.perf_counter() - start, chunks, requests * output_len


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--requests", type=int, default=256)
    ap.add_argument("--output-len", type=int, default=512)
    ap.add_argument("--endpoint", choices=("generate", "chat", "both"), default="both")
    opts = ap.parse_args()
    profile = load_default_profile()
    peak = max(
        peak_aggregate(calibration_config(profile, s), CALIBRATION_LADDER, profile=profile)[1]
        for s in range(1, 6)
    )
    endpoints = ("generate", "chat") if opts.endpoint == "both" else (opts.endpoint,)
    print(
        f"simulator ceiling (unthrottled), concurrency {opts.concurrency}, "
        f"{opts.requests} requests x {opts.output_len} tokens; calibrated peak "
        f"{peak:,.0f} tok/s"
    )
    worst = float("inf")
    for endpoint in endpoints:
        with running_simulator(
            "--sim-unthrottled", "--decode-log-interval", "400", load_seconds=0.0
        ) as sim:
            proc = psutil.Process(sim.pid)
            cpu0 = proc.cpu_times()
            elapsed, chunks, tokens = asyncio.run(
                _drive(
                    "127.0.0.1",
                    sim.port or 0,
                    opts.concurrency,
                    opts.requests,
                    opts.output_len,
                    endpoint,
                )
            )
            cpu1 = proc.cpu_times()
        cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
        per_cpu = tokens / cpu if cpu > 0 else float("inf")
        worst = min(worst, per_cpu)
        print(
            f"  {endpoint:<9} wall: {tokens / elapsed:>10,.0f} tok/s {chunks / elapsed:>9,.0f} "
            f"chunks/s | one core (sim CPU {cpu:.2f} s): {per_cpu:>10,.0f} tok/s "
            f"{chunks / cpu:>9,.0f} chunks/s = {per_cpu / peak:.1f}x peak"
        )
    verdict = "OK" if worst >= 10 * peak else "BELOW TARGET"
    print(f"target >= 10x peak ({10 * peak:,.0f} tok/s per core): {verdict}")
    _paced(opts.concurrency)
    return 0


def _paced(concurrency: int, output_len: int = 128) -> None:
    """The same load paced in real time: the rate the model predicts, at a small CPU cost."""
    profile = load_default_profile()
    expected = predict(
        resolve(parse_argv(list(DEFAULT_FLAGS)), profile), concurrency, 64, output_len, profile
    )
    with running_simulator(load_seconds=0.0) as sim:
        proc = psutil.Process(sim.pid)
        cpu0 = proc.cpu_times()
        elapsed, _chunks, tokens = asyncio.run(
            _drive("127.0.0.1", sim.port or 0, concurrency, concurrency, output_len, "generate")
        )
        cpu1 = proc.cpu_times()
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    print(
        f"paced (real time), one wave of {concurrency} x {output_len} tokens: "
        f"{tokens / elapsed:,.0f} tok/s (predict: {expected.aggregate_tok_s:,.0f}), "
        f"simulator CPU {100 * cpu / elapsed:.1f} % of one core"
    )


if __name__ == "__main__":
    raise SystemExit(main())
