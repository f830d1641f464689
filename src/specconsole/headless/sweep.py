"""Headless sweeps: the same controller, with line-by-line progress instead of a console.

Why: a sweep started from a script, CI or an unwatched tmux pane needs no screen. The headless
driver subscribes a printer (:mod:`.printer`) to the controller, starts (or resumes) the sweep,
carries out ``[sweep] finally`` and turns the outcome into an exit code
(:mod:`specconsole.controller.outcome` says which and why).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from specconsole.controller.outcome import EXIT_FAILED, EXIT_OK, closing_meta, final_status
from specconsole.controller.probe.serving import server_now
from specconsole.controller.wiring import Ports, wire_controller
from specconsole.core.config.model import ServerConfig
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import (
    ControllerState,
    Phase,
    TrialRecord,
)
from specconsole.core.plans.plan import CrashPolicy, SweepPlan
from specconsole.core.search.strategy import findings
from specconsole.headless.printer import ProgressPrinter, launch_lines
from specconsole.present.figures.levels import level_verdicts
from specconsole.present.figures.proof import proof_lines
from specconsole.present.leaving import rollback_advice, rollback_command
from specconsole.present.runlog import verdict
from specconsole.session.reports.levels_report import table_for
from specconsole.session.reports.report import render
from specconsole.session.store import Session


async def run_headless(
    plan: SweepPlan,
    session: Session,
    *,
    policy: CrashPolicy | None = None,
    resume: bool = False,
    out: TextIO = sys.stdout,
) -> int:
    """Run (or resume) a sweep to its end; returns the exit code."""
    policy = policy or plan.on_crash
    trials = tuple(session.load_trials())
    state = ControllerState(plan=plan, policy=policy, trials=trials)
    wired = wire_controller(plan, session, state, stop_on_finish=True)
    controller, ports, recorder = wired.controller, wired.ports, wired.recorder
    controller.stop_if_unreachable = True  # the probe's failure of reach ends it before trial 1
    printer = ProgressPrinter(out, plan)
    controller.subscribe(printer)
    interrupted = False

    def on_decision(state: ControllerState, event: ev.Event) -> None:
        if state.phase is Phase.AWAITING_DECISION and not state.quitting:
            own = None if resume or state.box is None else state.box.running_config
            down = state.deployed is None or not state.deployed.serving
            command = rollback_command(session.path)
            advice = rollback_advice(state.trials, plan.base, command, original=own)
            printer._print(
                "paused after a crash (policy 'pause'): a headless run cannot wait for a "
                f"decision. Resume with: specconsole resume {session.path}"
                + (f" . The server is down. {advice}" if down else "")
            )
            controller.send(ev.Quit())

    controller.subscribe(on_decision)

    def on_signal() -> None:
        nonlocal interrupted
        interrupted = True
        printer._print("interrupted: stopping the sweep (the server is not stopped); resume later")
        controller.send(ev.Quit())

    loop = asyncio.get_running_loop()
    installed: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal)
            installed.append(sig)
    if resume:
        printer._print(f"resuming {session.path} ({len(trials)} trials recorded)")
    else:
        printer._print(f"session {session.path}")
    controller.send(ev.StartSweep(plan=plan, policy=policy, resume=resume))
    finish_failed = False
    try:
        await controller.run()
        final = controller.state
        if final.phase is Phase.DONE and not controller.halted and not interrupted:
            finish_failed = await leave_box(
                plan,
                final.trials,
                wired.ports,
                printer,
                rollback_command=rollback_command(session.path),
                for_box=controller.versioned,
            )
        if final.box is None or final.box.reachable:  # every way out: the server's real state
            ran = (*final.trials, *(() if final.trial is None else (final.trial,)))
            now = await server_now(ports.backend, ports.transport, plan.base, ran)
            printer._print(f"the box now: {now}")
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        recorder.close()
        with contextlib.suppress(Exception):
            await ports.transport.close()
    final = controller.state
    status, code = final_status(final, interrupted, controller.halted)
    if finish_failed and code == EXIT_OK:
        code = EXIT_FAILED
    if controller.halted:
        printer._print(
            f"error: {controller.halted}; the sweep stopped (the server was not touched "
            f"after that; every recorded trial is kept). Fix it, then: specconsole resume "
            f"{session.path}"
        )
    elif status == "error":
        printer._print(f"error: the sweep stopped before finishing its plan ({final.phase.value})")
    with contextlib.suppress(Exception):  # a full disk may refuse even this
        session.write_meta(
            {**closing_meta(status), "finished_reason": final.finished_reason or controller.halted}
        )
    if final.phase is Phase.DONE:
        for line in findings(plan, final.trials):
            printer._print(line)
        for line in level_verdicts(table_for(final.trials, plan), plan.base, plan.noise_pct):
            printer._print(line)  # per level: the schedule, where speculation stops paying
        for line in proof_lines(plan, final.trials):
            printer._print(line)  # the schedule's edges, what ran, acceptance per category
        launch_lines(plan, final.trials, session.path, printer)
    print("", file=out)
    print(render(final.trials, plan, "md"), file=out, flush=True)
    printer._print(verdict(final.trials, plan, session.path))
    return code


async def leave_box(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    ports: Ports,
    printer: ProgressPrinter,
    *,
    rollback_command: str,
    for_box: Callable[[ServerConfig], ServerConfig],
) -> bool:
    """``[sweep] finally`` after a finished sweep, reported line by line; True when it
    changed the box and the box does not serve (the exit code says so). ``trials`` are the
    sweep's (a pool's: every box's, so each box is left on the pool's best)."""
    from specconsole.controller.finish import finish_box

    outcome = await finish_box(
        plan,
        trials,
        ports.backend,
        ports.transport,
        rollback_command=rollback_command,
        on_diff=printer._print_diff,
        for_box=for_box,
    )
    printer._print(outcome.message)
    return outcome.failed
