"""Building the controller's ports from a host profile.

Why here and not in each front end: the console, the headless sweep and the demo all need
"this profile → a transport, a service backend and a benchmark runner", and the connection
events of the SSH transport must reach the controller as ``ConnectionChanged``. One function
does that wiring; the adapters are built by their own factories
(``specconsole.remote.make_transport``/``make_backend`` and
``specconsole.bench.runner.make_runner`` for the plan's ``[bench] placement``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace

from specconsole.controller.probe.engine_detect import EngineVersionInfo, recorded_engine_version
from specconsole.controller.probe.flagcheck import FlagSetKeeper
from specconsole.controller.probe.modelfacts import ModelFactsKeeper
from specconsole.controller.probe.preflight import box_target, preflight_hook
from specconsole.controller.runtime import Controller
from specconsole.core.boxfacts import BoxProbe
from specconsole.core.config.model import ServerConfig
from specconsole.core.machine import events as ev
from specconsole.core.machine.results import deploy_previewed
from specconsole.core.machine.state import ConnectionState, ControllerState
from specconsole.core.plans.plan import PlanError, SweepPlan
from specconsole.core.plans.profile import Profile
from specconsole.core.ports import (
    BenchmarkRunner,
    Placement,
    ServiceBackend,
    Transport,
)
from specconsole.present.leaving import deploying_line, rollback_command
from specconsole.session.files import SessionError
from specconsole.session.history import last_session_costs
from specconsole.session.recorder import SessionRecorder
from specconsole.session.store import Session


@dataclass
class Ports:
    """Everything the controller talks through."""

    transport: Transport
    backend: ServiceBackend
    runner: BenchmarkRunner

    def controller(
        self,
        state: ControllerState,
        *,
        recorder: SessionRecorder | None = None,
        stop_on_finish: bool = False,
        on_engine_version: Callable[[EngineVersionInfo], None] | None = None,
        on_probe: Callable[[BoxProbe], None] | None = None,
    ) -> Controller:
        """A controller talking through these ports, starting from ``state``; it probes the
        box (reach, engine release, GPUs, service, serving) before its first event
        (``on_probe`` records it; ``on_engine_version`` records the release)."""
        controller = Controller(
            transport=self.transport,
            backend=self.backend,
            runner=self.runner,
            state=state,
            recorder=recorder,
            stop_on_finish=stop_on_finish,
            detect_engine=True,
            on_engine_version=on_engine_version,
            probe=True,
            on_probe=on_probe,
        )
        if state.plan is not None:  # checked before the first deploy (controller.probe.preflight)
            controller.preflight = preflight_hook(state.plan, box_target(state.plan))
        return controller


def open_ports(
    profile: Profile,
    on_event: Callable[[ev.Event], None] | None = None,
    *,
    placement: Placement | str = Placement.FORWARD,
    bench_url: str | None = None,
    isolate_load: bool = False,
) -> Ports:
    """Transport, backend and runner for ``profile``; connection changes go to ``on_event``.

    The adapters come from ``specconsole.remote.make_transport``/``make_backend``; the
    benchmark runner from ``specconsole.bench.runner.make_runner`` for ``placement``
    (``bench_url``: the direct placement's own address of the server; ``isolate_load``: the
    load of a direct or forward placement in a child process — the console's).
    """
    from specconsole.bench.runner import make_runner
    from specconsole.remote import make_backend, make_transport
    from specconsole.remote.transport.connection import ConnectionEvent

    states = {  # a drop is "reconnecting" until the last attempt fails
        ConnectionEvent.CONNECTED: ConnectionState.CONNECTED,
        ConnectionEvent.RECONNECTED: ConnectionState.CONNECTED,
        ConnectionEvent.LOST: ConnectionState.RECONNECTING,
        ConnectionEvent.FAILED: ConnectionState.LOST,
    }

    def listener(event: ConnectionEvent, detail: str) -> None:
        if on_event is not None:
            on_event(ev.ConnectionChanged(state=states[event], detail=detail))

    transport = make_transport(profile, on_event=listener)
    isolated = None
    if isolate_load:
        from specconsole.remote.transport.local import LocalTransport

        isolated = (LocalTransport(), sys.executable)
    return Ports(
        transport=transport,
        backend=make_backend(profile, transport),
        runner=make_runner(placement, transport, url=bench_url, isolated=isolated),
    )


@dataclass
class Wired:
    """A controller wired to a plan's box and a session folder, with what it owns."""

    controller: Controller
    ports: Ports
    recorder: SessionRecorder


def wire_controller(
    plan: SweepPlan,
    session: Session,
    state: ControllerState,
    *,
    stop_on_finish: bool = False,
    isolate_load: bool = False,
) -> Wired:
    """The controller for ``plan``'s box recording into ``session``, starting from ``state``.

    Connection changes of the transport are fed back to the controller as events. The caller
    runs ``controller.run()`` and closes ``recorder`` and ``ports.transport`` afterwards.
    (Added for the console, ``specconsole tui``/``demo``; same recipe as ``run_headless``.)
    ``plan``'s placeholders must be resolved (``controller.localplan.resolve_local_placeholders``).
    """
    if plan.auto_port:
        raise PlanError(
            '[server] port = "auto" was not resolved to a port: resolve the plan with '
            "resolve_local_placeholders() before creating its session"
        )
    box: list[Controller] = []

    def on_connection(event: ev.Event) -> None:
        if box:
            box[0].send(event)

    ports = open_ports(
        plan.profile,
        on_connection,
        placement=plan.bench_placement,
        bench_url=plan.bench_url,
        isolate_load=isolate_load,
    )
    recorder = SessionRecorder(
        session,
        host=ports.transport.description,
        service=ports.backend.description,
        base=plan.base,
    )
    if not state.labels:  # what views show as "host · engine · service"
        host = plan.profile.host
        state = replace(
            state,
            labels=(
                ("host", host.alias or host.hostname or ports.transport.description),
                ("engine", plan.base.engine),
                ("service", ports.backend.description),
            ),
        )
    if state.eta_prior is None:  # the ETA's guess before this session's first trial
        state = replace(state, eta_prior=last_session_costs(session, plan))
    controller = ports.controller(
        state,
        recorder=recorder,
        stop_on_finish=stop_on_finish,
        on_engine_version=lambda info: session.write_meta(info.meta()),
        on_probe=recorder.record_probe,
    )
    if controller.engine_versions is not None:  # the box's binary's --help, once per binary
        controller.engine_versions.flags = FlagSetKeeper(ports.transport, session.path / "flags")
        controller.model_facts = ModelFactsKeeper(ports.transport)  # for each trial's forecast
    if controller.engine_versions is not None and state.trials:  # a resume
        with contextlib.suppress(SessionError):  # an unreadable session.toml: detect again
            known = recorded_engine_version(session.meta_section())
            if known is not None:  # adopted, not recorded again; the console's editor follows it
                controller.engine_versions.info = known
                controller.send(ev.EngineVersionKnown(version=known.version, source=known.source))
    box.append(controller)
    return Wired(controller=controller, ports=ports, recorder=recorder)


async def preview_deploy(
    controller: Controller, backend: ServiceBackend, config: ServerConfig
) -> str | None:
    """The redacted diff ``controller``'s deploy of ``config`` would make on its box now:
    validated and in the box's flag names as a deploy is (None when validation refuses it)."""
    if controller.engine_versions is not None:
        await controller.engine_versions.ensure(config)
    outcome = controller.validator(controller.versioned(config))
    if not isinstance(outcome, ev.ConfigValidated):
        return None
    boxed = controller.versioned(outcome.config)
    return deploy_previewed(boxed, (await backend.preview(boxed)).diff).diff


@dataclass
class ConsoleBox:
    """The console's operations on the box outside the trials (``ui.bridge.BoxOps``): the
    diff a deploy would make, shown before the session's first deploy, and ``[sweep]
    finally`` when the user quits after a finished sweep (``controller.finish``)."""

    wired: Wired
    plan: SweepPlan
    session_path: str

    @property
    def finally_action(self) -> str:
        return self.plan.finally_action

    @property
    def rollback_command(self) -> str:
        return rollback_command(self.session_path)

    async def preview(self, config: ServerConfig) -> str | None:
        """The redacted diff the controller's deploy of ``config`` would make now: validated
        and in the box's flag names as a deploy is (None when validation refuses it)."""
        return await preview_deploy(self.wired.controller, self.wired.ports.backend, config)

    async def finish(self, progress: Callable[[str], None]) -> tuple[str, bool]:
        """``[sweep] finally`` over the session's trials; ``progress`` gets the diff."""
        from specconsole.controller.finish import finish_box

        controller, ports = self.wired.controller, self.wired.ports
        outcome = await finish_box(
            self.plan,
            controller.state.trials,
            ports.backend,
            ports.transport,
            rollback_command=self.rollback_command,
            on_diff=lambda diff: progress(deploying_line(diff)),
            for_box=controller.versioned,
        )
        return outcome.message, outcome.failed
