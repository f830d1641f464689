"""Start and stop the mini server (tests/bench/mini_server.py) as a real process."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def mini_server(*flags: str) -> Iterator[str]:
    """Yield the base URL of a freshly started mini server; stop it (by PID) afterwards."""
    with _served("tests.bench.mini_server", *flags) as url:
        yield url


@contextlib.contextmanager
def hostile_server(mode: str) -> Iterator[str]:
    """Yield the base URL of a hostile server (tests/bench/hostile_server.py) in ``mode``."""
    with _served("tests.bench.hostile_server", mode) as url:
        yield url


@contextlib.contextmanager
def _served(module: str, *flags: str) -> Iterator[str]:
    """Run ``python -m module flags`` (it prints its port), yield its URL, stop it by PID."""
    process = subprocess.Popen(
        [sys.executable, "-m", module, *flags],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline().strip())
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            time.sleep(0.05)
        else:
            raise RuntimeError(f"{module} did not start listening within 15 s")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
