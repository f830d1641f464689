"""One keep-alive HTTP/1.1 connection of the stdlib client: the response parsed in place as
bytes arrive, and a watchdog that only progress re-arms.

Why apart from the client (:mod:`specconsole.bench.wire.rawhttp`, the pool and the requests): the
parser is the hot path of the load generator (profiled in docs/benchmark.md: the response body
is de-chunked inside ``data_received`` and handed to the caller's sink once per received
buffer, so a streamed token costs no coroutine resumption, no future and no timer), and the
watchdog is what keeps a hostile or broken server from holding a benchmark (issue 27: a server
that trickled keep-alive bytes kept a request alive past ``--request-timeout 5``).

Standard library only, Python 3.10+ (bundled into the remote runner).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import cast

from specconsole.bench.waits import MAX_BODY_BYTES, RequestFailed

BodySink = Callable[[bytes], object]
"""Receives the de-chunked body bytes of one received buffer and returns a true value when
they carried progress (a token); may raise RequestFailed."""

_HEAD_LIMIT = 64 * 1024
READ_SIZE = 64 * 1024
"""Bytes per socket read (one buffer per client, shared by its connections)."""
_HEAD, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END, _TRAILER, _LENGTH, _UNTIL_CLOSE, _IDLE = range(8)


def _chunk_size(line: bytes) -> int:
    """A chunk-size line's value (``1a3\\r``; chunk extensions after ``;`` ignored)."""
    semi = line.find(b";")
    return int(line if semi < 0 else line[:semi], 16)


class Stale(Exception):
    """A reused keep-alive connection closed before any response byte (retry once)."""


class Connection(asyncio.BufferedProtocol):
    """One keep-alive connection: parses the response in place as bytes arrive.

    Its watchdog fails the exchange when no *progress* came for the exchange's limit: for a
    stream, progress is a read whose body bytes the sink reports as carrying a token (it
    returns a true value); for any other exchange there is none, so the limit is a deadline
    for the whole answer. Bytes alone never re-arm it — a server that trickles a head, SSE
    comments or keep-alive bytes fails like one that sends nothing.

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
        self._kept = 0
        """Error-body bytes kept (at most MAX_BODY_BYTES)."""
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
            self._fail(Stale())
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
                    self._deliver(data)
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
            self._sink = self._keep_error
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        self._keep_alive = headers.get("connection", "").lower() != "close" and (
            chunked or "content-length" in headers
        )
        if chunked:
            self._state = _CHUNK_SIZE
        elif "content-length" in headers:
            self._state = _LENGTH
            self._remaining = int(headers["content-length"])
            if self._remaining < 0:
                raise RequestFailed("protocol", "a negative Content-Length")
            if self._remaining == 0:
                self._complete(self._keep_alive)
        else:
            self._state = _UNTIL_CLOSE
        return data[end + 4 :]

    def _length_body(self, data: bytes) -> None:
        piece = data[: self._remaining]
        self._remaining -= len(piece)
        if piece:
            self._deliver(piece)
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
        if length <= 0 or len(data) != nl + length + 3:
            return False
        self._deliver(data[nl + 1 : nl + 1 + length])
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
            if length < 0:
                raise RequestFailed("protocol", "a negative chunk size")
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
            self._deliver(pieces[0] if len(pieces) == 1 else b"".join(pieces))
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

    def _deliver(self, data: bytes) -> None:
        """Hand body bytes to the sink; a true answer is progress (re-arms the watchdog)."""
        assert self._sink is not None
        if self._sink(data):
            self._last = self.loop.time()

    def _keep_error(self, data: bytes) -> None:
        """A non-200 answer's body, kept up to MAX_BODY_BYTES (never progress)."""
        if self._kept < MAX_BODY_BYTES:
            self._error_body.append(data[: MAX_BODY_BYTES - self._kept])
            self._kept += len(data)

    # ------------------------------------------------------------------ one exchange

    def begin(
        self, data: bytes, sink: BodySink, limit: float, failure: Callable[[], RequestFailed]
    ) -> asyncio.Future[tuple[int, bool]]:
        """Send a request; the future gives (status, keep-alive) once the body has been
        handed to ``sink`` (non-200 bodies go to :meth:`error_text` instead). It fails with
        ``failure()`` when ``limit`` seconds pass without progress (see the class)."""
        assert self.transport is not None
        self._done = self.loop.create_future()
        self._state, self._buf, self._remaining = _HEAD, b"", 0
        self._sink, self._error_body, self._kept = sink, [], 0
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
