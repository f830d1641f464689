"""Build the transport and service backend a host profile describes.

The controller and the CLI hold a :class:`specconsole.core.plans.profile.Profile` and ask this
module
for the matching adapters, so no caller ever branches on "ssh or local", "systemd, process,
docker or slurm" itself.
"""

from __future__ import annotations

from specconsole.core.plans.profile import (
    HostProfile,
    Profile,
    ServiceKind,
    ServiceProfile,
    TransportKind,
)
from specconsole.core.ports import ServiceBackend, Transport
from specconsole.remote.docker import DockerBackend
from specconsole.remote.process import ProcessBackend
from specconsole.remote.slurm import SlurmBackend
from specconsole.remote.systemd import SystemdBackend
from specconsole.remote.transport.connection import ConnectionListener
from specconsole.remote.transport.local import LocalTransport


def make_transport(
    profile: HostProfile | Profile, *, on_event: ConnectionListener | None = None
) -> Transport:
    """The transport for ``[host]``: asyncssh for ``ssh``, subprocesses for ``local``.

    ``on_event`` (ssh only) is told about drops, reconnects and reconnect failures.
    """
    host = profile.host if isinstance(profile, Profile) else profile
    if host.transport is TransportKind.SSH:
        from specconsole.remote.transport.ssh import SshTransport  # asyncssh: only to reach a box

        return SshTransport(host, on_event=on_event)
    return LocalTransport()


def make_backend(profile: ServiceProfile | Profile, transport: Transport) -> ServiceBackend:
    """The service backend for ``[service]``, carrying its commands over ``transport``."""
    service = profile.service if isinstance(profile, Profile) else profile
    if service.kind is ServiceKind.SYSTEMD:
        return SystemdBackend(transport, service)
    if service.kind is ServiceKind.DOCKER:
        return DockerBackend(transport, service)
    if service.kind is ServiceKind.SLURM:
        return SlurmBackend(transport, service)
    return ProcessBackend(transport, service)
