"""The Protocol-based stdlib client against a real loopback server that cuts its responses
at arbitrary byte positions (chunk-size lines, chunk data, the CRLF and the trailer split
across socket reads), and the parsers' in-place fast paths against their per-event JSON
paths: the bytes handed on and the token timeline must not depend on how TCP cut them."""

from __future__ import annotations

import asyncio
import json
import random
import socket

import pytest

from specconsole.bench.api import RequestFailed, make_parser
from specconsole.bench.wire.rawhttp import RawStreamClient


def _generate_events(n: int) -> list[bytes]:
    out = []
    for i in range(1, n + 1):
        meta = {"id": "r1", "finish_reason": None, "prompt_tokens": 9, "completion_tokens": i}
        # The text carries look-alikes that a careless byte search would take for fields.
        text = ' "completion_tokens": 99 data: [DONE]' * i
        body = json.dumps({"text": text, "meta_info": meta}, separators=(",", ":"))
        out.append(b"data: " + body.encode() + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return out


def _chunked(events: list[bytes]) -> bytes:
    wire = b""
    for k, event in enumerate(events):
        ext = b";ext=1" if k == 2 else b""
        wire += b"%x%s\r\n%s\r\n" % (len(event), ext, event)
    return wire + b"0\r\nx-trailer: 1\r\n\r\n"


class _Server:
    """A loopback HTTP/1.1 server replying with fixed responses, written in random pieces
    (TCP_NODELAY and a pause between writes, so the client sees them as separate reads)."""

    def __init__(
        self,
        responses: list[bytes],
        seed: int,
        close_after: int | None = None,
        hold_open: bool = False,
        refuse_reuse: bool = False,
    ) -> None:
        self.responses = responses
        self.refuse_reuse = refuse_reuse
        """Close a connection, unanswered, when a second request arrives on it."""
        self.hold_open = hold_open
        self.rng = random.Random(seed)
        self.close_after = close_after
        self.connections = 0
        self.server: asyncio.base_events.Server | None = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        served = 0
        try:
            while served < len(self.responses):
                head = await reader.readuntil(b"\r\n\r\n")
                if self.refuse_reuse and served:
                    break
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                await reader.readexactly(length)
                wire = self.responses[served]
                served += 1
                pos = 0
                while pos < len(wire):
                    step = self.rng.randint(1, 40)
                    writer.write(wire[pos : pos + step])
                    await writer.drain()
                    await asyncio.sleep(0.001)
                    pos += step
                if self.close_after is not None and served >= self.close_after:
                    break
            if self.hold_open:  # a stream that stopped with its connection still open
                await reader.read(1)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


CHUNKED_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
)


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_chunked_stream_cut_anywhere_reaches_the_sink_intact(seed: int) -> None:
    events = _generate_events(12)
    response = CHUNKED_HEAD + _chunked(events)
    async with _Server([response, response], seed) as url:
        client = RawStreamClient(url, 1, timeout_s=30)
        try:
            for _ in range(2):  # the second request reuses the keep-alive connection
                pieces: list[bytes] = []
                parser = make_parser("generate")
                whole = make_parser("generate")

                def sink(data: bytes, parser=parser, pieces=pieces) -> None:
                    pieces.append(data)
                    parser.feed(data, float(len(pieces)))

                await client.stream_into("/generate", b"{}", sink, 10.0)
                assert b"".join(pieces) == b"".join(events)
                outcome = parser.finish()
                assert outcome.completion_tokens == 12 and sum(outcome.chunk_tokens) == 12
                assert outcome.prompt_tokens == 9
                for event in events:  # event by event: the same counts
                    whole.feed(event, 0.0)
                assert whole.finish().completion_tokens == 12
        finally:
            await client.aclose()
    assert len(client._all) == 0


async def test_content_length_close_delimited_and_error_statuses() -> None:
    info = json.dumps({"avg_spec_accept_length": 2.5}).encode()
    responses = [
        b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(info), info),
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\nbusy",
        b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n" + info,
    ]
    async with _Server(responses, 7) as url:
        client = RawStreamClient(url, 1, timeout_s=30)
        try:
            assert await client.get_json("/server_info") == {"avg_spec_accept_length": 2.5}
            with pytest.raises(RequestFailed) as failed:
                await client.stream_into("/generate", b"{}", lambda d: None, 10.0)
            assert failed.value.kind == "http_503" and failed.value.detail == "busy"
            assert await client.get_json("/server_info") == {"avg_spec_accept_length": 2.5}
        finally:
            await client.aclose()


