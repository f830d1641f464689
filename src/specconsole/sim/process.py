"""The simulated server as a process: parse SGLang's flags, bind the port, run uvicorn and
the simulation, watch the parent, and exit with SGLang's status codes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Sequence

import uvicorn

from specconsole.sim import logfmt
from specconsole.sim.args import SimArgError, parse_argv
from specconsole.sim.engine import SchedulerCrash
from specconsole.sim.http import build_app
from specconsole.sim.parentwatch import parent_pid, watch_parent
from specconsole.sim.profile import ProfileError, default_profile_path, load_profile
from specconsole.sim.resolve import resolve
from specconsole.sim.server import LOG_LEVELS, LogWriter, SimOptions, SimServer


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handling (the simulator handles SIGTERM like SGLang)."""

    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[no-untyped-def,override]
        yield


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only when the
    # socket's proto says TCP. Without it (proto 0) Nagle holds the first SSE chunk of a
    # reused keep-alive connection until the client's delayed ACK (~40 ms on TTFT).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def _die_like_sglang() -> None:
    """The launcher kills its whole process tree after SIGQUIT: the process ends by SIGKILL."""
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


async def _serve(sim: SimServer, sock: socket.socket) -> int:
    loop = asyncio.get_running_loop()
    config = uvicorn.Config(
        build_app(sim),
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
    serve_task = asyncio.create_task(server.serve(sockets=[sock]))
    log = sim.log
    log.main(logfmt.uvicorn_info(f"Started server process [{os.getpid()}]"))
    log.main(logfmt.uvicorn_info("Waiting for application startup."))
    log.main(logfmt.uvicorn_info("Application startup complete."))
    log.main(
        logfmt.uvicorn_info(
            f"Uvicorn running on http://{sim.args.host}:{sim.port} (Press CTRL+C to quit)"
        )
    )

    async def lifecycle() -> None:
        if not await sim.load():
            return
        try:
            await sim.scheduler.run()
        except SchedulerCrash:
            sim.scheduler.crashed = True
            sim._fatal_log(logfmt.serving_crash_traceback())

    life = asyncio.create_task(lifecycle())
    fatal = asyncio.create_task(sim._fatal.wait())
    stopper = asyncio.create_task(stop.wait())
    await asyncio.wait({life, fatal, stopper, serve_task}, return_when=asyncio.FIRST_COMPLETED)
    if (
        life.done()
        and not life.cancelled()
        and life.exception() is not None
        and not sim._fatal.is_set()
    ):
        # A bug in the simulator itself: report it the way SGLang reports a scheduler crash.
        exc = life.exception()
        assert exc is not None
        text = "".join(traceback.format_exception(exc)).rstrip("\n")
        sim._fatal_log("Scheduler hit an exception: " + text)
    if sim._fatal.is_set():
        _die_like_sglang()
    if life.done() and not stop.is_set() and not sim._fatal.is_set():
        # The lifecycle ended without a fatal error or a stop: keep serving until SIGTERM.
        await asyncio.wait({stopper, serve_task}, return_when=asyncio.FIRST_COMPLETED)
    # Clean shutdown (SIGTERM/SIGINT), as uvicorn and SGLang report it.
    life.cancel()
    log.main(logfmt.uvicorn_info("Shutting down"))
    server.should_exit = True
    with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
        await asyncio.wait_for(serve_task, timeout=3)
    log.main(logfmt.uvicorn_info("Waiting for application shutdown."))
    log.main(logfmt.uvicorn_info("Application shutdown complete."))
    log.main(logfmt.uvicorn_info(f"Finished server process [{os.getpid()}]"))
    for task in (fatal, stopper, life, watcher):
        if task is not None:
            task.cancel()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m specconsole.sim``: parse, resolve, then load and serve (or fail) like SGLang."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parsed = parse_argv(argv)
    except SimArgError as exc:
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
        profile = load_profile(values.get("sim_profile") or default_profile_path())
    except ProfileError as exc:
        print(f"specconsole.sim: {exc}", file=sys.stderr)
        return 2
    if values.get("sim_engine_version"):  # the release it plays: /server_info, log wording
        sim = dataclasses.replace(profile.sim, version=values["sim_engine_version"])
        profile = dataclasses.replace(profile, sim=sim)
    tp = int(values.get("tp_size") or 1)
    log = LogWriter(tp)
    try:
        args = resolve(parsed, profile)
    except SimArgError as exc:
        log.raw(logfmt.argument_error_traceback(exc.exception_type, str(exc)))
        return 1
    log.min_level = LOG_LEVELS.get(args.log_level.lower(), logging.INFO)
    for warning in args.warnings:
        log.main(warning, level=logging.WARNING)
    opts = SimOptions.from_values(values, profile)
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        log.raw(
            logfmt.prefix() + f"ERROR:    [Errno {exc.errno}] error while attempting to "
            f"bind on address ({args.host!r}, {args.port}): {exc.strerror}"
        )
        return 1
    sim = SimServer(args, parsed, profile, opts, log)
    sim.port = sock.getsockname()[1]
    try:
        return asyncio.run(_serve(sim, sock))
    except KeyboardInterrupt:
        return 130
