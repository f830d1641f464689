"""A minimal HTTP/1.1 keep-alive client on an ``asyncio.Protocol``, for both load generators.

Why not httpx here: this client runs on the GPU box inside the self-contained runner script,
where nothing but the Python standard library can be assumed, and it is the console's client
for ``http://`` too. It implements only what the benchmark needs — POST with a JSON body, GET,
chunked or Content-Length responses, a pool of at most c keep-alive connections, TCP_NODELAY,
and an idle watchdog — and maps failures to the same error kinds as the httpx client so
results from every placement read the same.

Why a Protocol and not asyncio streams: the response body is de-chunked inside
``data_received`` and handed to the caller's sink once per received buffer, so a streamed
token costs no coroutine resumption, no future and no timer (profiled in docs/benchmark.md:
the streams version spent most of its per-chunk CPU in ``readline``/``readexactly``, the
async-generator chain and a per-chunk ``asyncio.timeout``). Every SSE event in one buffer
arrived with that buffer, so the sink's timestamp for it is exact. The idle watchdog is one
timer per connection that re-arms itself from the time of the last received bytes.

Standard library only, Python 3.10+.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from typing import Any, cast
from urllib.parse import urlsplit

from specconsole.bench.api import RequestFailed, stall_failure

BodySink = Callable[[bytes], None]
"""Receives the de-chunked body bytes of one received buffer (may raise RequestFailed)."""

_HEAD_LIMIT = 64 * 1024
_READ_SIZE = 64 * 1024
"""Bytes per socket read (one buffer per client, shared by its connections)."""
_HEAD, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END, _TRAILER, _LENGTH, _UNTIL_CLOSE, _IDLE = range(8)


def _chunk_size(line: bytes) -> int:
    """A chunk-size line's value (``1a3\\r``; chunk extensions after ``;`` ignored)."""
    semi = line.find(b";")
    return int(line if semi < 0 else line[:semi], 16)


class _Stale(Exception):
    """A reused keep-alive connection closed before any response byte (retry once)."""


