"""Shared helpers for the remote tests: server configurations and log readers.

``sim_config`` is the simulator's calibration launch (the same flags as
``tests/fixtures/sim.py``'s ``DEFAULT_FLAGS``) as a :class:`ServerConfig`, so any backend can
deploy it; ``counter_config`` is a tiny "server" whose exact output tests can count.
"""

from __future__ import annotations

import asyncio
import shlex
import sys
from collections.abc import AsyncIterator

from specconsole.core.config.model import ServerConfig
from specconsole.core.plans.profile import HostProfile, TransportKind
from specconsole.core.ports import LogRecord
from specconsole.engines.sglang.keys import SpecAlgorithm
from tests.fixtures.sshd import SshdServer, free_port

READY = "The server is fired up and ready to roll!"
SIM = f"{sys.executable} -m specconsole.sim"


def sim_config(**overrides: object) -> ServerConfig:
    """The simulator's calibration launch (tests/fixtures/sim.py), loading in one second."""
    fields: dict[str, object] = {
        "model_path": "Qwen/Qwen3.5-122B-A10B-FP8",
        "tp_size": 4,
        "speculative_algorithm": SpecAlgorithm.EAGLE3,
        "speculative_num_steps": 3,
        "speculative_eagle_topk": 1,
        "speculative_num_draft_tokens": 4,
        "mem_fraction_static": 0.88,
        "cuda_graph_max_bs": 64,
        "max_running_requests": 64,
        "launcher": SIM,
        "port": free_port(),
        "extra_args": ("--sim-load-seconds", "1"),
    }
    fields.update(overrides)
    return ServerConfig(**fields)  # type: ignore[arg-type]


def counter_config(count: int, *, delay: float = 0.01, ignore_term: bool = False) -> ServerConfig:
    """A 'server' that prints ``line 1`` .. ``line N`` (then idles or exits)."""
    lines = ["import signal, time"]
    if ignore_term:
        lines.append("signal.signal(signal.SIGTERM, signal.SIG_IGN)")
    lines += [
        f"for i in range(1, {count + 1}):",
        "    print(f'line {i}', flush=True)",
        f"    time.sleep({delay})",
    ]
    if ignore_term:
        lines.append("time.sleep(60)")
    code = "\n".join(lines)
    return ServerConfig(model_path="unused", launcher=f"{sys.executable} -u -c {shlex.quote(code)}")


async def read_until(
    logs: AsyncIterator[LogRecord], predicate: str, *, timeout: float = 60
) -> list[LogRecord]:
    """Records up to and including the first whose text contains ``predicate``."""
    seen: list[LogRecord] = []
    async with asyncio.timeout(timeout):
        async for record in logs:
            seen.append(record)
            if predicate in record.text:
                return seen
    raise AssertionError(f"log ended before {predicate!r}: {[r.text for r in seen][-20:]}")


async def drain(logs: AsyncIterator[LogRecord], *, timeout: float = 60) -> list[LogRecord]:
    async with asyncio.timeout(timeout):
        return [record async for record in logs]


def ssh_profile(sshd: SshdServer, **overrides: object) -> HostProfile:
    """A profile that reaches the test sshd with host-key checking on."""
    fields: dict[str, object] = {
        "transport": TransportKind.SSH,
        "hostname": sshd.host,
        "port": sshd.port,
        "user": sshd.username,
        "identity_files": (str(sshd.client_key),),
        "known_hosts": str(sshd.known_hosts),
        "ssh_config": "",
        "use_agent": False,
        "connect_timeout": 10.0,
        "reconnect_max_delay": 1.0,
    }
    fields.update(overrides)
    return HostProfile(**fields)  # type: ignore[arg-type]
