"""The box's own lies, planted on purpose: faults outside the engine's physics that a real box
shows by accident, for the end-to-end tests of what the product refuses to trust (issue 44).

Why apart from the faces: none of these is an engine's behaviour — a metrics process restarted
behind a server that kept serving, a proxy in front of the port answering its own HTML page,
a driver whose ``nvidia-smi`` prints ``[N/A]`` for power, hangs or reports its GPU lost, a
build whose ``--help`` comes hard-wrapped — so every face gets them alike, from outside:
the HTTP faults wrap the face's application (:class:`FaultyFront`), the GPU faults travel in
the state file the box's ``nvidia-smi`` reads (:mod:`specconsole.sim.gpu.smifaults`), the
folded help wraps whatever the face prints (:func:`folded_help`). Each is a ``--sim-*`` flag
both faces register (:func:`add_fault_flags`); what it looks like from the outside is in
docs/simulator.md, "Fault injection".

Pure but for :class:`FaultyFront`, a plain ASGI callable (no starlette import): the faces'
argument parsers, which ``sim predict`` loads without the server, import this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
import time
from collections.abc import Callable, Collection, Sequence
from typing import Any

from specconsole.sim.gpu.nvidia_smi import GPU_LOST_EXIT
from specconsole.sim.gpu.smifaults import SMI_POWER

__all__ = [
    "HELP_WRAP_FLAG",
    "PROXY_PAGE",
    "FaultyFront",
    "MetricsRestarts",
    "add_fault_flags",
    "asks_help",
    "fold",
    "folded_help",
    "help_wrap",
    "html_routes",
    "restarted_text",
]

HELP_WRAP_FLAG = "--sim-help-wrap"
PROXY_PAGE = (
    '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">'
    "<title>Sign in</title></head>\n<body>\n<h1>Sign in to continue</h1>\n"
    '<form method="post" action="/oauth2/start"><button>Sign in</button></form>\n'
    "</body>\n</html>\n"
)
"""What an authenticating proxy in front of the port answers (200, ``text/html``)."""


def add_fault_flags(group: Any) -> None:
    """Register the box's faults on a face's parser group (``--sim-*``)."""
    a = group.add_argument
    a(
        "--sim-metrics-reset-after-requests",
        type=int,
        default=None,
        metavar="N",
        help="/metrics's counters start again from zero each time N more requests have "
        "finished (a metrics process restarted behind a server that kept serving)",
    )
    a(
        "--sim-smi-power",
        choices=sorted(SMI_POWER),
        default=None,
        help="the box's nvidia-smi prints [N/A] or [Not Supported] for power",
    )
    a(
        "--sim-smi-gpus",
        default=None,
        metavar="LIST",
        help="the GPUs (indexes, comma-separated) --sim-smi-power touches (default: all)",
    )
    a(
        "--sim-smi-stall-after",
        type=float,
        default=None,
        metavar="S",
        help="S seconds after the server is ready, every nvidia-smi hangs (a hung driver)",
    )
    a(
        "--sim-smi-exit-after",
        type=float,
        default=None,
        metavar="S",
        help="S seconds after the server is ready, every nvidia-smi reports its GPU lost "
        f"and exits {GPU_LOST_EXIT}",
    )
    a(
        "--sim-proxy-html",
        default=None,
        metavar="ROUTES",
        help="a proxy in front answers these routes (comma-separated) with its own HTML page",
    )
    a(
        HELP_WRAP_FLAG,
        type=int,
        default=None,
        metavar="N",
        help="--help comes hard-wrapped at N columns (a build, a terminal or a wrapper folds "
        "it; put it in the launcher, which the product asks for its help)",
    )


# -- /metrics restarted -----------------------------------------------------------------------


def _kinds(text: str) -> dict[str, str]:
    kinds: dict[str, str] = {}
    for line in text.split("\n"):
        if line.startswith("# TYPE "):
            words = line.split()
            if len(words) >= 4:
                kinds[words[2]] = words[3]
    return kinds


def _counted(name: str, kinds: dict[str, str]) -> bool:
    """Whether sample ``name`` is a count that starts again at a restart: a counter's, or a
    histogram's bucket, sum or count."""
    if kinds.get(name) == "counter" or kinds.get(name.removesuffix("_total")) == "counter":
        return True
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and kinds.get(name.removesuffix(suffix)) == "histogram":
            return True
    return False


def _counts(text: str) -> dict[str, float]:
    """Every count of an exposition, by its sample line's name and labels."""
    kinds = _kinds(text)
    out: dict[str, float] = {}
    for line in text.split("\n"):
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        if _counted(key.split("{", 1)[0], kinds):
            with contextlib.suppress(ValueError):
                out[key] = float(value)
    return out


def restarted_text(text: str, baseline: dict[str, float], born: float) -> str:
    """``text`` as a registry restarted when the counts were ``baseline`` would expose it:
    every count less its baseline, every ``*_created`` gauge the restart's time."""
    kinds = _kinds(text)
    out: list[str] = []
    for line in text.split("\n"):
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            name = key.split("{", 1)[0]
            if name.endswith("_created"):
                line = f"{key} {born!r}"
            elif _counted(name, kinds) and key in baseline:
                with contextlib.suppress(ValueError):
                    line = f"{key} {max(float(value) - baseline[key], 0.0)!r}"
        out.append(line)
    return "\n".join(out)


