"""Entry point of the benchmark runner when it runs on the GPU box itself.

Why: at high concurrency an SSH tunnel (or the console host's CPU) can become the bottleneck,
so the load can be generated next to the server. This module is what the self-contained
script (built by :mod:`specconsole.bench.remote_runner`) calls: it runs the same ladder
engine over the stdlib HTTP client and reports on stdout as JSON lines:

* ``{"type": "hello", "pid": ..., "python": "3.11.4"}`` first (the pid lets the console stop
  the run with SIGINT),
* ``{"type": "progress", ...BenchProgress fields...}`` at most every 50 ms, and once per
  finished level with ``level_result`` (the level's ``LevelMetrics.to_record()``),
* ``{"type": "result", "result": BenchResult.to_dict()}`` at the end (partial after SIGINT,
  SIGTERM or SIGHUP: the run is cancelled, what finished is kept),
* ``{"type": "error", "message": ...}`` when the run could not start.

Standard library only, Python 3.10+.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

from specconsole.bench.ladder import LadderPlan
from specconsole.bench.ladder_run import LadderRun
from specconsole.bench.wire.eventloop import new_event_loop
from specconsole.bench.wire.rawhttp import RawStreamClient

PROGRESS_INTERVAL_S = 0.05
"""Minimum spacing of progress lines (phase ends are always reported)."""


class _Reporter:
    """Writes JSON lines to stdout, throttling progress; a closed pipe cancels the run."""

    def __init__(self) -> None:
        self.run: LadderRun | None = None
        self._last = 0.0

    def send(self, message: dict[str, Any]) -> None:
        try:
            sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
            sys.stdout.flush()
        except (BrokenPipeError, OSError):
            if self.run is not None:
                self.run.cancel()

    def progress(self, event: dict[str, Any]) -> None:
        now = time.monotonic()
        level = event.get("level_result")
        if level is not None:  # a finished level: never throttled, metrics as a record
            self._last = now
            self.send({"type": "progress", **event, "level_result": level.to_record()})
            return
        final = event["running"] == 0 and event["completed"] + event["failed"] >= event["total"]
        if now - self._last < PROGRESS_INTERVAL_S and not final:
            return
        self._last = now
        self.send({"type": "progress", **event})


def main(plan_json: str, base_url: str) -> int:
    """Run the plan against ``base_url`` and report on stdout; returns the exit status."""
    reporter = _Reporter()
    reporter.send({"type": "hello", "pid": os.getpid(), "python": sys.version.split()[0]})
    try:
        plan = LadderPlan.from_dict(json.loads(plan_json))
        run = LadderRun(
            plan,
            lambda c: RawStreamClient(
                base_url, c, timeout_s=plan.request_timeout_s, headers=plan.headers
            ),
            on_progress=reporter.progress,
        )
    except (ValueError, KeyError, TypeError) as exc:
        reporter.send({"type": "error", "message": f"bad plan: {exc}"})
        return 2
    reporter.run = run
    loop = new_event_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, run.cancel)
    try:
        result = loop.run_until_complete(run.run())
        # Sent while the loop's handlers still turn a late stop signal into a no-op cancel:
        # once the loop is closed, a second SIGINT would be a KeyboardInterrupt (and SIGTERM
        # the default death) before the result is out, losing what was measured.
        reporter.send({"type": "result", "result": result.to_dict()})
    finally:
        loop.close()
    return 0
