"""The simulator's vLLM face over HTTP: the routes vLLM's OpenAI-compatible front end serves,
with its shapes.

Why: the console and the benchmark reach a vLLM server through these — ``/health`` (200 once
the engine is up; the port refuses connections before), ``/version`` (the release),
``/v1/models``, the completions and chat APIs (streamed, ``stream_options.include_usage`` and
``continuous_usage_stats``; vLLM's ``stop_reason`` key; its 400 when a request would outgrow
``max_model_len``) and ``/metrics``: Prometheus text with vLLM's names — the running and
waiting requests, KV-cache usage, token and request counters, its latency histograms, and the
speculative-decoding counters (``vllm/v1/spec_decode/metrics.py``, never reset) under the
names the vLLM engine reads them by — its ``Endpoints.spec_counters``, reached through the
registry, so the face serves exactly what the product measures (``tests/oracle`` checks each
name against the releases) — labelled ``engine`` and ``model_name`` as ``prometheus_client``
writes them.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from specconsole.core.engine.registry import get_engine
from specconsole.sim.faces.apikey import RequireApiKey
from specconsole.sim.faces.bodies import count_prompt_tokens, model_list, positive_int, prompt_text
from specconsole.sim.faces.streams import StreamShape, openai_stream, wait_finished
from specconsole.sim.faces.vllm.args import VLLM
from specconsole.sim.faces.vllm.server import VllmServer

__all__ = ["VLLM_SHAPE", "build_app", "metrics_text"]

VLLM_SHAPE = StreamShape(
    choice_tail=',"stop_reason":null', finish_tail=',"stop_reason":null', usage_tail=""
)
"""vLLM's chunks: ``stop_reason`` after ``finish_reason``; a bare ``usage``."""

DEFAULT_MAX_TOKENS = 16
"""vLLM's completions default ``max_tokens`` when a request gives none."""


def _error(status: int, message: str, kind: str = "BadRequestError") -> JSONResponse:
    return JSONResponse(
        {"object": "error", "message": message, "type": kind, "param": None, "code": status},
        status_code=status,
    )


def _too_long(sim: VllmServer, prompt: int, max_tokens: int) -> JSONResponse | None:
    """vLLM's refusals of a request longer than ``max_model_len`` (``serving_engine.py``)."""
    limit = sim.args.context_length
    if prompt >= limit:
        return _error(
            400,
            f"This model's maximum context length is {limit} tokens. However, your request "
            f"has {prompt} input tokens. Please reduce the length of the input messages.",
        )
    if prompt + max_tokens > limit:
        return _error(
            400,
            f"'max_tokens' or 'max_completion_tokens' is too large: {max_tokens}. This model's "
            f"maximum context length is {limit} tokens and your request has {prompt} input "
            f"tokens ({max_tokens} > {limit} - {prompt}).",
        )
    return None


FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")
"""vLLM's ``FINISH_REASON_STRINGS`` (0.32.0, 0.34.0): one ``request_success`` series each."""


def _family(name: str, kind: str, doc: str, rows: list[tuple[str, float]]) -> list[str]:
    out = [f"# HELP {name} {doc}", f"# TYPE {name} {kind}"]
    out += [f"{name}{{{labels}}} {float(value)!r}" for labels, value in rows]
    return out


def _created(name: str, doc: str, labels: list[str], stamp: float) -> list[str]:
    """prometheus_client's ``NAME_created`` gauge family beside a counter or histogram (the
    series' creation time, not a count: a reader must skip it)."""
    return _family(f"{name}_created", "gauge", doc, [(row, stamp) for row in labels])


def _counter(name: str, doc: str, rows: list[tuple[str, float]], stamp: float) -> list[str]:
    """A counter family (``NAME_total``) and its ``NAME_created`` gauges, as a real vLLM
    exposes them."""
    out = _family(name, "counter", doc, rows)
    return out + _created(name.removesuffix("_total"), doc, [r for r, _v in rows], stamp)


