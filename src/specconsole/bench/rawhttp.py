"""A minimal HTTP/1.1 keep-alive client on asyncio streams, for the remote runner.

Why not httpx here: this client runs on the GPU box inside the self-contained runner script,
where nothing but the Python standard library can be assumed. It implements only what the
benchmark needs — POST with a JSON body, GET, chunked or Content-Length responses, a pool of
at most c keep-alive connections, TCP_NODELAY, and a stall timeout — and maps failures to the
same error kinds as the httpx client so results from both placements read the same.

Standard library only, Python 3.10+.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from specconsole.bench.api import RequestFailed

_READ_LIMIT = 1 << 20


class _Conn:
    """One keep-alive connection with a stall watchdog (no per-read timer allocation)."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, timeout_s: float
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.timeout_s = timeout_s
        self.loop = asyncio.get_running_loop()
        self.last = self.loop.time()
        self.busy = False
        self.timed_out = False
        self.reused = False
        self._timer: asyncio.TimerHandle | None = None

    def start_watch(self) -> None:
        self.busy = True
        self.last = self.loop.time()
        if self._timer is None:
            self._timer = self.loop.call_later(self.timeout_s, self._check)

    def stop_watch(self) -> None:
        self.busy = False

    def _check(self) -> None:
        self._timer = None
        if not self.busy:
            return
        idle = self.loop.time() - self.last
        if idle >= self.timeout_s:
            self.timed_out = True
            self.writer.transport.abort()
        else:
            self._timer = self.loop.call_later(self.timeout_s - idle, self._check)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.writer.transport.abort()


class RawStreamClient:
    """:class:`specconsole.bench.ladder.StreamClient` over asyncio streams."""

    def __init__(
        self,
        base_url: str,
        concurrency: int,
        *,
        timeout_s: float = 600.0,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        parts = urlsplit(base_url)
        self._extra_head = "".join(f"{k}: {v}\r\n" for k, v in headers)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"base URL {base_url!r}: give http://HOST:PORT (https unsupported)")
        self._host = parts.hostname
        self._port = parts.port or 80
        self._prefix = parts.path.rstrip("/")
        self._timeout_s = timeout_s
        self._idle: list[_Conn] = []
        self._all: set[_Conn] = set()
        self._gate = asyncio.Semaphore(max(1, concurrency))

    # ---------------------------------------------------------------- connections

    async def _open(self) -> _Conn:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(self._host, self._port, limit=_READ_LIMIT), 10.0
            )
        except (OSError, asyncio.TimeoutError) as exc:  # noqa: UP041 - distinct on 3.10
            raise RequestFailed("connect", f"{self._host}:{self._port}: {exc}") from exc
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Conn(reader, writer, self._timeout_s)
        self._all.add(conn)
        return conn

    def _discard(self, conn: _Conn) -> None:
        conn.close()
        self._all.discard(conn)

    async def _exchange(
        self, method: str, path: str, body: bytes | None
    ) -> tuple[_Conn, int, dict[str, str]]:
        """Send a request and read the status line and headers (one retry on a stale
        keep-alive connection that the server closed while idle)."""
        head = (
            f"{method} {self._prefix}{path} HTTP/1.1\r\nHost: {self._host}:{self._port}\r\n"
            "Accept: text/event-stream\r\n" + self._extra_head
        )
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        elif method == "POST":
            head += "Content-Length: 0\r\n"
        data = head.encode("latin-1") + b"\r\n" + (body or b"")
        for attempt in range(2):
            if self._idle:
                conn = self._idle.pop()
                conn.reused = True
            else:
                conn = await self._open()
            conn.start_watch()
            try:
                conn.writer.write(data)
                status_line = await conn.reader.readline()
                if not status_line:
                    raise ConnectionResetError("connection closed before the response")
                conn.last = conn.loop.time()
                headers: dict[str, str] = {}
                while True:
                    line = await conn.reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                return conn, int(status_line.split()[1]), headers
            except (OSError, asyncio.IncompleteReadError, IndexError, ValueError) as exc:
                timed_out = conn.timed_out
                stale = conn.reused and attempt == 0 and not timed_out
                self._discard(conn)
                if stale:
                    continue
                if timed_out:
                    raise RequestFailed("timeout", f"no response in {self._timeout_s:g} s") from exc
                raise RequestFailed("disconnect", str(exc) or type(exc).__name__) from exc
        raise RequestFailed("disconnect", "connection closed before the response")

    async def _body(self, conn: _Conn, headers: dict[str, str]) -> AsyncIterator[bytes]:
        reader = conn.reader
        loop = conn.loop
        if "chunked" in headers.get("transfer-encoding", "").lower():
            while True:
                size_line = await reader.readline()
                if not size_line:
                    raise ConnectionResetError("connection closed inside a chunked body")
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass
                    return
                data = await reader.readexactly(size)
                await reader.readexactly(2)
                conn.last = loop.time()
                yield data
        elif "content-length" in headers:
            remaining = int(headers["content-length"])
            while remaining > 0:
                data = await reader.read(min(remaining, 65536))
                if not data:
                    raise ConnectionResetError("connection closed inside the body")
                remaining -= len(data)
                conn.last = loop.time()
                yield data
        else:
            while True:
                data = await reader.read(65536)
                if not data:
                    return
                conn.last = loop.time()
                yield data

    async def _request(
        self, method: str, path: str, body: bytes | None
    ) -> AsyncIterator[tuple[int, bytes]]:
        """Yield (status, b"") once the head is in, then (status, body piece) pairs; the
        connection goes back to the pool when the body was read cleanly."""
        async with self._gate:
            conn, status, headers = await self._exchange(method, path, body)
            clean = False
            try:
                yield status, b""
                async for piece in self._body(conn, headers):
                    yield status, piece
                clean = headers.get("connection", "").lower() != "close" and (
                    "chunked" in headers.get("transfer-encoding", "").lower()
                    or "content-length" in headers
                )
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                if conn.timed_out:
                    raise RequestFailed("timeout", f"stalled for {self._timeout_s:g} s") from exc
                raise RequestFailed("disconnect", str(exc) or type(exc).__name__) from exc
            finally:
                conn.stop_watch()
                if clean:
                    conn.reused = False
                    self._idle.append(conn)
                else:
                    self._discard(conn)

    # ---------------------------------------------------------------- StreamClient

    async def stream(self, path: str, body: bytes) -> AsyncIterator[bytes]:
        error: list[bytes] = []
        status = 200
        async for status, piece in self._request("POST", path, body):
            if not piece:
                continue
            if status != 200:
                error.append(piece)
                continue
            yield piece
        if status != 200:
            raise RequestFailed(f"http_{status}", b"".join(error).decode("utf-8", "replace")[:300])

    async def get_json(self, path: str) -> Any:
        status, data = await self._status_and_body("GET", path)
        if status != 200:
            raise RequestFailed(f"http_{status}", data.decode("utf-8", "replace")[:300])
        try:
            return json.loads(data)
        except ValueError as exc:
            raise RequestFailed("protocol", f"{path} did not return JSON") from exc

    async def post(self, path: str) -> int:
        status, _ = await self._status_and_body("POST", path)
        return status

    async def _status_and_body(self, method: str, path: str) -> tuple[int, bytes]:
        pieces = [item async for item in self._request(method, path, None)]
        return pieces[0][0], b"".join(piece for _, piece in pieces)

    async def aclose(self) -> None:
        for conn in list(self._all):
            self._discard(conn)
        self._idle.clear()
