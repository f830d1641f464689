"""SGLang's native ``/generate`` stream and its ``meta_info``, chunk by chunk as the
scheduler produces tokens.

Why apart from the routes (:mod:`.http`): the native stream is the hot path of a benchmark
against SGLang's own API; each chunk carries the full text so far and the completion tokens,
assembled from pre-encoded byte fragments (no ``json.dumps`` per chunk), and the last one
SGLang's speculative counters for the request.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from specconsole.sim.faces.sglang.server import SGLangServer
from specconsole.sim.faces.streams import SSE_DONE
from specconsole.sim.scheduler import SimRequest

__all__ = ["generate_stream", "meta_info"]


def meta_info(sim: SGLangServer, req: SimRequest, prompt_tokens: int) -> dict[str, Any]:
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
    sim: SGLangServer, req: SimRequest, prompt_tokens: int
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
