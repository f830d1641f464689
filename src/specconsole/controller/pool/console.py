"""The console's handle on a pool of boxes: one ``ControllerHandle`` over every box.

Why a handle and not a pool-aware console: the console already renders one controller's
snapshots and sends it intents (``ui.bridge.ControllerHandle``). On a pool it shows one box
at a time — the *focused* one: its header, crash banner, benchmark panel and journal, and
its keys act on it — plus what it cannot show of the others, carried on the same snapshot:

* ``trials`` is the whole pool's (each record names its box, the trials table shows it);
* ``lanes`` is one ``BoxLane`` per box (phase, trial, since when, last journal line).

``FocusBox`` switches the focused box: the console is sent that box's recent journal (kept
here, bounded, per box) as one ``LogLines``, so the pane shows its story, not the other
box's. ``StartSweep`` starts the sweep on every box of the pool, ``Quit`` quits them all;
every other intent goes to the focused box only (a crash decision is that box's).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace

from specconsole.controller.pool.run import Pool
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import BoxLane, ControllerState, Notice, Phase, TrialRecord

TAIL_LINES = 2_000
"""Journal lines kept per box for when the console switches to it."""

Subscriber = Callable[[ControllerState, ev.Event | None], None]


class PoolConsole:
    """Satisfies ``ui.bridge.ControllerHandle`` for a :class:`Pool`."""

    def __init__(self, pool: Pool, *, autostart: bool = False, tail_lines: int = TAIL_LINES):
        self.pool = pool
        self.autostart = autostart
        self.focus = next(iter(pool.runs))
        self._subscribers: list[Subscriber] = []
        self._tails: dict[str, deque[str]] = {name: deque(maxlen=tail_lines) for name in pool.runs}
        self._trials_key: tuple[int, ...] = ()
        self._trials: tuple[TrialRecord, ...] = ()
        self._notice: Notice | None = None
        """The pool's latest notice (a box left the pool, boxes not alike)."""
        self._notices_seen = 0
        pool.subscribe(self._on_box)

    # -- ControllerHandle ---------------------------------------------------------------------

    @property
    def state(self) -> ControllerState:
        """The focused box's snapshot, with the pool's trials and every box's lane."""
        runs = self.pool.runs
        focused = runs[self.focus].state
        notice = focused.notice
        if self._notice is not None and (notice is None or notice.at <= self._notice.at):
            notice = self._notice
        trial = focused.trial
        if trial is not None and not trial.box:
            trial = replace(trial, box=self.focus)  # the record gets it when it is written
        return replace(
            focused, trial=trial, trials=self._pool_trials(), lanes=self._lanes(), notice=notice
        )

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback)

    def send(self, event: ev.Event) -> None:
        if isinstance(event, ev.FocusBox):
            self._focus(event.box)
        elif isinstance(event, ev.StartSweep):
            self.pool.start_sweep()
        elif isinstance(event, ev.Quit):
            for run in self.pool.runs.values():
                run.controller.send(event)
        else:
            self.pool.send(self.focus, event)

    # -- running ------------------------------------------------------------------------------

    async def run(self) -> None:
        """The console's controller worker: every box's controller, until they all quit."""
        self.pool.start(sweep=self.autostart)
        tasks = [run.task for run in self.pool.runs.values() if run.task is not None]
        try:
            await asyncio.gather(*tasks)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*tasks, return_exceptions=True)
            raise

    # -- internals ----------------------------------------------------------------------------

    def _focus(self, box: str) -> None:
        run = self.pool.runs.get(box)
        if run is None or box == self.focus:
            return
        self.focus = box
        self._publish(self.state, ev.LogLines(lines=tuple(self._tails[box])))

    def _on_box(self, name: str, state: ControllerState, event: ev.Event | None) -> None:
        if len(self.pool.notices) > self._notices_seen:
            self._notices_seen = len(self.pool.notices)
            self._notice = Notice(level="warning", text=self.pool.notices[-1], at=time.time())
        if isinstance(event, ev.LogLines) and event.lines:
            self._tails[name].extend(event.lines)
            if name != self.focus:
                self._publish(self.state, None)  # its lane's last line changed
                return
        elif isinstance(event, ev.PoolChanged):
            return  # the pool's bookkeeping: nothing the console shows changed
        self._publish(self.state, event if name == self.focus else None)

    def _publish(self, state: ControllerState, event: ev.Event | None) -> None:
        for callback in list(self._subscribers):
            callback(state, event)

    def _pool_trials(self) -> tuple[TrialRecord, ...]:
        key = (len(self.pool.prior), *(len(r.state.trials) for r in self.pool.runs.values()))
        if key != self._trials_key:
            self._trials_key, self._trials = key, self.pool.trials
        return self._trials

    def _lanes(self) -> tuple[BoxLane, ...]:
        lanes = []
        for name, run in self.pool.runs.items():
            state = run.state
            trial = state.trial
            tail = self._tails[name]
            lanes.append(
                BoxLane(
                    box=name,
                    phase=state.phase,
                    phase_since=state.phase_since,
                    trial_index=None if trial is None else trial.index,
                    trial_config=None if trial is None else trial.effective,
                    tail=tail[-1] if tail else "",
                    crashed=state.phase is Phase.AWAITING_DECISION
                    and state.pending is not None
                    and state.pending.crash is not None,
                    removed=run.removed,
                )
            )
        return tuple(lanes)
