"""httpx as a :class:`~specconsole.bench.ladder.StreamClient`: the console's client for
``https://`` servers (TLS verified).

Why a module of its own: httpx imports its own command-line client (click, Rich, Pygments)
whenever click is installed, 60 ms that only a benchmark over TLS needs;
:func:`specconsole.bench.loadgen.make_run` imports this module for ``https://`` URLs only.
Its failures map to the same error kinds as the standard-library client's
(:mod:`specconsole.bench.wire.rawhttp`), so results from every placement read alike. Not
shipped in the remote runner (which runs without site-packages).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import ssl
from collections.abc import AsyncIterator, Callable

import httpx

from specconsole.bench.ladder import ControlRequests
from specconsole.bench.waits import (
    CONNECT_TIMEOUT_S,
    CONTROL_TIMEOUT_S,
    MAX_BODY_BYTES,
    RequestFailed,
    control_failure,
    silence_failure,
    stall_failure,
    status_failure,
)

__all__ = ["HttpxStreamClient"]

_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "text/event-stream",
    "Accept-Encoding": "identity",  # aiter_raw hands the parser undecoded bytes
}


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every client: building one loads the CA bundle (~15 ms),
    which c clients per level would otherwise repeat."""
    return ssl.create_default_context()


class HttpxStreamClient(ControlRequests):
    """:class:`~specconsole.bench.ladder.StreamClient` over httpx: c keep-alive connections.

    The pool is c single-connection ``httpx.AsyncClient`` objects handed out from a free list,
    rather than one client with ``max_connections=c``: httpcore's pool re-scans every
    connection (with a socket poll each) whenever a request starts or ends, which at c = 64
    cost more CPU than parsing the tokens. Same connections, same keep-alive, O(1) hand-out.
    """

    def __init__(
        self,
        base_url: str,
        concurrency: int,
        *,
        timeout_s: float = 600.0,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._headers = {**_HEADERS, **dict(headers)}
        self._timeout_s = timeout_s
        self._timeout = httpx.Timeout(
            connect=min(CONNECT_TIMEOUT_S, timeout_s), read=timeout_s, write=30.0, pool=None
        )
        self._free: list[httpx.AsyncClient] = []
        self._clients: list[httpx.AsyncClient] = []
        self._gate = asyncio.Semaphore(max(1, concurrency))

    def _new_client(self) -> httpx.AsyncClient:
        # TCP_NODELAY: httpcore writes the request head and body separately; with Nagle the
        # body waits for the server's delayed ACK (~40 ms) and inflates TTFT.
        transport = httpx.AsyncHTTPTransport(
            verify=_tls_context(),
            http1=True,
            http2=False,
            limits=httpx.Limits(
                max_connections=1, max_keepalive_connections=1, keepalive_expiry=300.0
            ),
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )
        client = httpx.AsyncClient(
            base_url=self._base_url,
            transport=transport,
            headers=self._headers,
            timeout=self._timeout,
            trust_env=False,
        )
        self._clients.append(client)
        return client

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[httpx.AsyncClient]:
        async with self._gate:
            client = self._free.pop() if self._free else self._new_client()
            try:
                yield client
            finally:
                self._free.append(client)

    async def stream_into(
        self, path: str, body: bytes, sink: Callable[[bytes], object], stall_s: float
    ) -> None:
        """The raw client's rules (:mod:`specconsole.bench.wire.rawhttp`): a token within
        ``min(stall_s, request timeout)`` from the request on and between tokens — the
        deadline moves only when the sink reports a token."""
        limit = min(stall_s, self._timeout_s)
        where = f"{self._base_url}{path}"
        loop = asyncio.get_running_loop()
        try:
            async with self._client() as client:
                try:
                    async with (
                        asyncio.timeout(limit) as deadline,
                        client.stream("POST", path, content=body) as response,
                    ):
                        if response.status_code != 200:
                            body = await _capped(response, where)
                            raise status_failure(response.status_code, body)
                        async for data in response.aiter_raw():
                            if sink(data):
                                deadline.reschedule(loop.time() + limit)
                except TimeoutError:
                    if stall_s <= self._timeout_s:
                        raise stall_failure(stall_s, where) from None
                    raise silence_failure(self._timeout_s, where) from None
        except httpx.HTTPError as exc:
            raise _failure(exc, where) from exc

    async def _status_and_body(self, method: str, path: str) -> tuple[int, bytes]:
        """A control request's status and body: the whole answer within
        :data:`~specconsole.bench.api.CONTROL_TIMEOUT_S`, at most MAX_BODY_BYTES."""
        limit = min(CONTROL_TIMEOUT_S, self._timeout_s)
        where = f"{self._base_url}{path}"
        try:
            async with self._client() as client:
                try:
                    async with (
                        asyncio.timeout(limit),
                        client.stream(method, path) as response,
                    ):
                        return response.status_code, await _capped(response, where)
                except TimeoutError:
                    raise control_failure(limit, where) from None
        except httpx.HTTPError as exc:
            raise _failure(exc, where) from exc

    def control_client(self) -> HttpxStreamClient:
        """A client of one connection of its own (same server and headers), for control
        requests while every connection of this one streams."""
        return HttpxStreamClient(
            self._base_url, 1, timeout_s=self._timeout_s, headers=tuple(self._headers.items())
        )

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()
        self._clients.clear()
        self._free.clear()


async def _capped(response: httpx.Response, where: str) -> bytes:
    """The response body, refused past MAX_BODY_BYTES (a hostile server's endless answer)."""
    pieces: list[bytes] = []
    size = 0
    async for data in response.aiter_raw():
        size += len(data)
        if size > MAX_BODY_BYTES:
            raise RequestFailed("protocol", f"{where}: answer over {MAX_BODY_BYTES >> 20} MiB")
        pieces.append(data)
    return b"".join(pieces)


def _failure(exc: httpx.HTTPError, where: str) -> RequestFailed:
    """Map an httpx exception to the error kinds the level counts, naming the URL."""
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return RequestFailed("connect", f"cannot connect to {where}: {exc or type(exc).__name__}")
    if isinstance(exc, httpx.TimeoutException):
        kind = "timeout"
    elif isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        kind = "disconnect"
    else:
        kind = "http_error"
    return RequestFailed(kind, f"{where}: {exc or type(exc).__name__}")
