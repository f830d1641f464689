"""Adapters that reach the GPU box: transports (ssh, local) and service backends (systemd,
process, docker) implementing :mod:`specconsole.core.ports`.

Callers normally need only :func:`make_transport` and :func:`make_backend`; asyncssh is
imported only when an SSH transport is made (never Textual).
"""

from specconsole.remote.factory import make_backend, make_transport

__all__ = ["make_backend", "make_transport"]