def metrics_text(sim: VllmServer) -> str:
    """``/metrics`` as ``prometheus_client`` exposes vLLM's registry (labels sorted)."""
    s, a = sim.scheduler, sim.args
    base = f'engine="0",model_name="{a.served_model_name}"'
    usage = s.used_tokens / max(s.capacity, 1)
    out: list[str] = []
    out += _family(
        "vllm:num_requests_running",
        "gauge",
        "Number of requests in model execution batches.",
        [(base, len(s.running))],
    )
    out += _family(
        "vllm:num_requests_waiting",
        "gauge",
        "Number of requests waiting to be processed.",
        [(base, len(s.waiting))],
    )
    out += _family(
        "vllm:kv_cache_usage_perc",
        "gauge",
        "KV-cache usage. 1 means 100 percent usage.",
        [(base, usage)],
    )
    born = sim.created
    out += _counter(
        "vllm:prompt_tokens_total",
        "Number of prefill tokens processed.",
        [(base, s.total_prompt_tokens)],
        born,
    )
    names = get_engine(VLLM).endpoints.spec_counters
    assert names is not None and names.output_tokens is not None
    assert names.draft_tokens and names.accepted and names.per_position
    out += _counter(
        names.output_tokens,
        "Number of generation tokens processed.",
        [(base, s.total_generated_tokens)],
        born,
    )
    out += _counter(
        "vllm:request_success_total",
        "Count of successfully processed requests.",
        [
            (
                f'engine="0",finished_reason="{reason}",model_name="{a.served_model_name}"',
                s.finished_count if reason == "length" else 0,
            )
            for reason in FINISH_REASONS
        ],
        born,
    )
    if a.speculative or a.steps_by_batch:
        c = s.draft_counters
        out += _counter(names.drafts, "Number of spec decoding drafts.", [(base, c.drafts)], born)
        out += _counter(
            names.draft_tokens, "Number of draft tokens.", [(base, c.draft_tokens)], born
        )
        out += _counter(names.accepted, "Number of accepted tokens.", [(base, c.accepted)], born)
        per_pos = c.per_position(a.num_steps)
        label = names.position_label
        out += _counter(
            names.per_position,
            "Accepted tokens per draft position.",
            [(f'{base},{label}="{i}"', n) for i, n in enumerate(per_pos)],
            born,
        )
    histograms = (
        ("vllm:time_to_first_token_seconds", "time to first token", s.ttft),
        ("vllm:e2e_request_latency_seconds", "e2e request latency", s.e2e),
    )
    for name, what, histogram in histograms:
        doc = f"Histogram of {what} in seconds."
        out += histogram.exposition(name, doc, base)
        out += _created(name, doc, [base], born)
    return "\n".join(out) + "\n"


def build_app(sim: VllmServer) -> Starlette:
    """The ASGI application: vLLM's routes over ``sim``."""

    def dead() -> Response | None:
        if sim.scheduler.crashed or sim.shutting_down:
            return _error(
                500, "The server had an error while processing your request.", "InternalServerError"
            )
        return None

    async def health(request: Request) -> Response:
        ok = sim.ready and not sim.scheduler.crashed and not sim.shutting_down
        return Response(status_code=200 if ok else 503)

    async def version(request: Request) -> Response:
        return JSONResponse({"version": sim.release})

    async def models(request: Request) -> Response:
        a = sim.args
        name, root = a.served_model_name, a.model_path
        return JSONResponse(model_list(name, sim.created, "vllm", root, a.context_length))

    async def metrics(request: Request) -> Response:
        return PlainTextResponse(
            metrics_text(sim), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    async def completions(request: Request) -> Response:
        return await _openai(request, chat=False)

    async def chat(request: Request) -> Response:
        return await _openai(request, chat=True)

    async def _openai(request: Request, chat: bool) -> Response:
        if (resp := dead()) is not None:
            return resp
        try:
            payload = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _error(400, "request body is not valid JSON")
        if not isinstance(payload, dict):
            return _error(400, "request body must be a JSON object")
        default = sim.args.context_length if chat else DEFAULT_MAX_TOKENS
        try:
            asked = payload.get("max_completion_tokens", payload.get("max_tokens"))
            max_tokens = positive_int(asked, "max_tokens", default)
        except ValueError as exc:
            return _error(400, str(exc))
        if chat and not isinstance(payload.get("messages"), list):
            return _error(400, "messages: Field required")
        if not chat and payload.get("prompt") is None:
            return _error(400, "prompt: Field required")
        prompt = count_prompt_tokens(payload)
        if chat and asked is None:
            max_tokens = max(sim.args.context_length - prompt, 1)
        if (resp := _too_long(sim, prompt, max_tokens)) is not None:
            return resp
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        req = sim.scheduler.submit(rid, prompt, max_tokens, prompt_text(payload))
        model = str(payload.get("model") or sim.args.served_model_name)
        if payload.get("stream"):
            opts = payload.get("stream_options") or {}
            usage = bool(isinstance(opts, dict) and opts.get("include_usage"))
            continuous = bool(isinstance(opts, dict) and opts.get("continuous_usage_stats"))
            return StreamingResponse(
                openai_stream(sim, req, prompt, chat, model, usage, continuous, VLLM_SHAPE),
                media_type="text/event-stream",
            )
        await wait_finished(sim, req)
        choice: dict[str, Any] = {
            "index": 0,
            "logprobs": None,
            "finish_reason": "length",
            "stop_reason": None,
        }
        if chat:
            choice["message"] = {"role": "assistant", "content": req.text, "tool_calls": []}
        else:
            choice["text"] = req.text
        return JSONResponse(
            {
                "id": rid,
                "object": "chat.completion" if chat else "text_completion",
                "created": int(time.time()),
                "model": model,
                "choices": [choice],
                "usage": {
                    "prompt_tokens": prompt,
                    "total_tokens": prompt + req.generated,
                    "completion_tokens": req.generated,
                },
            }
        )

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/ping", health, methods=["GET", "POST"]),
        Route("/version", version, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
    ]
    api_key = sim.parsed.values.get("api_key")
    middleware: list[Middleware] = []
    if api_key:
        middleware.append(Middleware(RequireApiKey, api_key=str(api_key)))
    return Starlette(routes=routes, middleware=middleware)
