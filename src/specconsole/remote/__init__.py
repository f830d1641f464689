"""Adapters that reach the GPU box: transports (ssh, local) and service backends (systemd,
process, docker) implementing :mod:`specconsole.core.ports`.

Callers normally need only :func:`make_transport` and :func:`make_backend`; importing this
package pulls in asyncssh (never Textual).
"""

from specconsole.remote.factory import make_backend, make_transport

__all__ = ["make_backend", "make_transport"]
