"""A minimal HTTP/1.1 keep-alive client on an ``asyncio.Protocol``, for both load generators.

Why not httpx here: this client runs on the GPU box inside the self-contained runner script,
where nothing but the Python standard library can be assumed, and it is the console's client
for ``http://`` too. It implements only what the benchmark needs — POST with a JSON body, GET,
chunked or Content-Length responses, a pool of at most c keep-alive connections, TCP_NODELAY —
and maps failures to the same error kinds as the httpx client so results from every placement
read the same. The response parsing and the watchdog are :mod:`specconsole.bench.wire.rawconn`'s.

Every wait is bounded and every failure names the URL and the cause (issue 27):

* connect: :data:`~specconsole.bench.api.CONNECT_TIMEOUT_S` (refused, unreachable or silent);
* a stream: a token within the stall timeout (or the request timeout, whichever is shorter),
  from the request on and between tokens — bytes without a token do not count;
* a control request (``/flush_cache``, ``/server_info``...): the whole answer within
  :data:`~specconsole.bench.api.CONTROL_TIMEOUT_S`;
* bodies, error texts and SSE lines: at most :data:`~specconsole.bench.api.MAX_BODY_BYTES`.

Standard library only, Python 3.10+.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from urllib.parse import urlsplit

from specconsole.bench.ladder import ControlRequests
from specconsole.bench.waits import (
    CONNECT_TIMEOUT_S,
    CONTROL_TIMEOUT_S,
    MAX_BODY_BYTES,
    RequestFailed,
    connect_failure,
    control_failure,
    silence_failure,
    stall_failure,
)
from specconsole.bench.wire.rawconn import READ_SIZE, BodySink, Connection, Stale


class RawStreamClient(ControlRequests):
    """:class:`specconsole.bench.ladder.StreamClient` over :class:`asyncio.Protocol`."""

    __slots__ = (
        "_all",
        "_extra_head",
        "_gate",
        "_headers",
        "_host",
        "_idle",
        "_port",
        "_prefix",
        "_rbuf",
        "_timeout_s",
        "_url",
    )

    def __init__(
        self,
        base_url: str,
        concurrency: int,
        *,
        timeout_s: float = 600.0,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        parts = urlsplit(base_url)
        self._headers = headers
        self._extra_head = "".join(f"{k}: {v}\r\n" for k, v in headers)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"base URL {base_url!r}: give http://HOST:PORT (https unsupported)")
        self._host = parts.hostname
        self._port = parts.port or 80
        self._prefix = parts.path.rstrip("/")
        self._url = base_url.rstrip("/")
        self._timeout_s = timeout_s
        self._idle: list[Connection] = []
        self._all: set[Connection] = set()
        self._gate = asyncio.Semaphore(max(1, concurrency))
        self._rbuf = memoryview(bytearray(READ_SIZE))

    # ---------------------------------------------------------------- connections

    async def _open(self) -> Connection:
        loop = asyncio.get_running_loop()
        limit = min(CONNECT_TIMEOUT_S, self._timeout_s)
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(
                    lambda: Connection(loop, self._rbuf), self._host, self._port
                ),
                limit,
            )
        except asyncio.TimeoutError:  # noqa: UP041 - distinct from TimeoutError on 3.10
            raise connect_failure(self._url, TimeoutError(), limit) from None
        except OSError as exc:
            raise connect_failure(self._url, exc, limit) from exc
        self._all.add(conn)
        return conn

    def _discard(self, conn: Connection) -> None:
        conn.abort()
        self._all.discard(conn)

    async def _request(
        self,
        method: str,
        path: str,
        body: bytes | None,
        sink: BodySink,
        limit: float,
        failure: Callable[[], RequestFailed],
    ) -> tuple[Connection, int]:
        """One exchange on a pooled connection (one retry on a stale keep-alive connection
        that the server closed while idle); returns the connection (already back in the
        pool or discarded) and the status. The retry opens a new connection: a server that
        closed one idle connection may have closed its siblings too (a c=2 level's third
        request to llama-server found both stale: the server never saw it, and the failed
        request cost the level a re-run), so another idle one is no better a bet."""
        head = (
            f"{method} {self._prefix}{path} HTTP/1.1\r\nHost: {self._host}:{self._port}\r\n"
            "Accept: text/event-stream\r\n" + self._extra_head
        )
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        elif method == "POST":
            head += "Content-Length: 0\r\n"
        data = head.encode("latin-1") + b"\r\n" + (body or b"")
        async with self._gate:
            for attempt in range(2):
                conn = None
                while attempt == 0 and self._idle and conn is None:
                    conn = self._idle.pop()
                    if conn.lost:
                        self._discard(conn)
                        conn = None
                if conn is None:
                    conn = await self._open()
                else:
                    conn.reused = True
                keep = False
                try:
                    status, keep = await conn.begin(data, sink, limit, failure)
                    return conn, status
                except Stale:
                    if attempt == 0:
                        continue
                    raise RequestFailed(
                        "disconnect", f"{self._url}{path} closed the connection before answering"
                    ) from None
                except RequestFailed as exc:
                    if exc.kind == "disconnect" and self._url not in exc.detail:
                        raise RequestFailed(
                            "disconnect", f"{self._url}{path}: {exc.detail}"
                        ) from None
                    raise
                finally:
                    if keep and not conn.lost:
                        self._idle.append(conn)
                    else:
                        self._discard(conn)
        raise RequestFailed("disconnect", f"{self._url}{path} closed the connection")

    # ---------------------------------------------------------------- StreamClient

    async def stream_into(self, path: str, body: bytes, sink: BodySink, stall_s: float) -> None:
        limit = min(stall_s, self._timeout_s)
        where = f"{self._url}{path}"
        if stall_s <= self._timeout_s:

            def failure() -> RequestFailed:
                return stall_failure(stall_s, where)
        else:

            def failure() -> RequestFailed:
                return silence_failure(self._timeout_s, where)

        conn, status = await self._request("POST", path, body, sink, limit, failure)
        if status != 200:
            raise RequestFailed(f"http_{status}", conn.error_text())

    def control_client(self) -> RawStreamClient:
        """A client of one connection of its own to the same server (same headers), for
        control requests while every connection of this one streams."""
        return RawStreamClient(self._url, 1, timeout_s=self._timeout_s, headers=self._headers)

    async def _status_and_body(self, method: str, path: str) -> tuple[int, bytes]:
        pieces: list[bytes] = []
        size = 0
        limit = min(CONTROL_TIMEOUT_S, self._timeout_s)

        def keep(data: bytes) -> None:  # never progress: the limit is a deadline
            nonlocal size
            size += len(data)
            if size > MAX_BODY_BYTES:
                raise RequestFailed("protocol", f"{self._url}{path}: answer over 64 MiB")
            pieces.append(data)

        def failure() -> RequestFailed:
            return control_failure(limit, f"{self._url}{path}")

        conn, status = await self._request(method, path, None, keep, limit, failure)
        return status, b"".join(pieces) if status == 200 else conn.error_text().encode()

    async def aclose(self) -> None:
        for conn in list(self._all):
            self._discard(conn)
        self._idle.clear()
