"""Headless sweeps: the same controller, with line-by-line progress instead of a console.

Why: sweeps take hours on a real box and are often started from scripts, CI or a tmux pane
that nobody watches. The headless driver subscribes a printer to the controller, starts (or
resumes) the sweep, and turns the outcome into an exit code:

* ``0``: the sweep finished (plan complete or a budget reached; session status ``done``).
  Crashes are results, not failures: a sweep whose steps=10 trial crashed still completed.
* ``1``: the sweep could not run its trials: an operation failed (deploy, restart, benchmark
  error, connection lost) or a configuration was invalid in at least one trial, or the
  controller could not start; or the run stopped itself at once (session status ``error``):
  the session could not be written (a full disk) or the box could not be reached (host key,
  authentication, sudo that prompts, unreachable), with no trial recorded for it.
* ``3``: the crash policy is ``pause`` and a trial crashed. A headless run cannot wait for a
  decision, so it records the crash, leaves the server as it is and exits;
  ``specconsole resume SESSION`` continues with the next planned trial (the choice the
  console's ``r`` key makes), or re-run with ``--on-crash auto``.
* ``130``: interrupted (Ctrl-C / SIGTERM). The finished trials are on disk; resume continues.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from specconsole.controller.probe.serving import server_now
from specconsole.controller.wiring import Ports, wire_controller
from specconsole.core.config.model import ServerConfig
from specconsole.core.logs.events import LoadStage
from specconsole.core.machine import events as ev
from specconsole.core.machine.handlers.preflight import config_problems
from specconsole.core.machine.state import (
    ControllerState,
    LevelSummary,
    Notice,
    Phase,
    TrialRecord,
    TrialStatus,
)
from specconsole.core.measure.stats import half_width
from specconsole.core.plans.plan import CrashPolicy, SweepPlan
from specconsole.core.search.draftcost import draft_cost
from specconsole.core.search.strategy import findings
from specconsole.present.box import probe_lines
from specconsole.present.figures.draftcost import draft_cost_text
from specconsole.present.figures.gpu import brief as gpu_brief
from specconsole.present.figures.levels import level_verdicts
from specconsole.present.figures.progress import launch_block, state_glance
from specconsole.present.formats import format_int, format_rate_ci, format_ratio
from specconsole.present.labels import (
    config_label,
    load_stage_label,
    notice_text,
    record_label,
)
from specconsole.present.leaving import rollback_advice, rollback_command
from specconsole.present.runlog import deploy_lines, level_line, verdict
from specconsole.present.status import record_status
from specconsole.session.reports.levels_report import table_for
from specconsole.session.reports.report import render
from specconsole.session.store import Session

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_PAUSED = 3
EXIT_INTERRUPTED = 130


class ProgressPrinter:
    """Prints one line per meaningful change (phase, load stage, level, notice)."""

    def __init__(self, out: TextIO, plan: SweepPlan | None, *, prefix: str = "") -> None:
        self.out = out
        self.plan = plan
        self.prefix = prefix
        """Put before every line (a pool's box name: ``[gpu-a] ``)."""
        self._last: tuple[object, ...] = ()
        self._notice: Notice | None = None
        self._crash_reported: tuple[int, float] | None = None
        self._levels_printed: set[tuple[int, int, int]] = set()
        """(trial index, concurrency, run) of the level lines already printed."""
        self._stages: dict[int, LoadStage] = {}
        """The furthest load stage printed for each trial."""

    def _print(self, text: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"[{stamp}] {self.prefix}{text}", file=self.out, flush=True)

    def _label(self, record: TrialRecord) -> str:
        return record_label(record, self.plan.base if self.plan else None)

    def __call__(self, state: ControllerState, event: ev.Event) -> None:
        trial = state.trial
        # A trial's result comes before anything about the next one (the machine records a
        # trial and begins the next in one step, so both arrive in this snapshot).
        if isinstance(event, ev.TrialRecorded) and state.trials:
            self._summarise(state.trials[-1], state.trials)
            self._glance(state)
        elif isinstance(event, ev.StartSweep):
            self._glance(state)
        key = (state.phase, state.load_stage, trial.index if trial else None)
        if key != self._last and self._forward(state):
            self._last = key
            if trial is not None and state.phase is not Phase.RECORDING:
                stage = f" ({load_stage_label(state.load_stage)})" if state.load_stage else ""
                self._print(
                    f"trial {trial.index + 1}/{state.trial_total} {self._label(trial)}: "
                    f"{state.phase.value}{stage}"
                )
        if state.notice is not None and state.notice is not self._notice:
            self._notice = state.notice
            base = self.plan.base if self.plan else None
            if not isinstance(event, ev.BoxProbed):  # the probe's own lines say it, once
                self._print(f"{state.notice.level}: {notice_text(state.notice, base)}")
        if trial is not None:
            self._print_levels(trial.index, event)
        if isinstance(event, ev.DeployPreviewed):
            self._print_diff(event.diff)
        if isinstance(event, ev.BoxProbed):
            for line in probe_lines(event.probe):
                self._print(line)
        if (
            state.phase is Phase.CRASHED
            and trial is not None
            and trial.crash is not None
            and self._crash_reported != (trial.index, trial.started_at)
        ):
            self._crash_reported = (trial.index, trial.started_at)
            crash = trial.crash
            self._print(f"CRASH detected in {crash.phase.value}: {crash.cause}: {crash.message}")
            for fix in crash.fixes[:4]:
                self._print(f"  fix: {fix}")
        if isinstance(event, ev.ConnectionChanged):
            self._print(f"connection {event.state.value} {event.detail}".rstrip())

    def _forward(self, state: ControllerState) -> bool:
        """Load stages only move forward in the output: every TP rank logs its own weights
        and KV-cache lines, so the parsed stage can step back and forth; a stage at or
        before the furthest one printed for this trial is not printed again."""
        trial, stage = state.trial, state.load_stage
        if state.phase is not Phase.LOADING or trial is None or stage is None:
            return True
        order = list(LoadStage)
        seen = self._stages.get(trial.index)
        if seen is not None and order.index(stage) <= order.index(seen):
            return False
        self._stages[trial.index] = stage
        return True

    def _print_diff(self, diff: str) -> None:
        """The change the deploy makes on the box, flag by flag, before it is made (never a
        prompt); the unified diff is in the trial's record and the console's diff pane."""
        for line in deploy_lines(diff):
            self._print(f"  {line}")

    def _print_levels(self, trial: int, event: ev.Event) -> None:
        """A level's line as soon as it finishes (each run's, with ``[bench] repeats``); the
        ladder's result adds any not seen and, for repeated runs, each level's mean ± 95 %
        CI over them."""
        if isinstance(event, ev.BenchLevelFinished):
            lv, repeat = event.level, event.repeat
            if (trial, lv.concurrency, repeat) not in self._levels_printed:
                self._levels_printed.add((trial, lv.concurrency, repeat))
                run = f"run {repeat + 1} " if repeat else ""
                self._print(f"  {run}{self._level_line(lv)}")
        elif isinstance(event, ev.BenchFinished):
            for lv in event.levels:
                if lv.repeats > 1:
                    self._print(f"  mean of {lv.repeats} runs: {self._level_line(lv)}")
                elif (trial, lv.concurrency, 0) not in self._levels_printed:
                    self._levels_printed.add((trial, lv.concurrency, 0))
                    self._print(f"  {self._level_line(lv)}")

    @staticmethod
    def _level_line(lv: LevelSummary) -> str:
        return level_line(lv)

    def _glance(self, state: ControllerState) -> None:
        """Elapsed, the sweep's ETA and the current best (present.figures.progress), after each
        trial and as the sweep starts."""
        seen = state_glance(state, time.time())
        if seen is not None:
            self._print(f"  {seen.line}")

    def _summarise(self, record: TrialRecord, trials: tuple[TrialRecord, ...] = ()) -> None:
        parts = [f"trial {record.index + 1} {self._label(record)}: {record_status(record)}"]
        if record.capacity is not None:
            cost = draft_cost_text(draft_cost(record, trials), source=False)
            parts.append(f"capacity {format_int(record.capacity)}" + (f" ({cost})" if cost else ""))
        if record.single_request_tok_s is not None:
            ci = half_width(record.single_request_spread)
            parts.append(f"single {format_rate_ci(record.single_request_tok_s, ci, 1)} tok/s")
        if record.peak_aggregate_tok_s is not None:
            ci = half_width(record.peak_aggregate_spread)
            text = format_rate_ci(record.peak_aggregate_tok_s, ci, 1)
            parts.append(f"peak {text} tok/s (c={record.peak_concurrency})")
        if record.repeats > 1:
            parts.append(f"mean ± 95% CI over {record.repeats} runs")
        if record.accept_length is not None:
            parts.append(f"accept {format_ratio(record.accept_length)}")
        if record.speculation_off:
            parts.append(f"speculation off: {record.speculation_off}")
        if record.predicted is not None and not record.predicted.feasible:
            parts.append("predicted infeasible")
        if gpus := gpu_brief(record):
            parts.append(gpus)
        if record.errors:
            parts.append("; ".join(record.errors))
        self._print(", ".join(parts))


def exit_code_for(state: ControllerState, interrupted: bool = False, halted: str = "") -> int:
    """The headless exit code for the final state (see the module docstring)."""
    return final_status(state, interrupted, halted)[1]


def final_status(
    state: ControllerState, interrupted: bool = False, halted: str = ""
) -> tuple[str, int]:
    """(session status, exit code) of a run that ended in ``state``: ``done`` only when the
    sweep finished its plan (every trial run or skipped for a stated reason); otherwise
    ``error`` (a write error, a failure of reach, or stopped without finishing),
    ``interrupted`` or ``paused``, never with exit code 0."""
    if halted:
        return "error", EXIT_FAILED
    if interrupted:
        return "interrupted", EXIT_INTERRUPTED
    if state.phase in (Phase.AWAITING_DECISION, Phase.PAUSED):
        return "paused", EXIT_PAUSED
    if state.phase is not Phase.DONE or not state.finished_reason:
        return "error", EXIT_FAILED
    if any(t.status in (TrialStatus.FAILED, TrialStatus.INVALID) for t in state.trials):
        return "done", EXIT_FAILED
    return "done", EXIT_OK


RESUMABLE_STATUSES = ("paused", "interrupted")
"""Final statuses of a sweep still under way (``resume`` continues it)."""


def closing_meta(status: str) -> dict[str, object]:
    """What ``session.toml`` says once a run ends: its status, and ``sweep_active`` only for
    a sweep still under way (paused or interrupted) — a sweep that stopped for an error (a
    failure of reach, a write error) or finished is not active."""
    return {"status": status, "sweep_active": status in RESUMABLE_STATUSES}


def console_status(state: ControllerState, halted: str = "") -> tuple[str, int]:
    """(session status, exit code) when the console quits: the headless rules, where a quit
    before the sweep finished is an interruption (``paused`` when the user paused it or a crash
    awaits a decision).
    A console that never started a sweep (only looked, deployed or benchmarked) is ``idle``."""
    if not halted and state.sweep_started_at is None:
        return "idle", EXIT_OK
    resting = state.phase in (Phase.AWAITING_DECISION, Phase.PAUSED, Phase.DONE)
    return final_status(state, not resting, halted)


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
        launch_lines(plan, final.trials, session.path, printer)
    print("", file=out)
    print(render(final.trials, plan, "md"), file=out, flush=True)
    printer._print(verdict(final.trials, plan, session.path))
    return code


def launch_lines(
    plan: SweepPlan, trials: Sequence[TrialRecord], session: object, printer: ProgressPrinter
) -> None:
    """The best trial's exact launch at the end of a sweep, unprefixed so it can be copied
    (``present.figures.progress.launch_block``; secrets as references to their EnvironmentFile)."""
    block = launch_block(plan, trials, session)
    if block is not None:
        printer._print(block[0])
        printer.out.write(block[1])
        printer.out.flush()


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


def plan_problems(plan: SweepPlan) -> list[str]:
    """Validation errors of every configuration the plan's grid names (checked up front, so a
    typo fails in a second instead of after the first trial's deploy). An ``optimize`` space only
    needs one valid configuration: the search itself never proposes an invalid one. A
    ``staged`` plan runs its stages, not the product of its axes: those are checked."""
    return config_problems(plan, label=lambda config: config_label(config, plan.base))
