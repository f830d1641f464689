"""A tiny SGLang-format streaming server, run as a real process, for the engine's own tests.

Why it exists next to the full simulator: the engine's parsing and scheduling tests need
exact, hand-checkable streams — fixed chunk patterns (several tokens per chunk, as accepted
drafts produce), OpenAI usage with and without per-chunk counts, HTTP errors and dropped
connections on demand — that a realistic simulator should not be bent to produce. The wire
format follows SGLang's (``python/sglang/srt/entrypoints/http_server.py`` in sgl-project/sglang).

Control is through the prompt text: ``FAIL500`` answers 500, ``DROP`` aborts the stream
midway. Flags: ``--step-s`` seconds per decode step, ``--chunks 1,3,2`` tokens per step
(cycled), ``--no-continuous-usage`` to send OpenAI usage only at the end,
``--metrics-reset-every N`` to restart the ``/metrics`` counters every N-th scrape.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

STATE = {"tokens": 0, "verify": 0, "in_flight": 0, "max_in_flight": 0, "flushes": 0}
COUNTERS = {"tokens": 0, "verify": 0, "scrapes": 0}
"""What ``/metrics`` counts (SGLang's names): since start, never reset by a flush — unless
``--metrics-reset-every N`` restarts them every N-th scrape, as a server restarted between
two scrapes would (issue 44)."""


def _chunks(total: int, pattern: list[int]) -> list[int]:
    out: list[int] = []
    i = 0
    while sum(out) < total:
        out.append(min(pattern[i % len(pattern)], total - sum(out)))
        i += 1
    return out


def make_app(
    step_s: float, pattern: list[int], continuous_usage: bool, reset_every: int = 0
) -> Starlette:
    async def steps(prompt: str, total: int) -> AsyncIterator[int]:
        STATE["in_flight"] += 1
        STATE["max_in_flight"] = max(STATE["max_in_flight"], STATE["in_flight"])
        try:
            for i, k in enumerate(_chunks(total, pattern)):
                await asyncio.sleep(step_s)
                if "DROP" in prompt and i == 2:
                    raise RuntimeError("dropped on purpose")
                STATE["tokens"] += k
                STATE["verify"] += 1
                COUNTERS["tokens"] += k
                COUNTERS["verify"] += 1
                yield k
        finally:
            STATE["in_flight"] -= 1

    async def generate(request: Request) -> Response:
        body = await request.json()
        prompt = body["text"]
        if "FAIL500" in prompt:
            return PlainTextResponse("internal error", status_code=500)
        total = int(body["sampling_params"]["max_new_tokens"])
        prompt_tokens = len(prompt.split())

        async def stream() -> AsyncIterator[bytes]:
            n = 0
            verify = 0
            async for k in steps(prompt, total):
                n += k
                verify += 1
                meta = {
                    "id": "r",
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": n,
                    "finish_reason": None,
                }
                if n == total:
                    meta.update(
                        {
                            "finish_reason": {"type": "length", "length": n},
                            "spec_verify_ct": verify,
                            "e2e_latency": 0.0,
                        }
                    )
                chunk = {"text": "tok " * n, "meta_info": meta}
                yield f"data: {json.dumps(chunk)}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    def openai(chat: bool) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            body = await request.json()
            prompt = body["messages"][-1]["content"] if chat else body["prompt"]
            if "FAIL500" in prompt:
                return JSONResponse({"error": {"message": "boom"}}, status_code=500)
            total = int(body["max_tokens"])
            prompt_tokens = len(prompt.split())

            async def stream() -> AsyncIterator[bytes]:
                if chat:
                    first = {"choices": [{"index": 0, "delta": {"role": "assistant"}}]}
                    yield f"data: {json.dumps(first)}\n\n".encode()
                n = 0
                async for k in steps(prompt, total):
                    n += k
                    piece = "ab" * k
                    choice = (
                        {"index": 0, "delta": {"content": piece}}
                        if chat
                        else {"index": 0, "text": piece}
                    )
                    chunk: dict[str, object] = {"choices": [choice]}
                    if continuous_usage:
                        chunk["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": n}
                    yield f"data: {json.dumps(chunk)}\n\n".encode()
                usage = {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": n,
                    "total_tokens": prompt_tokens + n,
                }
                yield f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode()
                yield b"data: [DONE]\n\n"

            return StreamingResponse(stream(), media_type="text/event-stream")

        return handler

    async def flush(request: Request) -> Response:
        if STATE["in_flight"]:
            return PlainTextResponse("busy", status_code=400)
        STATE.update(tokens=0, verify=0, flushes=STATE["flushes"] + 1)
        return PlainTextResponse("Cache flushed.")

    async def server_info(request: Request) -> Response:
        state: dict[str, object] = {
            "flushes": STATE["flushes"],
            "max_in_flight": STATE["max_in_flight"],
        }
        if STATE["verify"]:
            state["avg_spec_accept_length"] = STATE["tokens"] / STATE["verify"]
        return JSONResponse({"internal_states": [state], "version": "mini"})

    async def metrics(request: Request) -> Response:
        COUNTERS["scrapes"] += 1
        if reset_every and COUNTERS["scrapes"] % reset_every == 0:
            COUNTERS.update(tokens=0, verify=0)  # a restart between two scrapes
        labels = 'model_name="mini-model",is_streaming="true"'
        text = (
            "# TYPE sglang:spec_verify_calls_total counter\n"
            f'sglang:spec_verify_calls_total{{model_name="mini-model"}} {COUNTERS["verify"]}.0\n'
            "# TYPE sglang:generation_tokens_total counter\n"
            f"sglang:generation_tokens_total{{{labels}}} {COUNTERS['tokens']}.0\n"
        )
        return PlainTextResponse(text)

    async def reset_peak(request: Request) -> Response:
        STATE["max_in_flight"] = 0
        return PlainTextResponse("ok")

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "mini-model"}]})

    return Starlette(
        routes=[
            Route("/generate", generate, methods=["POST"]),
            Route("/v1/completions", openai(False), methods=["POST"]),
            Route("/v1/chat/completions", openai(True), methods=["POST"]),
            Route("/flush_cache", flush, methods=["POST", "GET"]),
            Route("/server_info", server_info),
            Route("/metrics", metrics),
            Route("/reset_peak", reset_peak, methods=["POST"]),
            Route("/v1/models", models),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--step-s", type=float, default=0.01)
    parser.add_argument("--chunks", default="1")
    parser.add_argument("--no-continuous-usage", action="store_true")
    parser.add_argument("--metrics-reset-every", type=int, default=0)
    args = parser.parse_args()
    # IPPROTO_TCP explicitly: asyncio only sets TCP_NODELAY on accepted sockets whose proto is
    # TCP, and without it Nagle's algorithm batches SSE chunks behind delayed ACKs (~40 ms).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    app = make_app(
        args.step_s,
        [int(x) for x in args.chunks.split(",")],
        not args.no_continuous_usage,
        args.metrics_reset_every,
    )
    config = uvicorn.Config(app, log_level="error", access_log=False)
    server = uvicorn.Server(config)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())
