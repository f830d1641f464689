"""A client that goes away is never a server crash (issue 18, defect 1): the web server's
``Exception in ASGI application`` … ``ClientDisconnect`` traceback, timestamped or not, from
uvicorn or hypercorn, yields no fatal event; a real crash right after it still does."""

from __future__ import annotations

import pytest

from specconsole.core.logs.events import FatalError
from specconsole.core.logs.parser import parse_lines

FRAMES = [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3/site-packages/uvicorn/protocols/http/h11_impl.py", line 403, '
    "in run_asgi",
    "    result = await app(  # type: ignore[func-returns-value]",
    '  File "/usr/lib/python3/site-packages/starlette/requests.py", line 240, in receive',
    "    raise ClientDisconnect()",
    "starlette.requests.ClientDisconnect",
    "",
]

HEADERS = {
    "untimestamped uvicorn": "ERROR:    Exception in ASGI application",
    "timestamped": "[2026-12-03 12:00:00] ERROR:    Exception in ASGI application",
    "hypercorn": "[2026-12-03 12:00:00 +0000] [42] [ERROR] Error in ASGI Framework",
    "no header at all": "",
}


def _fatal(lines: list[str]) -> list[FatalError]:
    return [e for e in parse_lines(lines) if isinstance(e, FatalError)]


@pytest.mark.parametrize("header", HEADERS.values(), ids=list(HEADERS))
def test_client_disconnect_traceback_is_not_fatal(header: str) -> None:
    lines = [header, *FRAMES] if header else FRAMES
    assert _fatal(lines * 3) == []


def test_a_real_crash_after_it_is_still_fatal() -> None:
    crash = [
        "[2026-12-03 12:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 10, in event_loop',
        "    x = torch.empty(n)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "",
    ]
    found = _fatal([HEADERS["untimestamped uvicorn"], *FRAMES, *crash])
    assert len(found) == 1 and "out of memory" in found[0].summary
