"""Building the controller's ports from a host profile.

Why here and not in each front end: the console, the headless sweep and the demo all need
"this profile → a transport, a service backend and a benchmark runner", and the connection
events of the SSH transport must reach the controller as ``ConnectionChanged``. One function
does that wiring; the adapters themselves live in ``specconsole.remote`` and
``specconsole.bench``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from specconsole.core import events as ev
from specconsole.core.ports import BenchmarkRunner, ServiceBackend, Transport
from specconsole.core.profile import Profile, ServiceKind, TransportKind
from specconsole.core.state import ConnectionState


@dataclass
class Ports:
    """Everything the controller talks through."""

    transport: Transport
    backend: ServiceBackend
    runner: BenchmarkRunner


def open_ports(profile: Profile, on_event: Callable[[ev.Event], None] | None = None) -> Ports:
    """Transport, backend and runner for ``profile``; connection changes go to ``on_event``."""
    transport: Transport
    if profile.host.transport is TransportKind.SSH:
        from specconsole.remote.ssh import ConnectionEvent, SshTransport

        mapping = {
            ConnectionEvent.CONNECTED: ConnectionState.CONNECTED,
            ConnectionEvent.RECONNECTED: ConnectionState.CONNECTED,
            ConnectionEvent.LOST: ConnectionState.RECONNECTING,
            ConnectionEvent.FAILED: ConnectionState.LOST,
        }

        def listener(event: ConnectionEvent, detail: str) -> None:
            if on_event is not None:
                on_event(ev.ConnectionChanged(state=mapping[event], detail=detail))

        transport = SshTransport(profile.host, on_event=listener)
    else:
        from specconsole.remote.local import LocalTransport

        transport = LocalTransport()
    backend: ServiceBackend
    if profile.service.kind is ServiceKind.SYSTEMD:
        from specconsole.remote.systemd import SystemdBackend

        backend = SystemdBackend(transport, profile.service)
    elif profile.service.kind is ServiceKind.DOCKER:
        from specconsole.remote.docker import DockerBackend

        backend = DockerBackend(transport, profile.service)
    else:
        from specconsole.remote.process import ProcessBackend

        backend = ProcessBackend(transport, profile.service)
    from specconsole.bench.runner import ForwardedBenchmarkRunner

    return Ports(transport=transport, backend=backend, runner=ForwardedBenchmarkRunner(transport))
