"""The OpenAI-compatible SSE stream every face serves, chunk by chunk as the scheduler
produces tokens; each face gives its engine's extra keys (:class:`StreamShape`).

The streaming hot path avoids per-chunk ``json.dumps``: token text is plain ASCII words, so
chunks are assembled from pre-encoded byte fragments.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from specconsole.sim.box import SimBox
from specconsole.sim.scheduler import SimRequest

__all__ = ["SSE_DONE", "StreamShape", "openai_stream", "wait_finished"]

SSE_DONE = b"data: [DONE]\n\n"


@dataclass(frozen=True, slots=True)
class StreamShape:
    """What an OpenAI-compatible front end puts in its streamed chunks beyond the text: the
    keys after ``finish_reason`` and in the cumulative ``usage`` (SGLang's by default)."""

    choice_tail: str = ""
    """Keys after ``"finish_reason":null`` in a completion's content chunk."""
    finish_tail: str = ',"matched_stop":null'
    """Keys after ``"finish_reason":"length"`` in the last chunk."""
    usage_tail: str = ',"prompt_tokens_details":null,"reasoning_tokens":0'
    """Keys after ``completion_tokens`` in a continuous ``usage``."""


SGLANG_SHAPE = StreamShape()


async def wait_finished(sim: SimBox, req: SimRequest) -> None:
    try:
        while not req.finished:
            req.event.clear()
            await req.event.wait()
    except asyncio.CancelledError:
        sim.scheduler.abort(req)
        raise


async def openai_stream(
    sim: SimBox,
    req: SimRequest,
    prompt_tokens: int,
    chat: bool,
    model: str,
    include_usage: bool,
    continuous_usage: bool = False,
    shape: StreamShape = SGLANG_SHAPE,
) -> AsyncIterator[bytes]:
    """OpenAI-style streaming: each chunk carries only the new text (a delta).

    With ``stream_options.continuous_usage_stats`` every content chunk also carries the
    cumulative ``usage`` (as SGLang's serving_chat / serving_completions do), so a client
    knows how many tokens each multi-token chunk holds.
    """
    created = str(int(time.time()))
    obj = "chat.completion.chunk" if chat else "text_completion"
    head = (
        'data: {"id":"'
        + req.rid
        + '","object":"'
        + obj
        + '","created":'
        + created
        + ',"model":'
        + json.dumps(model)
        + ',"choices":[{"index":0,'
    ).encode()
    if chat:
        pre, post = b'"delta":{"content":"', b'"},"logprobs":null,"finish_reason":null}]'
    else:
        pre = b'"text":"'
        post = ('","logprobs":null,"finish_reason":null' + shape.choice_tail + "}]").encode()
    usage_tail = shape.usage_tail.encode()
    usage_head = (',"usage":{"prompt_tokens":' + str(prompt_tokens) + ',"total_tokens":').encode()
    try:
        if chat:
            yield (
                head + b'"delta":{"role":"assistant","content":""},"logprobs":null,'
                b'"finish_reason":null}]}\n\n'
            )
        while True:
            if req.pending_tokens == 0 and not req.finished:
                req.event.clear()
                await req.event.wait()
            if req.pending_tokens:
                start = req.pending_from
                req.pending_from = len(req.text)
                req.pending_tokens = 0
                if continuous_usage:
                    n = req.generated
                    usage = (
                        usage_head
                        + b"%d" % (prompt_tokens + n)
                        + b',"completion_tokens":%d' % n
                        + usage_tail
                        + b"}}\n\n"
                    )
                    yield head + pre + req.text[start:].encode() + post + usage
                else:
                    yield head + pre + req.text[start:].encode() + post + b"}\n\n"
            if req.finished:
                break
        delta = '"delta":{},' if chat else '"text":"",'
        yield (
            head
            + (
                delta + '"logprobs":null,"finish_reason":"length"' + shape.finish_tail + "}]}\n\n"
            ).encode()
        )
        if include_usage:
            usage = {
                "id": req.rid,
                "object": obj,
                "created": int(created),
                "model": model,
                "choices": [],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": req.generated,
                    "total_tokens": prompt_tokens + req.generated,
                },
            }
            yield b"data: " + json.dumps(usage).encode() + b"\n\n"
        yield SSE_DONE
    finally:
        if not req.finished:
            sim.scheduler.abort(req)