class _Conn(asyncio.BufferedProtocol):
    """One keep-alive connection: parses the response in place as bytes arrive.

    A :class:`asyncio.BufferedProtocol` so the transport ``recv_into``-s a buffer shared by
    the client's connections (each read is consumed before the next): the plain Protocol's
    ``recv(256 KiB)`` allocates and frees 256 KiB per read, which measured ~20 µs per read
    here — more than parsing the read.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, buffer: memoryview) -> None:
        self.loop = loop
        self._rbuf = buffer
        self.transport: asyncio.Transport | None = None
        self.reused = False
        self.lost = False
        self._state = _IDLE
        self._buf = b""
        self._remaining = 0
        self._sink: BodySink | None = None
        self._error_body: list[bytes] = []
        self._done: asyncio.Future[tuple[int, bool]] | None = None
        self._status = 0
        self._keep_alive = False
        self._got_bytes = False
        self._last = 0.0
        self._limit = 0.0
        self._failure: Callable[[], RequestFailed] | None = None
        self._on_idle: Callable[[], RequestFailed] | None = None
        self._timer: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport (uvloop's are not asyncio.Transport subclasses: no isinstance)
        self.transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._cancel_timer()
        if self._done is None or self._done.done():
            return
        if self._state == _UNTIL_CLOSE:
            self._complete(keep_alive=False)
        elif self._failure is not None:
            self._fail(self._failure())
        elif self.reused and not self._got_bytes:
            self._fail(_Stale())
        else:
            detail = str(exc) if exc else "connection closed before the response ended"
            self._fail(RequestFailed("disconnect", detail))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._rbuf

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(self._rbuf[:nbytes].tobytes())

    def data_received(self, data: bytes) -> None:
        done = self._done
        if done is None or done.done():
            return  # bytes after the response (or after a failure): dropped with the conn
        self._got_bytes = True
        self._last = self.loop.time()
        if self._buf:
            data, self._buf = self._buf + data, b""
        try:
            if self._state == _CHUNK_SIZE and self._one_chunk(data):
                return
            if self._state == _HEAD:
                data = self._head(data)
                if self._state == _HEAD or self._done.done():
                    return
            if self._state == _LENGTH:
                self._length_body(data)
            elif self._state == _UNTIL_CLOSE:
                if data:
                    assert self._sink is not None
                    self._sink(data)
            else:
                self._chunked_body(data)
        except RequestFailed as exc:
            self._fail(exc)
        except (ValueError, IndexError) as exc:
            self._fail(RequestFailed("protocol", f"bad HTTP response ({exc})"))

    # ------------------------------------------------------------------ parsing

    def _head(self, data: bytes) -> bytes:
        """Parse the status line and headers; returns the bytes after them."""
        end = data.find(b"\r\n\r\n")
        if end < 0:
            if len(data) > _HEAD_LIMIT:
                raise RequestFailed("protocol", "response head over 64 KiB")
            self._buf = data
            return b""
        lines = data[:end].decode("latin-1").split("\r\n")
        self._status = int(lines[0].split()[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if self._status != 200:
            self._sink = self._error_body.append
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        self._keep_alive = headers.get("connection", "").lower() != "close" and (
            chunked or "content-length" in headers
        )
        if chunked:
            self._state = _CHUNK_SIZE
        elif "content-length" in headers:
            self._state = _LENGTH
            self._remaining = int(headers["content-length"])
            if self._remaining == 0:
                self._complete(self._keep_alive)
        else:
            self._state = _UNTIL_CLOSE
        return data[end + 4 :]

    def _length_body(self, data: bytes) -> None:
        piece = data[: self._remaining]
        self._remaining -= len(piece)
        if piece:
            assert self._sink is not None
            self._sink(piece)
        if self._remaining == 0:
            self._complete(self._keep_alive)

    def _one_chunk(self, data: bytes) -> bool:
        """The streaming common case: the read is exactly one whole chunk (size line, data,
        CRLF), handed to the sink with no parsing loop. False (nothing consumed) otherwise."""
        nl = data.find(b"\n")
        if nl <= 0:
            return False
        try:
            length = int(data[:nl], 16)  # a chunk extension (";") fails here: the slow path
        except ValueError:
            return False
        if length == 0 or len(data) != nl + length + 3:
            return False
        assert self._sink is not None
        self._sink(data[nl + 1 : nl + 1 + length])
        return True

    def _chunked_body(self, data: bytes) -> None:
        """De-chunk one received buffer and hand its payload to the sink in one call.

        The common case — the buffer holds whole chunks — is one ``find`` and one slice per
        chunk; a chunk, CRLF or trailer cut by the buffer's end resumes in :meth:`_resume`.
        """
        pieces: list[bytes] = []
        pos, size = 0, len(data)
        if self._state != _CHUNK_SIZE:
            pos = self._resume(data, pieces)
        find = data.find
        while pos < size and self._state == _CHUNK_SIZE:
            nl = find(b"\n", pos)
            if nl < 0:
                self._buf = data[pos:]
                break
            length = _chunk_size(data[pos:nl])
            start = nl + 1
            if length == 0:
                self._state = _TRAILER
                pos = self._resume(data, pieces, start)
                break
            end = start + length
            if end + 2 <= size:
                pieces.append(data[start:end])
                pos = end + 2
            elif end <= size:
                pieces.append(data[start:end])
                self._state, self._remaining, pos = _CHUNK_END, end + 2 - size, size
            else:
                pieces.append(data[start:])
                self._state, self._remaining, pos = _CHUNK_DATA, end - size, size
        if pieces:
            assert self._sink is not None
            self._sink(pieces[0] if len(pieces) == 1 else b"".join(pieces))
        if self._state == _IDLE:
            self._complete(self._keep_alive)

    def _resume(self, data: bytes, pieces: list[bytes], pos: int = 0) -> int:
        """Continue a chunk, its CRLF or the trailer from ``pos``; returns where the next
        chunk-size line starts (state ``_CHUNK_SIZE``), or the buffer's end."""
        size = len(data)
        while pos < size:
            state = self._state
            if state == _CHUNK_DATA:
                end = min(size, pos + self._remaining)
                pieces.append(data[pos:end])
                self._remaining -= end - pos
                pos = end
                if self._remaining == 0:
                    self._state, self._remaining = _CHUNK_END, 2
            elif state == _CHUNK_END:  # the CRLF after a chunk's data
                skip = min(self._remaining, size - pos)
                pos += skip
                self._remaining -= skip
                if self._remaining == 0:
                    self._state = _CHUNK_SIZE
                    return pos
            elif state == _TRAILER:  # trailer lines up to an empty one
                nl = data.find(b"\n", pos)
                if nl < 0:
                    self._buf = data[pos:]
                    return size
                line, pos = data[pos:nl], nl + 1
                if line in (b"\r", b""):
                    self._state = _IDLE
                    return size
            else:
                return pos
        return pos

    # ------------------------------------------------------------------ one exchange

    def begin(
        self, data: bytes, sink: BodySink, limit: float, failure: Callable[[], RequestFailed]
    ) -> asyncio.Future[tuple[int, bool]]:
        """Send a request; the future gives (status, keep-alive) once the body has been
        handed to ``sink`` (non-200 bodies go to :meth:`error_text` instead)."""
        assert self.transport is not None
        self._done = self.loop.create_future()
        self._state, self._buf, self._remaining = _HEAD, b"", 0
        self._sink, self._error_body = sink, []
        self._status, self._keep_alive, self._got_bytes = 0, False, False
        self._limit, self._failure = limit, None
        self._on_idle = failure
        self._last = self.loop.time()
        self._cancel_timer()  # one timer per exchange, re-armed from the last bytes
        self._timer = self.loop.call_later(limit, self._check)
        self.transport.write(data)
        return self._done

    def error_text(self) -> str:
        return b"".join(self._error_body).decode("utf-8", "replace")[:300]

    def _check(self) -> None:
        """The watchdog: abort when no bytes came for the exchange's idle limit."""
        self._timer = None
        if self._done is None or self._done.done():
            return
        idle = self.loop.time() - self._last
        if idle >= self._limit:
            self._failure = self._on_idle
            self.abort()
        else:
            self._timer = self.loop.call_later(self._limit - idle, self._check)

    def _complete(self, keep_alive: bool) -> None:
        self._state = _IDLE
        if self._done is not None and not self._done.done():
            self._done.set_result((self._status, keep_alive))

    def _fail(self, exc: Exception) -> None:
        self._state = _IDLE
        if self._done is not None and not self._done.done():
            self._done.set_exception(exc)
        self.abort()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def abort(self) -> None:
        self._cancel_timer()
        if self.transport is not None:
            self.transport.abort()