async def test_a_stale_keep_alive_connection_is_retried_once_on_a_new_one() -> None:
    response = CHUNKED_HEAD + _chunked(_generate_events(3))
    server = _Server([response], 5, close_after=1)  # closes each connection after one reply
    async with server as url:
        client = RawStreamClient(url, 1, timeout_s=30)
        try:
            for _ in range(3):
                got: list[bytes] = []
                await client.stream_into("/generate", b"{}", got.append, 10.0)
                assert b"[DONE]" in b"".join(got)
        finally:
            await client.aclose()
    assert server.connections == 3


async def test_the_retry_after_a_stale_connection_opens_a_new_one_not_another_idle_one() -> None:
    # two idle connections the server closes unanswered once a request arrives on them (as
    # llama-server did to a c=2 level's both): the request is served once, on a new one
    response = CHUNKED_HEAD + _chunked(_generate_events(3))
    server = _Server([response, response], 6, refuse_reuse=True)
    async with server as url:
        client = RawStreamClient(url, 2, timeout_s=30)
        try:
            pair: list[list[bytes]] = [[], []]
            await asyncio.gather(
                *(client.stream_into("/generate", b"{}", got.append, 10.0) for got in pair)
            )
            got: list[bytes] = []
            await client.stream_into("/generate", b"{}", got.append, 10.0)
            assert all(b"[DONE]" in b"".join(g) for g in (*pair, got))
        finally:
            await client.aclose()
    assert server.connections == 3


async def test_a_stream_that_stops_fails_as_stall_after_the_stall_limit() -> None:
    head_only = CHUNKED_HEAD + _chunked(_generate_events(2))[:40]
    async with _Server([head_only], 3, hold_open=True) as url:
        client = RawStreamClient(url, 1, timeout_s=30)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        try:
            with pytest.raises(RequestFailed) as failed:
                await client.stream_into("/generate", b"{}", lambda d: None, 0.3)
        finally:
            await client.aclose()
    assert failed.value.kind == "stall" and 0.3 <= loop.time() - t0 < 10


def _chat_events(compact: bool, continuous: bool) -> list[bytes]:
    seps = (",", ":") if compact else (", ", ": ")
    pieces = ["", 'He said \\"hi\\"', " and", "", " left"]
    out = []
    for k, piece in enumerate(pieces):
        obj: dict[str, object] = {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": json.loads(f'"{piece}"')}}],
        }
        if continuous:
            obj["usage"] = {"prompt_tokens": 4, "completion_tokens": 2 * k}
        out.append(b"data: " + json.dumps(obj, separators=seps).encode() + b"\n\n")
    final = {"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 8}}
    out.append(b"data: " + json.dumps(final, separators=seps).encode() + b"\n\n")
    return [*out, b"data: [DONE]\n\n"]


@pytest.mark.parametrize("compact", [True, False])
def test_chat_fast_path_gives_the_json_paths_timeline(compact: bool) -> None:
    events = _chat_events(compact, continuous=True)
    one_by_one = make_parser("chat")
    for k, event in enumerate(events):
        one_by_one.feed(event, 0.1 * k)
    fast = one_by_one.finish()
    assert fast.chunk_tokens == [2, 2, 4] and fast.completion_tokens == 8
    assert fast.prompt_tokens == 4
    # The same stream decoded with json event by event (as bare payloads, never in place).
    slow = make_parser("chat")
    for k, event in enumerate(events):
        payload = event[5:].strip()
        if payload == b"[DONE]":
            slow.done = True
        else:
            slow._decoded(payload, 0.1 * k)  # type: ignore[attr-defined]
    assert slow.finish() == fast
    # Two events in one read share its timestamp: one chunk carrying both.
    merged = make_parser("chat")
    merged.feed(events[0] + events[1], 0.1)
    for k, event in enumerate(events[2:], start=2):
        merged.feed(event, 0.1 * k)
    assert merged.finish().chunk_tokens == [2, 2, 4]


def test_chat_server_error_event_fails_the_request() -> None:
    parser = make_parser("chat")
    event = b'data: {"error": {"message": "bad", "completion_tokens": 1}}\n\n'
    with pytest.raises(RequestFailed) as failed:
        parser.feed(event, 0.1)
    assert failed.value.kind == "server_error"


def test_generate_block_of_events_counts_as_its_last_count() -> None:
    events = _generate_events(5)
    parser = make_parser("generate")
    assert parser.feed(events[0], 0.1) == 1
    assert parser.feed(b"".join(events[1:4]), 0.2) == 3
    assert parser.feed(events[4][:30], 0.3) == 0  # a partial line waits for its end
    assert parser.feed(events[4][30:] + events[5], 0.4) == 1
    outcome = parser.finish()
    assert outcome.chunk_times == [0.1, 0.2, 0.4] and outcome.chunk_tokens == [1, 3, 1]
    error = make_parser("generate")
    with pytest.raises(RequestFailed):
        error.feed(events[0] + b'data: {"error": "oom"}\n\n', 0.1)
