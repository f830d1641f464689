"""Headless sweeps on a pool of boxes: the single-box progress lines, prefixed by the box.

Why its own module: the pool runs one controller per box (``controller.pool.run``), so the
headless driver subscribes one :class:`ProgressPrinter` per box (each line starts with
``[BOX]``), prints the pool's own notices (a box leaving the pool, boxes that are not alike),
waits until nothing more can happen without a decision, carries out ``[sweep] finally`` on
every box still in the pool once all of them finished (``best``: the pool's best trial, so
every box ends on the same winner), and turns the outcome into the same exit codes as a
one-box sweep: ``0`` finished, ``1`` a trial could not run, every box left the pool or a box
changed by ``finally`` does not serve, ``3`` a box paused after a crash (``specconsole
resume`` continues), ``130`` interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import TextIO

from specconsole.controller.outcome import (
    EXIT_FAILED,
    EXIT_OK,
    closing_meta,
)
from specconsole.controller.pool.finish import finish_pool, pool_final_status, servers_now
from specconsole.controller.pool.run import Pool
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import (
    ControllerState,
    CrashPolicy,
    Phase,
)
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.search.strategy import findings
from specconsole.headless.printer import ProgressPrinter
from specconsole.headless.sweep import run_headless
from specconsole.session.reports.report import render
from specconsole.session.store import Session


async def run_pool_headless(
    plan: SweepPlan,
    session: Session,
    *,
    policy: CrashPolicy | None = None,
    resume: bool = False,
    out: TextIO = sys.stdout,
) -> int:
    """Run (or resume) a pool sweep until nothing more can happen; returns the exit code."""
    prior = tuple(session.load_trials())
    pool = Pool(plan, session, policy=policy, prior=prior)
    printers = {name: ProgressPrinter(out, plan, prefix=f"[{name}] ") for name in pool.runs}
    general = ProgressPrinter(out, plan, prefix="[pool] ")
    shown = 0

    def on_box(name: str, state: ControllerState, event: ev.Event | None) -> None:
        nonlocal shown
        if event is not None:
            printers[name](state, event)
        while shown < len(pool.notices):
            general._print(pool.notices[shown])
            shown += 1

    pool.subscribe(on_box)
    interrupted = False

    def on_signal() -> None:
        nonlocal interrupted
        interrupted = True
        general._print("interrupted: stopping the sweep (no server is stopped); resume later")
        pool.finished.set()

    loop = asyncio.get_running_loop()
    installed: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal)
            installed.append(sig)
    what = f"resuming {session.path} ({len(prior)} trials recorded)" if resume else session.path
    general._print(f"session {what} on {len(pool.runs)} boxes: {', '.join(pool.runs)}")
    finish_failed = False
    try:
        await pool.run()
        if pool_final_status(pool, interrupted)[0] == "done":
            finished = await finish_pool(pool, lambda box, diff: printers[box]._print_diff(diff))
            for box, outcome in finished:
                printers[box]._print(outcome.message)
            finish_failed = any(outcome.failed for _, outcome in finished)
        for name, now in await servers_now(pool):  # every way out: each server's real state
            printers[name]._print(f"the box now: {now}")
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        await pool.close()
    status, code = pool_final_status(pool, interrupted)
    if finish_failed and code == EXIT_OK:
        code = EXIT_FAILED
    with contextlib.suppress(Exception):  # a full disk may refuse even this
        session.write_meta(closing_meta(status))
    paused = [r.name for r in pool.alive() if r.state.phase is Phase.AWAITING_DECISION]
    if paused:
        general._print(
            f"paused after a crash on {', '.join(paused)} (policy 'pause'): a headless run "
            f"cannot wait for a decision. Resume with: specconsole resume {session.path}"
        )
    trials = pool.trials
    if code == EXIT_OK:
        for line in findings(plan, trials):
            general._print(line)
    print("", file=out)
    print(render(trials, plan, "md"), file=out, flush=True)
    return code


async def sweep_headless(
    plan: SweepPlan,
    session: Session,
    *,
    policy: CrashPolicy | None = None,
    resume: bool = False,
    out: TextIO = sys.stdout,
) -> int:
    """The headless sweep for any plan: a pool's (``plan.boxes``) or one box's."""
    run = run_pool_headless if plan.boxes else run_headless
    return await run(plan, session, policy=policy, resume=resume, out=out)
