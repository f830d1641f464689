"""The console's handle on one box's controller, wired right after the console's first frame.

Why a handle and not the controller itself: wiring a controller (its transport, service
backend and load runner, the session recorder, the state machine and the log parser it runs)
is most of what ``specconsole tui``/``demo`` would otherwise load before the console can
draw anything, and the first frame needs none of it (``tests/test_startup_imports.py``).
So the console gets this handle at once — a ``ui.bridge.ControllerHandle`` and its
``BoxOps`` — and the console's controller worker, started after the first frame
(``ui.controller_worker``), calls :meth:`ConsoleController.run`, which wires the controller,
hands it the subscribers and the intents sent so far (the ``--start`` sweep), shows the
wired snapshot (the header's host, engine and service) and runs it. A box question asked
before that (the first deploy's diff) waits for the wiring; one asked after a wiring that
failed gets its error, as the console's message line does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from specconsole.core.machine.state import ControllerState
from specconsole.present.leaving import rollback_command

if TYPE_CHECKING:
    from specconsole.controller.wiring import ConsoleBox, Wired
    from specconsole.core.config.model import ServerConfig
    from specconsole.core.machine.intents import Event
    from specconsole.core.plans.plan import SweepPlan
    from specconsole.session.store import Session

Subscriber = Callable[[ControllerState, "Event | None"], None]

STOP_TIMEOUT_S = 30.0
"""How long closing waits for the server to stop when the console was asked to stop it."""


class ConsoleController:
    """``ControllerHandle`` and ``BoxOps`` for the console of one box (``commands.tui``)."""

    def __init__(
        self, plan: SweepPlan, session: Session, state: ControllerState, *, isolate_load: bool
    ) -> None:
        self.plan = plan
        self.session = session
        self._state = state
        self._isolate_load = isolate_load
        self._subscribers: list[Subscriber] = []
        self._unsubscribe: dict[int, Callable[[], None]] = {}
        self._early: list[Event] = []
        self._wiring_done = asyncio.Event()
        self._failed: Exception | None = None
        self.wired: Wired | None = None
        """The controller and what it owns, once :meth:`run` has wired it."""
        self._box: ConsoleBox | None = None

    # -- ControllerHandle -----------------------------------------------------------------------

    @property
    def state(self) -> ControllerState:
        """The controller's latest snapshot (before it is wired: the initial one)."""
        return self.wired.controller.state if self.wired is not None else self._state

    @property
    def halted(self) -> str:
        """Why the controller stopped itself at once ('' when it did not, or never ran)."""
        return self.wired.controller.halted if self.wired is not None else ""

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(state, event)`` after every transition; returns an unsubscriber."""
        self._subscribers.append(callback)
        if self.wired is not None:
            self._unsubscribe[id(callback)] = self.wired.controller.subscribe(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(callback)
            stop = self._unsubscribe.pop(id(callback), None)
            if stop is not None:
                stop()

        return unsubscribe

    def send(self, event: Event) -> None:
        """Queue an intent: for the controller, or until it is wired."""
        if self.wired is not None:
            self.wired.controller.send(event)
        else:
            self._early.append(event)

    # -- the run (the console's controller worker) ----------------------------------------------

    async def run(self) -> None:
        """Wire the controller, hand it what waited, show its snapshot and run it."""
        from specconsole.controller.wiring import ConsoleBox, wire_controller

        try:
            wired = wire_controller(
                self.plan, self.session, self._state, isolate_load=self._isolate_load
            )
        except Exception as exc:
            self._failed = exc
            raise
        finally:
            self._wiring_done.set()
        self.wired = wired
        self._box = ConsoleBox(wired, self.plan, str(self.session.path))
        controller = wired.controller
        for callback in self._subscribers:
            self._unsubscribe[id(callback)] = controller.subscribe(callback)
            callback(controller.state, None)  # the wired snapshot: host, engine, service
        early, self._early = self._early, []
        for event in early:
            controller.send(event)
        await controller.run()

    async def close(self, *, stop_server: bool) -> None:
        """After the console: close the session's recorder and the transport, stopping the
        server first when asked (bounded); nothing when the controller was never wired."""
        wired = self.wired
        if wired is None:
            return
        wired.recorder.close()
        if stop_server:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(wired.ports.backend.stop(), STOP_TIMEOUT_S)
        with contextlib.suppress(Exception):
            await wired.ports.transport.close()

    # -- BoxOps ---------------------------------------------------------------------------------

    @property
    def finally_action(self) -> str:
        return self.plan.finally_action

    @property
    def rollback_command(self) -> str:
        return rollback_command(str(self.session.path))

    async def preview(self, config: ServerConfig) -> str | None:
        """The redacted diff the controller's deploy of ``config`` would make now."""
        return await (await self._wired_box()).preview(config)

    async def finish(self, progress: Callable[[str], None]) -> tuple[str, bool]:
        """``[sweep] finally`` over the session's trials (``controller.finish``)."""
        return await (await self._wired_box()).finish(progress)

    async def _wired_box(self) -> ConsoleBox:
        """The box's operations once the controller is wired (waiting for it); a wiring that
        failed is the box's error (the console says it and changes nothing)."""
        await self._wiring_done.wait()
        if self._box is None:
            from specconsole.core.ports import TransportError

            raise TransportError(f"the controller could not be wired: {self._failed}")
        return self._box
