"""make_transport / make_backend pick the adapter the profile names, and it satisfies the port."""

from __future__ import annotations

from specconsole.core.plans.profile import loads_profile
from specconsole.core.ports import ServiceBackend, Transport
from specconsole.remote import make_backend, make_transport
from specconsole.remote.docker import DockerBackend
from specconsole.remote.process import ProcessBackend
from specconsole.remote.systemd import SystemdBackend
from specconsole.remote.transport.local import LocalTransport
from specconsole.remote.transport.ssh import SshTransport


async def test_factory_follows_the_profile() -> None:
    cases = [
        (
            '[host]\ntransport = "local"\n[service]\nkind = "process"',
            LocalTransport,
            ProcessBackend,
        ),
        (
            '[host]\ntransport = "ssh"\nalias = "box"\n[service]\nkind = "systemd"',
            SshTransport,
            SystemdBackend,
        ),
        ('[service]\nkind = "docker"', LocalTransport, DockerBackend),
    ]
    for text, transport_type, backend_type in cases:
        profile = loads_profile(text)
        transport = make_transport(profile)
        backend = make_backend(profile, transport)
        assert type(transport) is transport_type and isinstance(transport, Transport)
        assert type(backend) is backend_type and isinstance(backend, ServiceBackend)
        await transport.close()
