"""Headless sweeps on a pool of boxes: the single-box progress lines, prefixed by the box.

Why its own module: the pool runs one controller per box (``controller.fleet.pool``), so the
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
import functools
import signal
import sys
from collections.abc import Callable
from typing import TextIO

from specconsole.controller.finish import FinalOutcome, finish_box
from specconsole.controller.fleet.pool import BoxRun, Pool
from specconsole.controller.headless import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PAUSED,
    ProgressPrinter,
    closing_meta,
    run_headless,
)
from specconsole.controller.probe.serving import server_now
from specconsole.core.config.model import ServerConfig
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import (
    ControllerState,
    CrashPolicy,
    Phase,
    TrialRecord,
    TrialStatus,
)
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.search.fleet import as_port
from specconsole.core.search.strategy import findings
from specconsole.present.leaving import rollback_command
from specconsole.session.reports.report import render
from specconsole.session.store import Session


def pool_final_status(pool: Pool, interrupted: bool = False) -> tuple[str, int]:
    """(session status, exit code) of a pool run: ``done`` only when every box still in the
    pool finished the plan; ``interrupted``, ``paused`` or ``error`` otherwise (a box that
    halted on a write error, every box gone), never with exit code 0."""
    if interrupted:
        return "interrupted", EXIT_INTERRUPTED
    alive = pool.alive()
    if any(run.controller.halted for run in pool.runs.values()):
        return "error", EXIT_FAILED
    if any(run.state.phase is Phase.AWAITING_DECISION for run in alive):
        return "paused", EXIT_PAUSED
    if not alive or not all(
        run.state.phase is Phase.DONE and run.state.finished_reason for run in alive
    ):
        return "error", EXIT_FAILED
    if any(t.status in (TrialStatus.FAILED, TrialStatus.INVALID) for t in pool.trials):
        return "done", EXIT_FAILED
    return "done", EXIT_OK


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


async def servers_now(pool: Pool) -> list[tuple[str, str]]:
    """(box, what its server does right now) for every box still in the pool, asked side by
    side (``controller.probe.serving.server_now``; bounded, never raises)."""
    runs = pool.alive()

    def ran(run: BoxRun) -> tuple[TrialRecord, ...]:
        own = tuple(t for t in pool.trials if t.box == run.name)
        return own if run.state.trial is None else (*own, run.state.trial)

    said = await asyncio.gather(
        *(server_now(r.ports.backend, r.ports.transport, r.plan.base, ran(r)) for r in runs)
    )
    return [(run.name, now) for run, now in zip(runs, said, strict=True)]


async def finish_pool(
    pool: Pool, on_diff: Callable[[str, str], None]
) -> list[tuple[str, FinalOutcome]]:
    """``[sweep] finally`` on every box still in the pool, side by side (each waits for its
    own server, bounded by the load timeout): ``best`` is the best of the whole pool's
    trials, deployed on each box's own port and in its engine release's flag names.
    ``on_diff(box, diff)`` gets each change before it is made; returns (box, outcome) pairs."""
    runs = pool.alive()

    def for_box(run: BoxRun) -> Callable[[ServerConfig], ServerConfig]:
        return lambda config: run.controller.versioned(as_port(config, run.port))

    outcomes = await asyncio.gather(
        *(
            finish_box(
                run.plan,
                pool.trials,
                run.ports.backend,
                run.ports.transport,
                rollback_command=rollback_command(pool.session.path, run.name),
                on_diff=functools.partial(on_diff, run.name),
                for_box=for_box(run),
            )
            for run in runs
        )
    )
    return [(run.name, outcome) for run, outcome in zip(runs, outcomes, strict=True)]


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
