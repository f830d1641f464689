"""How fast commands and log lines travel through the transports and the process backend.

Why: a crash must reach the console within 2 s and a log burst (SGLang prints a decode line
per batch, tracebacks by the hundred lines) must never back up behind the transport. This
prints, against a real sshd started for the purpose (tests/fixtures/sshd.py) and locally:

* one-shot command round trip (median of 30 ``true`` runs);
* raw stream throughput: lines/s of a fast producer read through ``Transport.stream``;
* process-backend log throughput: lines/s of a finished run's log read through
  ``ProcessBackend.logs`` (what the journal pane is fed from);
* latency from a line being appended to a followed log to it arriving from ``logs()``
  (median of 20; the tail polls every 0.2 s at worst).

Run: ``.venv/bin/python benchmarks/remote_stream.py`` (about 20 s).
"""

from __future__ import annotations

import asyncio
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures.sshd import SshdServer  # noqa: E402

from specconsole.core.config.model import ServerConfig  # noqa: E402
from specconsole.core.plans.profile import HostProfile, ServiceProfile, TransportKind  # noqa: E402
from specconsole.core.ports import Transport  # noqa: E402
from specconsole.remote.process import ProcessBackend  # noqa: E402
from specconsole.remote.transport.local import LocalTransport  # noqa: E402
from specconsole.remote.transport.ssh import SshTransport  # noqa: E402

STREAM_LINES = 200_000
LOG_LINES = 100_000
LINE = "[2026-12-03 07:00:00] Decode batch, #running-req: 64, #token: 123456, token usage: 0.42"


def launched(code: str) -> ServerConfig:
    """A 'server' that is this Python running ``code``."""
    return ServerConfig(model_path="x", launcher=f"{sys.executable} -c {shlex.quote(code)}")


async def round_trip(transport: Transport) -> float:
    await transport.run("true")
    samples = []
    for _ in range(30):
        start = time.perf_counter()
        await transport.run("true")
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def stream_rate(transport: Transport) -> float:
    command = f"yes {shlex.quote(LINE)} | head -n {STREAM_LINES}"
    start = time.perf_counter()
    count = 0
    async for _ in transport.stream(command):
        count += 1
    assert count == STREAM_LINES, count
    return count / (time.perf_counter() - start)


async def log_rate_and_latency(transport: Transport, folder: Path) -> tuple[float, float, float]:
    bulk = ProcessBackend(transport, ServiceProfile(run_dir=str(folder / "bulk")))
    code = f"import sys\nsys.stdout.write(({LINE!r} + '\\n') * {LOG_LINES})"
    await bulk.deploy(launched(code))
    await bulk.start()
    async for _ in bulk.logs():  # wait for the run to finish writing
        pass
    start = time.perf_counter()
    count = sum([1 async for _ in bulk.logs()])
    rate = count / (time.perf_counter() - start)

    live = ProcessBackend(transport, ServiceProfile(run_dir=str(folder / "live")))
    feed = folder / "feed"
    feed.write_text("")
    follower = "\n".join(
        [
            "import sys, time",
            f"f = open({str(feed)!r})",
            "while True:",
            "    line = f.readline()",
            "    (sys.stdout.write(line), sys.stdout.flush()) if line else time.sleep(0.005)",
        ]
    )
    await live.deploy(launched(follower))
    await live.start()
    delays: list[float] = []
    logs = live.logs()
    try:
        for i in range(20):
            sent = time.perf_counter()
            with feed.open("a") as handle:
                handle.write(f"ping {i}\n")
            record = await anext(logs)
            assert record.text == f"ping {i}", record.text
            delays.append(time.perf_counter() - sent)
    finally:
        await logs.aclose()  # type: ignore[attr-defined]
        await live.stop()
    return rate, statistics.median(delays), max(delays)


async def measure(name: str, transport: Transport, folder: Path) -> None:
    rtt = await round_trip(transport)
    lines = await stream_rate(transport)
    log_rate, latency, worst = await log_rate_and_latency(transport, folder)
    print(
        f"{name:6} round trip {rtt * 1000:6.1f} ms | stream {lines:9,.0f} lines/s | "
        f"process log {log_rate:9,.0f} lines/s | append→record median "
        f"{latency * 1000:5.1f} ms, max {worst * 1000:5.1f} ms"
    )


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sshd = SshdServer.start(folder / "sshd")
        try:
            (folder / "local").mkdir()
            await measure("local", LocalTransport(), folder / "local")
            ssh = SshTransport(
                HostProfile(
                    transport=TransportKind.SSH,
                    hostname=sshd.host,
                    port=sshd.port,
                    user=sshd.username,
                    identity_files=(str(sshd.client_key),),
                    known_hosts=str(sshd.known_hosts),
                    ssh_config="",
                    use_agent=False,
                )
            )
            (folder / "ssh").mkdir()
            try:
                await measure("ssh", ssh, folder / "ssh")
            finally:
                await ssh.close()
        finally:
            sshd.stop()


if __name__ == "__main__":
    asyncio.run(main())
