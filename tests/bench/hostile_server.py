"""A tiny hostile HTTP server on loopback, run as its own process (issue 27, "hangs").

Each mode misbehaves in one way a broken or hostile inference server could: it accepts and
never answers, trickles its response head or keep-alive bytes forever, streams tokens without
end, floods one endless SSE line, answers control requests with deeply nested JSON, sends
a negative Content-Length, sends counts that are no counts or a final usage far past what it
streamed, or answers everything with a proxy's HTML page (``html``).
``python -m tests.bench.hostile_server MODE`` prints its port and serves until terminated.
Every loop sleeps between sends and stops when the client goes.
"""

from __future__ import annotations

import asyncio
import json
import sys

CHUNKED_SSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
)


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def _read_request(reader: asyncio.StreamReader) -> str:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    if length:
        await reader.readexactly(length)
    return head.split(b" ", 2)[1].decode()


async def _forever(writer: asyncio.StreamWriter, piece: bytes, gap_s: float) -> None:
    for _ in range(100_000):  # bounded: ~2.8 h at the slowest gap, ended by the client
        writer.write(piece)
        await writer.drain()
        await asyncio.sleep(gap_s)


async def handle(mode: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        path = await _read_request(reader)
        if mode == "silent":
            await reader.read()  # until the client gives up
        elif mode == "trickle-head":
            await _forever(writer, b"X", 0.05)
        elif mode == "trickle-sse":
            writer.write(CHUNKED_SSE)
            await _forever(writer, _chunk(b": keep-alive\n\n"), 0.05)
        elif mode == "endless-tokens":
            writer.write(CHUNKED_SSE)
            for count in range(1, 10_000_000):
                event = {"text": "x", "meta_info": {"completion_tokens": count}}
                writer.write(_chunk(b"data: " + json.dumps(event).encode() + b"\n\n"))
                await writer.drain()
                await asyncio.sleep(0.001)
        elif mode == "flood-line":
            writer.write(CHUNKED_SSE)
            for _ in range(10_000):
                writer.write(_chunk(b"data: " + b"x" * 65536))
                await writer.drain()
        elif mode == "deep-json":
            depth = 100_000
            body = b"[" * depth + b"]" * depth
            if path.startswith("/generate"):
                writer.write(CHUNKED_SSE)
                writer.write(_chunk(b"data: " + body + b"\n\n") + b"0\r\n\r\n")
            else:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        elif mode == "html":  # a proxy in front: every answer an HTML error page
            page = b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>"
            head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n"
            writer.write(head % len(page) + page)
        elif mode == "lying-counts":  # a count that is no count
            event = {"text": "x", "meta_info": {"completion_tokens": 1, "prompt_tokens": "many"}}
            events = [json.dumps(event).encode(), b"[DONE]"]
            writer.write(CHUNKED_SSE + b"".join(_chunk(b"data: " + e + b"\n\n") for e in events))
            writer.write(b"0\r\n\r\n")
        elif mode == "inflated-usage":  # one chunk, and a final usage of a billion tokens
            usage = {"completion_tokens": 10**9, "prompt_tokens": 3}
            events = [
                json.dumps({"choices": [{"text": "x"}]}).encode(),
                json.dumps(
                    {"choices": [{"text": "", "finish_reason": "length"}], "usage": usage}
                ).encode(),
                b"[DONE]",
            ]
            writer.write(CHUNKED_SSE + b"".join(_chunk(b"data: " + e + b"\n\n") for e in events))
            writer.write(b"0\r\n\r\n")
        elif mode == "negative-length":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello")
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def main(mode: str) -> None:
    server = await asyncio.start_server(
        lambda r, w: handle(mode, r, w), "127.0.0.1", 0, limit=1 << 20
    )
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
