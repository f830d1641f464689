"""Streaming responses of the simulated server: SGLang's ``/generate`` stream and the
OpenAI-compatible SSE stream, chunk by chunk as the scheduler produces tokens.

The streaming hot path avoids per-chunk ``json.dumps``: token text is plain ASCII words, so
chunks are assembled from pre-encoded byte fragments.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from specconsole.sim.faces.sglang_server import SimServer
from specconsole.sim.scheduler import SimRequest

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


async def wait_finished(sim: SimServer, req: SimRequest) -> None:
    try:
        while not req.finished:
            req.event.clear()
            await req.event.wait()
    except asyncio.CancelledError:
        sim.scheduler.abort(req)
        raise


def meta_info(sim: SimServer, req: SimRequest, prompt_tokens: int) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "id": req.rid,
        "finish_reason": {"type": "length", "length": req.generated},
        "prompt_tokens": prompt_tokens,
        "weight_version": "default",
        "completion_tokens": req.generated,
        "cached_tokens": 0,
        "reasoning_tokens": 0,
        "num_retractions": 0,
        "e2e_latency": (req.finished_at or time.monotonic()) - req.created,
    }
    a = sim.args
    if a.speculative and req.verify_ct > 0:
        # As SGLang: completion tokens (the prefill's first token included) per verify step.
        verify_ct = req.verify_ct
        correct = max(req.generated - 1 - verify_ct, 0)
        meta.update(
            {
                "spec_verify_ct": verify_ct,
                "spec_accept_length": req.generated / verify_ct,
                "spec_accept_rate": correct / (verify_ct * max(a.num_draft_tokens - 1, 1)),
                "spec_num_correct_drafts": correct,
                "spec_num_proposed_drafts": verify_ct * (a.num_draft_tokens - 1),
                "spec_accepted_drafts": correct,
                "spec_proposed_drafts": verify_ct * (a.num_draft_tokens - 1),
            }
        )
    return meta


async def generate_stream(
    sim: SimServer, req: SimRequest, prompt_tokens: int
) -> AsyncIterator[bytes]:
    """SGLang native streaming: each chunk carries the full text so far."""
    head = b'data: {"text":"'
    mid = (
        '","meta_info":{"id":"'
        + req.rid
        + '","finish_reason":null,"prompt_tokens":'
        + str(prompt_tokens)
        + ',"weight_version":"default","completion_tokens":'
    ).encode()
    tail = b',"cached_tokens":0}}\n\n'
    try:
        while True:
            if req.pending_tokens == 0 and not req.finished:
                req.event.clear()
                await req.event.wait()
            if req.finished:
                break
            req.pending_tokens = 0
            yield head + req.text.encode() + mid + str(req.generated).encode() + tail
        final = {"text": req.text, "meta_info": meta_info(sim, req, prompt_tokens)}
        yield b"data: " + json.dumps(final).encode() + b"\n\n"
        yield SSE_DONE
    finally:
        if not req.finished:
            sim.scheduler.abort(req)


async def openai_stream(
    sim: SimServer,
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
