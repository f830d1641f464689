"""The simulated server as a process: the face reads its engine's flags, the port is bound,
uvicorn serves the face's routes while the box loads and runs, the parent is watched, and the
process ends with the engine's own status codes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Sequence

import uvicorn

from specconsole.sim.arguments import SimArgError
from specconsole.sim.box import SimBox, SimOptions
from specconsole.sim.facetable import select_face
from specconsole.sim.faults import FaultyFront, asks_help, folded_help, help_wrap
from specconsole.sim.parentwatch import parent_pid, watch_parent
from specconsole.sim.profile import ProfileError, load_profile
from specconsole.sim.scheduler import SchedulerCrash


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handling (the simulator handles SIGTERM like the
    engine it imitates)."""

    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[no-untyped-def,override]
        yield


def _bind(host: str, port: int) -> socket.socket:
    """Bind the port (not listening yet: a face that listens only once ready refuses
    connections until then)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only when the
    # socket's proto says TCP. Without it (proto 0) Nagle holds the first SSE chunk of a
    # reused keep-alive connection until the client's delayed ACK (~40 ms on TTFT).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.setblocking(False)
    return sock


async def _serve(sim: SimBox, sock: socket.socket, app: object) -> int:
    loop = asyncio.get_running_loop()
    config = uvicorn.Config(
        app,  # type: ignore[arg-type]
        log_config=None,
        access_log=False,
        lifespan="off",
        http="h11",
        loop="asyncio",
        timeout_graceful_shutdown=2,
    )
    server = _QuietServer(config)
    stop = asyncio.Event()

    def on_term() -> None:
        sim.shutting_down = True
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_term)
    watched = parent_pid()
    watcher = None if watched is None else asyncio.create_task(watch_parent(watched, on_term))
    serving: list[asyncio.Task[None]] = []

    def listen() -> None:
        sock.listen(2048)
        serving.append(asyncio.create_task(server.serve(sockets=[sock])))
        sim.on_listening()

    if sim.listens_while_loading:
        listen()

    async def lifecycle() -> None:
        if not await sim.load():
            return
        if not serving:
            listen()
        busy = asyncio.create_task(sim.gpus.follow(sim.scheduler))  # nvidia-smi's load
        try:
            await sim.scheduler.run()
        except SchedulerCrash:
            sim.serving_crash()
        finally:
            busy.cancel()

    life = asyncio.create_task(lifecycle())
    fatal = asyncio.create_task(sim.wait_fatal())
    stopper = asyncio.create_task(stop.wait())
    await asyncio.wait({life, fatal, stopper, *serving}, return_when=asyncio.FIRST_COMPLETED)
    failed = life.done() and not life.cancelled() and life.exception() is not None
    if failed and not sim.fatal_seen:
        # A bug in the simulator itself: report it the way the engine reports a crash.
        exc = life.exception()
        assert exc is not None
        sim.simulator_bug("".join(traceback.format_exception(exc)).rstrip("\n"))
    if sim.fatal_seen:
        return sim.die()
    if life.done() and not stop.is_set():
        # The lifecycle ended without a fatal error or a stop: keep serving until SIGTERM.
        await asyncio.wait({stopper, *serving}, return_when=asyncio.FIRST_COMPLETED)
    # Clean shutdown (SIGTERM/SIGINT), as uvicorn and the engine report it.
    life.cancel()
    sim.shutdown_lines(os.getpid(), "begin")
    server.should_exit = True
    for task in serving:
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=3)
    sim.shutdown_lines(os.getpid(), "end")
    for task in (fatal, stopper, life, watcher):
        if task is not None:
            task.cancel()
    sim.gpus.close()  # its memory is freed
    return 0


def _read(path: str) -> str | None:
    """A file a flag names (SGLang's adaptive config), as the engine opens it."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(1 << 20)  # bounded: a config, not a corpus
    except (OSError, UnicodeDecodeError):
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m specconsole.sim [ENGINE] ...``: the face of the engine named (SGLang when
    none is) parses, resolves, then loads and serves (or fails) like that engine."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        face, words = select_face(argv)
        width = help_wrap(words)
        if width is not None and asks_help(words):  # a build whose help comes hard-wrapped
            return folded_help(lambda: face.parse(words), width)
        parsed = face.parse(words)
    except (SimArgError, ValueError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    values = dict(parsed.values)
    slow = float(values.get("sim_slow_start") or 0.0)
    if slow > 0:
        # Nothing has started yet: a stop request during the silence is a clean exit.
        previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        time.sleep(slow)
        signal.signal(signal.SIGTERM, previous)
    try:
        profile = load_profile(values.get("sim_profile") or face.default_profile())
    except ProfileError as exc:
        print(f"specconsole.sim: {exc}", file=sys.stderr)
        return 2
    profile = face.with_release(parsed, profile)
    log = face.writer(parsed, profile)
    try:
        parsed = face.context(parsed, os.environ, _read)
        args = face.resolve(parsed, profile)
    except SimArgError as exc:
        return face.refused(log, exc)
    face.started(log, args)
    opts = SimOptions.from_values(values, profile)
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        return face.bind_failed(log, args, exc)
    sim = face.server(args, parsed, profile, opts, log)
    sim.port = sock.getsockname()[1]
    front = FaultyFront(face.app(sim), html_routes=opts.proxy_html, restarts=sim.restarts)
    try:
        return asyncio.run(_serve(sim, sock, front))
    except KeyboardInterrupt:
        return 130
