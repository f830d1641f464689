"""Running one plan on a pool of boxes: one ordinary controller per box, one shared session.

Why an orchestrator over per-box controllers instead of a pool-aware machine: a box's trial
is exactly the single-box trial (deploy, restart, watch, benchmark, record, crash policy),
so each box keeps its own pure machine and runtime, and this module only keeps their shared
view consistent:

* Whenever a box starts or records a trial, every other box is told (``PoolChanged``,
  applied synchronously with :meth:`Controller.apply`, so no box can pick its next trial
  before it knows what the others just took): the trials of its group and the
  configurations running elsewhere. Each machine's strategy then proposes with those as
  *pending* (the constant liar of ``core.search.strategy.next_trial``), trial indices stay unique
  across the pool, and ``[sweep] max_trials`` counts the whole pool.
* A box whose strategy had nothing left ("plan complete") while others still ran is started
  again when their results open new work (a crash above it opens a bisection).
* A crash pauses only that box under ``pause``; the others go on.
* A box whose connection is lost for good leaves the pool: its trial is recorded as
  ``cancelled`` ("box unreachable: re-queued") — a failure of reach is not a result — so
  another box runs it.
* Boxes are assumed alike; if a box's first capacity line differs by more than 1% from what
  another box's trials say for the same configuration (``core.search.pool.unlike_boxes``), the pool
  says so and moves that box into a group of its own, so their results are kept apart.
* Every record says which box ran it (``TrialRecord.box``); the session is written once
  (trials appended by each box's :class:`BoxRecorder`, one ``session.toml`` for the pool).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from specconsole.controller.runtime import Controller
from specconsole.controller.wiring import Ports, open_ports
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import (
    COUNTED_KINDS,
    ConnectionState,
    ControllerState,
    CrashPolicy,
    Phase,
    PoolView,
    TrialRecord,
    TrialStatus,
)
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.plans.pool import Box, box_port
from specconsole.core.search.pool import as_port, records_on_port, unlike_boxes
from specconsole.core.search.strategy import next_trial
from specconsole.present.labels import config_label
from specconsole.session.recorder import SessionRecorder
from specconsole.session.store import Session

RESTING = frozenset(
    {Phase.IDLE, Phase.DONE, Phase.PAUSED, Phase.CANCELLED, Phase.AWAITING_DECISION}
)
PoolSubscriber = Callable[[str, ControllerState, ev.Event | None], None]
"""``callback(box, state, event)``; ``event`` None for a pool notice (``Pool.notices``)."""


def box_plan(plan: SweepPlan, box: Box) -> SweepPlan:
    """The single-box plan ``box`` runs: its profile, its port, no pool."""
    port = box_port(box, plan.base.port)
    service = box.profile.service
    if "{port}" in service.run_dir:
        service = replace(service, run_dir=service.run_dir.replace("{port}", str(port)))
    return replace(
        plan,
        base=as_port(plan.base, port),
        profile=replace(box.profile, service=service),
        boxes=(),
    )


@dataclass
class BoxRun:
    """One member of the pool while it runs."""

    box: Box
    plan: SweepPlan
    ports: Ports
    controller: Controller
    task: asyncio.Task[None] | None = None
    group: int = 0
    removed: str = ""
    """Why the box left the pool ('' while it is in it)."""
    sent: PoolView | None = None

    @property
    def name(self) -> str:
        return self.box.name

    @property
    def state(self) -> ControllerState:
        return self.controller.state

    @property
    def port(self) -> int:
        return self.plan.base.port


class BoxRecorder:
    """A box's ``TrialRecorder``: the shared session's, with the box's name on each record."""

    def __init__(self, pool: Pool, name: str) -> None:
        self.pool = pool
        self.name = name

    def record(self, record: TrialRecord, bench: dict[str, Any] | None) -> TrialRecord:
        run = self.pool.runs[self.name]
        if run.state.connection is ConnectionState.LOST and record.status in (
            TrialStatus.FAILED,
            TrialStatus.CANCELLED,
        ):  # a failure of reach is not a result: another box runs it again
            note = f"box {self.name} unreachable: re-queued"
            record = replace(record, status=TrialStatus.CANCELLED, note=note)
        record = replace(record, box=self.name)
        # the session keeps the configuration on the plan's port (the trial's identity, the
        # same on every box); the box's machine keeps it on the box's own port
        (shared,) = records_on_port([record], self.pool.plan.base.port)
        written = self.pool.recorder.record(shared, bench)
        return replace(written, config=record.config)

    def save(self, state: ControllerState) -> None:
        self.pool.save()

    def log_lines(self, trial_index: int | None, lines: tuple[str, ...]) -> None:
        self.pool.recorder.log_lines(trial_index, lines)