class MetricsRestarts:
    """``--sim-metrics-reset-after-requests N``: each time N more requests have finished, the
    counts ``/metrics`` shows start again from zero — the registry restarted at that moment
    (what the face's ``/metrics`` said then is the baseline later answers subtract), and its
    ``*_created`` gauges say when. The engine itself keeps counting: its log lines and its
    other routes do not change."""

    def __init__(self, every: int | None) -> None:
        self.every = every if every and every > 0 else None
        self._app: Any = None
        self._baseline: dict[str, float] = {}
        self._born: float | None = None
        self._capture: asyncio.Future[None] | None = None
        self.restarts = 0

    @property
    def active(self) -> bool:
        return self.every is not None

    def attach(self, app: Any) -> None:
        """The face's application, asked for its ``/metrics`` at each restart."""
        self._app = app

    def finished(self, count: int) -> None:
        """A request finished (``count`` so far; the scheduler's hook, inside its step):
        restart on every ``every``-th. The face's counts are read as soon as the step
        yields, before any other answer."""
        if self.every is None or count % self.every or self._app is None:
            return
        born = time.time()
        self._capture = asyncio.ensure_future(self._restart(born))

    async def _restart(self, born: float) -> None:
        status, text = await _get(self._app, "/metrics")
        self._baseline = _counts(text) if status == 200 else {}
        self._born = born
        self.restarts += 1

    def apply(self, text: str) -> str:
        """What ``/metrics`` answers for the face's ``text``."""
        if self._born is None:
            return text
        return restarted_text(text, self._baseline, self._born)


# -- the front: a proxy's HTML, a restarted /metrics -----------------------------------------


class FaultyFront:
    """The face's ASGI application behind the box's HTTP faults: routes a proxy answers
    with :data:`PROXY_PAGE`, and ``/metrics`` after :class:`MetricsRestarts`."""

    def __init__(self, app: Any, *, html_routes: Collection[str], restarts: MetricsRestarts):
        self.app = app
        self.html_routes = frozenset(html_routes)
        self.restarts = restarts
        restarts.attach(app)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope.get("type") == "http" else ""
        if path and path in self.html_routes:
            await _answer(send, 200, "text/html; charset=utf-8", PROXY_PAGE.encode())
            return
        if path == "/metrics" and self.restarts.active:
            start, data = await _inner(self.app, scope, receive)
            status = int(start.get("status", 500))
            if status == 200:
                data = self.restarts.apply(data.decode("utf-8", "replace")).encode()
            headers = [
                (k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"
            ]
            headers.append((b"content-length", str(len(data)).encode()))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": data})
            return
        await self.app(scope, receive, send)


async def _inner(app: Any, scope: dict[str, Any], receive: Any) -> tuple[dict[str, Any], bytes]:
    """The application's whole answer to one request: its start message and its body."""
    start: dict[str, Any] = {}
    body = bytearray()

    async def keep(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            body.extend(message.get("body", b""))

    await app(scope, receive, keep)
    return start, bytes(body)


async def _get(app: Any, path: str) -> tuple[int, str]:
    """GET ``path`` from the application in this process (no socket): status and text."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # the client never disconnects
        return {"type": "http.disconnect"}

    start, data = await _inner(app, scope, receive)
    return int(start.get("status", 500)), data.decode("utf-8", "replace")


async def _answer(send: Any, status: int, media: str, data: bytes) -> None:
    headers = [(b"content-type", media.encode()), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def html_routes(values: dict[str, Any]) -> tuple[str, ...]:
    """``--sim-proxy-html``'s routes (each with its leading ``/``)."""
    listed = str(values.get("sim_proxy_html") or "")
    return tuple("/" + r.strip().lstrip("/") for r in listed.split(",") if r.strip())


# -- a hard-wrapped --help ---------------------------------------------------------------------


def help_wrap(argv: Sequence[str]) -> int | None:
    """The width ``--sim-help-wrap N`` asks for (None without it, or for a width under 20)."""
    words = list(argv)
    for i, word in enumerate(words):
        name, eq, inline = word.partition("=")
        if name != HELP_WRAP_FLAG:
            continue
        value = inline if eq else (words[i + 1] if i + 1 < len(words) else "")
        return int(value) if value.isdigit() and int(value) >= 20 else None
    return None


def asks_help(argv: Sequence[str]) -> bool:
    return any(w in ("-h", "--help") or w.startswith("--help=") for w in argv)


def fold(text: str, width: int) -> str:
    """``fold -w WIDTH``: every line cut into pieces of at most ``width`` characters."""
    out: list[str] = []
    for line in text.split("\n"):
        out += [line[i : i + width] for i in range(0, len(line), width)] or [""]
    return "\n".join(out)


def folded_help(print_help: Callable[[], object], width: int) -> int:
    """Run ``print_help`` (a face's parse of ``--help``: it prints, then exits) and print
    what it printed folded at ``width``; its exit status."""
    buffer = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(buffer):
        try:
            print_help()
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 0
    sys.stdout.write(fold(buffer.getvalue(), width))
    sys.stdout.flush()
    return code
