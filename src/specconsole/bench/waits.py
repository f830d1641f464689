"""The bounds on every wait of the load generator, and the failures they end in.

Why apart from the request shapes and parsers (:mod:`specconsole.bench.api`): issue 27 found
waits without an end (a server that accepts and never answers; one that trickles keep-alive
bytes) and failures that named nothing ("connect x2"). The bounds live here once, for both
clients (:mod:`~specconsole.bench.wire.rawhttp`, :mod:`~specconsole.bench.loadgen`), and each
failure says the URL and the cause in words. Standard library only: the remote runner ships it.
"""

from __future__ import annotations

__all__ = [
    "CONNECT_TIMEOUT_S",
    "CONTROL_TIMEOUT_S",
    "MAX_BODY_BYTES",
    "RequestFailed",
    "connect_failure",
    "control_failure",
    "silence_failure",
    "stall_failure",
    "status_failure",
]


class RequestFailed(Exception):
    """One request failed; ``kind`` is the short error kind counted in the level's errors."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


CONNECT_TIMEOUT_S = 10.0
"""Longest wait for a TCP (and TLS) connection (capped by the request timeout)."""

CONTROL_TIMEOUT_S = 30.0
"""Longest wait for the whole answer to a control request — ``/flush_cache``,
``/server_info``, ``/v1/models``, ``/health`` — (capped by the request timeout): they answer
at once on a healthy server, so a server that accepts and never answers costs this, not the
request timeout."""

MAX_BODY_BYTES = 64 << 20
"""Largest non-streamed answer, error text or SSE line kept (a hostile server's endless body
fails the request instead of filling memory)."""


def stall_failure(stall_s: float, where: str = "") -> RequestFailed:
    """The failure of a stream that yielded no token for ``stall_s`` seconds (either client).
    Bytes without a token (SSE comments, keep-alive bytes, a trickled head) do not count."""
    source = f" from {where}" if where else ""
    return RequestFailed(
        "stall", f"no token for {stall_s:g} s{source} (stall_timeout_s); {stall_s:g} s lost"
    )


def status_failure(status: int, body: bytes) -> RequestFailed:
    """An answer other than 200 (either client): the status names the kind, the start of the
    body says why."""
    return RequestFailed(f"http_{status}", body.decode("utf-8", "replace")[:300])


def silence_failure(timeout_s: float, where: str) -> RequestFailed:
    """A stream silent for the request timeout (shorter than its stall timeout)."""
    return RequestFailed("timeout", f"no token for {timeout_s:g} s from {where} (request timeout)")


def control_failure(timeout_s: float, where: str) -> RequestFailed:
    """A control request without a complete answer in ``timeout_s``."""
    return RequestFailed("timeout", f"no complete answer from {where} within {timeout_s:g} s")


def connect_failure(where: str, exc: BaseException, timeout_s: float) -> RequestFailed:
    """A connection that could not be made: the URL and the cause, in words."""
    if isinstance(exc, TimeoutError):
        cause = f"no answer within {timeout_s:g} s"
    elif isinstance(exc, ConnectionRefusedError):
        cause = "connection refused (is the server running on that port?)"
    elif isinstance(exc, OSError) and exc.strerror:
        cause = exc.strerror
    else:
        cause = str(exc) or type(exc).__name__
    return RequestFailed("connect", f"cannot connect to {where}: {cause}")