@dataclass
class Pool:
    """Runs ``plan`` (whose ``boxes`` name the pool) on every box at once."""

    plan: SweepPlan
    session: Session
    policy: CrashPolicy | None = None
    prior: tuple[TrialRecord, ...] = ()
    """Trials recorded before (a resumed session)."""
    connect: Callable[..., Ports] = open_ports
    runs: dict[str, BoxRun] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    _subscribers: list[PoolSubscriber] = field(default_factory=list)
    _busy: bool = False
    _dirty: bool = False
    _unlike_seen: set[tuple[str, str]] = field(default_factory=set)
    _marks: dict[str, tuple[object, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.recorder = SessionRecorder(self.session, host="pool", base=self.plan.base)
        for box in self.plan.boxes:
            self._add(box)

    def _add(self, box: Box) -> None:
        plan = box_plan(self.plan, box)
        holder: list[Controller] = []

        def on_connection(event: ev.Event) -> None:
            if holder:
                holder[0].send(event)

        ports = self.connect(
            plan.profile, on_connection, placement=plan.bench_placement, bench_url=plan.bench_url
        )
        host = plan.profile.host
        state = ControllerState(
            plan=plan,
            policy=self.policy or plan.on_crash,
            labels=(
                ("box", box.name),
                ("host", host.alias or host.hostname or ports.transport.description),
                ("engine", plan.base.engine),
                ("service", ports.backend.description),
            ),
            pool=PoolView(box=box.name),
        )
        controller = ports.controller(state, recorder=BoxRecorder(self, box.name))
        holder.append(controller)
        self.runs[box.name] = BoxRun(box=box, plan=plan, ports=ports, controller=controller)
        controller.subscribe(lambda s, e, name=box.name: self._on_box(name, s, e))

    # -- public -------------------------------------------------------------------------------

    def subscribe(self, callback: PoolSubscriber) -> None:
        self._subscribers.append(callback)

    @property
    def trials(self) -> tuple[TrialRecord, ...]:
        """Every trial of the session (prior ones first), in index order."""
        mine = [t for run in self.runs.values() for t in run.state.trials]
        mine = list(records_on_port(mine, self.plan.base.port))
        return (*self.prior, *sorted(mine, key=lambda t: t.index))

    def alive(self) -> list[BoxRun]:
        return [run for run in self.runs.values() if not run.removed]

    async def run(self) -> None:
        """Start every box's sweep and return once nothing more can happen without a
        decision (every box done, paused, awaiting a decision or out of the pool)."""
        self.start()
        await self.finished.wait()

    def start(self, *, sweep: bool = True) -> None:
        """Start every box's controller (call from the event loop); ``sweep`` also starts
        the sweep (the console waits for ``s`` instead)."""
        for run in self.runs.values():
            run.task = asyncio.ensure_future(run.controller.run())
        self._sync_now()  # every box knows the prior trials before it picks
        if sweep:
            self.start_sweep()

    def start_sweep(self) -> None:
        """Start (or continue) the sweep on every box still in the pool."""
        for run in self.alive():
            run.controller.send(ev.StartSweep(plan=run.plan, policy=run.state.policy))

    def send(self, name: str, event: ev.Event) -> None:
        """An intent for one box (the console's keys act on the selected box)."""
        self.runs[name].controller.send(event)

    async def close(self, *, stop_server: bool = False) -> None:
        """Quit every box's controller and close its transport."""
        for run in self.runs.values():
            run.controller.send(ev.Quit(stop_server=stop_server))
        for run in self.runs.values():
            if run.task is not None:
                with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(run.task, 60)
            with contextlib.suppress(Exception):
                await run.ports.transport.close()
        self.recorder.close()
        self.save()

    def save(self) -> None:
        phases = {run.name: run.removed or run.state.phase.value for run in self.runs.values()}
        alive = self.alive()
        if any(r.state.busy for r in alive):
            status = "running"
        elif any(r.state.phase is Phase.AWAITING_DECISION for r in alive):
            status = Phase.AWAITING_DECISION.value
        else:
            status = Phase.DONE.value if self.finished.is_set() else "running"
        self.session.write_meta(
            {
                "status": status,
                "trials": len(self.trials),
                "sweep_active": any(r.state.sweep_active for r in alive),
                "finished_reason": "; ".join(
                    sorted({r.state.finished_reason for r in alive if r.state.finished_reason})
                ),
                "policy": (self.policy or self.plan.on_crash).value,
                "host": "pool: " + ", ".join(self.runs),
                "service": ", ".join(sorted({r.ports.backend.description for r in alive})),
                "boxes": phases,
            }
        )

    # -- keeping the boxes' view consistent ---------------------------------------------------

    def _on_box(self, name: str, state: ControllerState, event: ev.Event) -> None:
        for callback in list(self._subscribers):
            callback(name, state, event)
        if isinstance(event, ev.PoolChanged):
            return
        # only what can change the others' view (log lines and progress ticks cannot)
        mark = (
            state.phase,
            None if state.trial is None else state.trial.index,
            len(state.trials),
            state.connection,
        )
        if self._marks.get(name) != mark:
            self._marks[name] = mark
            self._sync_now()

    def _notice(self, name: str, text: str) -> None:
        self.notices.append(f"{name}: {text}")
        for callback in list(self._subscribers):
            callback(name, self.runs[name].state, None)

    def _sync_now(self) -> None:
        """Bring every box's view up to date; re-entrant calls only mark it dirty."""
        if self._busy:
            self._dirty = True
            return
        self._busy = True
        try:
            for _ in range(50):  # each round settles at least one box
                self._dirty = False
                self._sync()
                if not self._dirty:
                    break
        finally:
            self._busy = False

    def _sync(self) -> None:
        for run in self.alive():
            if run.state.connection is ConnectionState.LOST:
                self._remove(run, "unreachable")
        self._check_alike()
        for run in self.alive():
            view = self._view(run)
            if view != run.sent:
                run.sent = view
                run.controller.apply(ev.PoolChanged(view=view))
        for run in self.alive():
            if self._should_wake(run):  # one per round: the next sees what this one took
                run.controller.apply(ev.StartSweep(plan=run.plan, policy=run.state.policy))
                self._dirty = True
                return
        alive = self.alive()
        settled = all(r.state.phase in RESTING and not r.state.busy for r in alive)
        if settled and not self.finished.is_set() and self._started():
            self.finished.set()
            self.save()

    def _started(self) -> bool:
        return all(r.state.sweep_started_at is not None or r.removed for r in self.runs.values())

    def _view(self, run: BoxRun) -> PoolView:
        others = [r for r in self.runs.values() if r is not run]
        trials = [*self.prior] if run.group == 0 else []
        for other in others:
            if other.group == run.group:
                trials += other.state.trials
        running = [
            as_port(o.state.trial.config, run.port)
            for o in others
            if not o.removed and o.state.trial is not None
        ]
        indices = len(self.prior) + sum(
            len(o.state.trials) + (o.state.trial is not None) for o in others
        )
        counted = sum(1 for t in self.prior if t.kind in COUNTED_KINDS) + sum(
            sum(1 for t in o.state.trials if t.kind in COUNTED_KINDS)
            + (o.state.trial is not None and not o.removed)
            for o in others
        )
        return PoolView(
            box=run.name,
            trials=records_on_port(sorted(trials, key=lambda t: t.index), run.port),
            running=tuple(running),
            indices=indices,
            counted=counted,
        )

    def _should_wake(self, run: BoxRun) -> bool:
        """A box that ran out of work while others ran, now that there is work again."""
        state = run.state
        if state.phase is not Phase.DONE or state.finished_reason != "plan complete":
            return False
        view = run.sent or PoolView(box=run.name)
        proposal = next_trial(
            run.plan,
            (*view.trials, *state.trials),
            state.skipped_configs,
            pending=view.running,
        )
        return proposal is not None

    def _remove(self, run: BoxRun, why: str) -> None:
        run.removed = why
        trial = run.state.trial
        if trial is not None:
            run.controller.apply(ev.Cancel())
        run.controller.send(ev.Quit())
        again = f"; its trial {trial.index + 1} is re-queued" if trial is not None else ""
        self._notice(run.name, f"box {run.name} is {why}: it leaves the pool{again}")

    def _check_alike(self) -> None:
        port = self.plan.base.port
        by_box = {
            r.name: records_on_port(r.state.trials, port)
            for r in self.runs.values()
            if r.state.trials
        }
        if len(by_box) < 2:
            return
        label = lambda cfg: config_label(cfg, self.plan.base)  # noqa: E731
        for unlike in unlike_boxes(by_box, label):
            pair = (unlike.box, unlike.other)
            if pair in self._unlike_seen or (pair[1], pair[0]) in self._unlike_seen:
                continue
            self._unlike_seen.add(pair)
            run = self.runs[unlike.box]
            if run.group == self.runs[unlike.other].group:
                run.group = 1 + max(r.group for r in self.runs.values())
            self._notice(unlike.box, unlike.message())