class RawStreamClient:
    """:class:`specconsole.bench.ladder.StreamClient` over :class:`asyncio.Protocol`."""

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
        self._rbuf = memoryview(bytearray(_READ_SIZE))

    # ---------------------------------------------------------------- connections

    async def _open(self) -> _Conn:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(lambda: _Conn(loop, self._rbuf), self._host, self._port),
                10.0,
            )
        except (OSError, asyncio.TimeoutError) as exc:  # noqa: UP041 - distinct on 3.10
            raise RequestFailed("connect", f"{self._host}:{self._port}: {exc}") from exc
        self._all.add(conn)
        return conn

    def _discard(self, conn: _Conn) -> None:
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
    ) -> tuple[_Conn, int]:
        """One exchange on a pooled connection (one retry on a stale keep-alive connection
        that the server closed while idle); returns the connection (already back in the
        pool or discarded) and the status."""
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
                while self._idle and conn is None:
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
                except _Stale:
                    if attempt == 0:
                        continue
                    raise RequestFailed(
                        "disconnect", "connection closed before the response"
                    ) from None
                finally:
                    if keep and not conn.lost:
                        self._idle.append(conn)
                    else:
                        self._discard(conn)
        raise RequestFailed("disconnect", "connection closed before the response")

    # ---------------------------------------------------------------- StreamClient

    async def stream_into(self, path: str, body: bytes, sink: BodySink, stall_s: float) -> None:
        limit = min(stall_s, self._timeout_s)
        if stall_s <= self._timeout_s:

            def failure() -> RequestFailed:
                return stall_failure(stall_s)
        else:

            def failure() -> RequestFailed:
                return RequestFailed("timeout", f"stalled for {self._timeout_s:g} s")

        conn, status = await self._request("POST", path, body, sink, limit, failure)
        if status != 200:
            raise RequestFailed(f"http_{status}", conn.error_text())

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
        pieces: list[bytes] = []

        def failure() -> RequestFailed:
            return RequestFailed("timeout", f"no response in {self._timeout_s:g} s")

        conn, status = await self._request(
            method, path, None, pieces.append, self._timeout_s, failure
        )
        return status, b"".join(pieces) if status == 200 else conn.error_text().encode()

    async def aclose(self) -> None:
        for conn in list(self._all):
            self._discard(conn)
        self._idle.clear()
