"""How a run ends: its session status and exit code, the same for every front end.

Why: the headless sweep, the pool and the console all turn a final controller state into a
session status (``done``, ``paused``, ``interrupted``, ``error``, ``idle``) and a process exit
code; one table keeps them from disagreeing. The codes:

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

The console's ``q`` is a deliberate quit, not an interruption: it exits ``0`` whatever phase
it leaves (mid-trial, paused, at a crash banner), the session keeping its ``interrupted`` or
``paused`` status for ``resume``; its ``ctrl+c`` is an interrupt (``130``); failures still
exit ``1`` (``console_status``).
"""

from __future__ import annotations

from specconsole.core.machine.handlers.preflight import config_problems
from specconsole.core.machine.state import (
    ControllerState,
    Phase,
    TrialStatus,
)
from specconsole.core.plans.plan import SweepPlan
from specconsole.present.labels import (
    config_label,
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_PAUSED = 3
EXIT_INTERRUPTED = 130


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


def console_status(
    state: ControllerState, halted: str = "", *, deliberate: bool = False
) -> tuple[str, int]:
    """(session status, exit code) when the console quits: the headless rules, where a quit
    before the sweep finished is an interruption (``paused`` when the user paused it or a crash
    awaits a decision).
    A console that never started a sweep (only looked, deployed or benchmarked) is ``idle``.
    A ``deliberate`` quit (``q``, not ``ctrl+c``) is what the user asked for: it exits 0 where
    the session is only interrupted or paused (still ``interrupted``/``paused``, so ``resume``
    continues it); failures and halts keep their code."""
    if not halted and state.sweep_started_at is None:
        return "idle", EXIT_OK
    resting = state.phase in (Phase.AWAITING_DECISION, Phase.PAUSED, Phase.DONE)
    status, code = final_status(state, not resting, halted)
    if deliberate and code in (EXIT_INTERRUPTED, EXIT_PAUSED):
        return status, EXIT_OK
    return status, code


def plan_problems(plan: SweepPlan) -> list[str]:
    """Validation errors of every configuration the plan's grid names (checked up front, so a
    typo fails in a second instead of after the first trial's deploy). An ``optimize`` space only
    needs one valid configuration: the search itself never proposes an invalid one. A
    ``staged`` plan runs its stages, not the product of its axes: those are checked."""
    return config_problems(plan, label=lambda config: config_label(config, plan.base))
