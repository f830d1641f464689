"""How a pool's run ends: its status and exit code, what each box serves now, and
``[sweep] finally`` on every box still in the pool.

Why apart from the front ends: the headless pool sweep and the console quitting a pool leave
the boxes alike (``best`` meaning the best of the *pool's* trials, deployed on each box's own
port and in its engine release's flag names), so both call these.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable

from specconsole.controller.finish import FinalOutcome, finish_box
from specconsole.controller.outcome import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PAUSED,
)
from specconsole.controller.pool.run import BoxRun, Pool
from specconsole.controller.probe.serving import server_now
from specconsole.core.config.model import ServerConfig
from specconsole.core.machine.state import (
    Phase,
    TrialRecord,
    TrialStatus,
)
from specconsole.core.search.pool import as_port
from specconsole.present.leaving import rollback_command


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
