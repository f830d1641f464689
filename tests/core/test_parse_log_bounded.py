"""``specconsole parse-log`` on hostile input: no traceback, bounded memory, an honest exit.

A 10 MB line without a newline and 50 MB of binary must neither crash the parser nor make it
hold the input in memory (it reads 64 KiB chunks and cuts an endless line at the parser's line
limit). Run as a real child process so its peak memory can be read: from the child's own
``VmHWM`` (its resident high-water mark since exec), not ``ru_maxrss``, which a forked child
inherits from a large parent such as the pytest process.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from specconsole.core.logs.parser import LogParser

PEAK_MB = 220
"""Far above the interpreter's own ~60 MB, far below the 50 MB input held a few times over."""


def _run(path: Path) -> tuple[int, str, int]:
    code = (
        "import sys\n"
        "from specconsole.cli import main\n"
        "rc = main(['parse-log', '--summary-only', sys.argv[1]])\n"
        "status = open('/proc/self/status').read().split('VmHWM:')[1]\n"
        "print(status.split()[0], file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    peak_kb = int(proc.stderr.strip().splitlines()[-1])
    return proc.returncode, proc.stderr, peak_kb // 1024


@pytest.mark.parametrize("kind", ["one 10 MB line", "50 MB of binary"])
def test_parse_log_survives_hostile_input(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "hostile.log"
    if kind.startswith("one"):
        path.write_bytes(b"[2026-07-20 10:27:57 TP0] Decode batch, #token: " + b"9" * 10_000_000)
    else:
        rng = random.Random(13)
        with path.open("wb") as f:
            for _ in range(50):
                f.write(rng.randbytes(1 << 20))
    rc, stderr, peak_mb = _run(path)
    assert "Traceback" not in stderr, stderr[-2000:]
    assert rc in (0, 1), stderr[-2000:]
    assert peak_mb < PEAK_MB, f"peak {peak_mb} MB"


def test_endless_partial_line_is_cut_not_buffered() -> None:
    parser = LogParser()
    for _ in range(200):  # 12.8 MB without a newline
        parser.feed_chunk("x" * 65536)
    assert len(parser._buffer) <= 2 * 65536
    assert parser.flush() == []
