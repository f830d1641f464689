"""The simulated server's HTTP API (SGLang's routes on starlette): ``/health``,
``/server_info``, ``/flush_cache``, ``/generate`` and the OpenAI-compatible endpoints, with
SGLang's request validation and error shapes and ``--api-key`` like SGLang.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from specconsole.sim.faces.apikey import RequireApiKey
from specconsole.sim.faces.bodies import count_prompt_tokens as _count_prompt_tokens
from specconsole.sim.faces.bodies import model_list
from specconsole.sim.faces.bodies import positive_int as _positive_int
from specconsole.sim.faces.bodies import prompt_text as _prompt_text
from specconsole.sim.faces.sglang import log as logfmt
from specconsole.sim.faces.sglang.args import imitated_engine
from specconsole.sim.faces.sglang.generate import generate_stream, meta_info
from specconsole.sim.faces.sglang.server import SGLangServer
from specconsole.sim.faces.streams import openai_stream, wait_finished

DEFAULT_MAX_NEW_TOKENS = 128
"""SGLang's default ``max_new_tokens`` when a request gives none."""


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(
        {"object": "error", "message": message, "type": "BadRequestError", "code": status},
        status_code=status,
    )


def _too_long(sim: SGLangServer, prompt_tokens: int, max_new: int) -> JSONResponse | None:
    """SGLang refuses requests longer than the context (or than the whole KV pool)."""
    limit = min(sim.args.context_length, max(sim.plan.max_total_num_tokens, 1))
    if prompt_tokens + max_new > limit:
        return _error(
            400,
            (
                f"Requested token count exceeds the model's maximum context length of {limit} "
                f"tokens. You requested a total of {prompt_tokens + max_new} tokens: "
                f"{prompt_tokens} tokens from the input messages and {max_new} tokens for the "
                "completion. Please reduce the number of tokens in the input messages or the "
                "completion to fit within the limit."
            ),
        )
    return None


def build_app(sim: SGLangServer) -> Starlette:
    """The ASGI application: SGLang's endpoints over ``sim``."""

    def not_ready() -> Response | None:
        if sim.shutting_down or sim.scheduler.crashed:
            return _error(503, "The server is shutting down.")
        if not sim.ready:
            return _error(503, "The server is still loading.")
        return None

    async def health(request: Request) -> Response:
        if sim.ready and not sim.shutting_down and not sim.scheduler.crashed:
            return Response(status_code=200)
        return Response(status_code=503)

    async def server_info(request: Request) -> Response:
        return JSONResponse(sim.server_info())

    async def model_info(request: Request) -> Response:
        a = sim.args
        return JSONResponse(
            {
                "model_path": a.model_path,
                "tokenizer_path": a.server_args.get("tokenizer_path", a.model_path),
                "is_generation": True,
                "preferred_sampling_params": None,
                "weight_version": "default",
                "has_image_understanding": False,
                "has_audio_understanding": False,
                "model_type": sim.profile.model.model_type,
                "architectures": [sim.profile.model.architecture],
            }
        )

    async def models(request: Request) -> Response:
        a = sim.args
        name = a.served_model_name
        owner = imitated_engine().name
        return JSONResponse(model_list(name, sim.created, owner, name, a.context_length))

    async def flush_cache(request: Request) -> Response:
        s = sim.scheduler
        if not sim.ready or not s.idle:
            sim.log.rank(
                logfmt.cache_not_flushed(len(s.waiting), len(s.running)), level=logging.WARNING
            )
            return PlainTextResponse(
                "Cache not flushed. Please check backend logs for more details. (When there are "
                "running or waiting requests, the operation will not be performed.)\n",
                status_code=400,
            )
        s.reset_spec_counters()
        sim.log.rank(logfmt.CACHE_FLUSHED)
        return PlainTextResponse(
            "Cache flushed.\nPlease check backend logs for more details. (When there are "
            "running or waiting requests, the operation will not be performed.)\n"
        )

    async def set_internal_state(request: Request) -> Response:
        """SGLang's hot update: only the accept thresholds (and pp_max_micro_batch_size)."""
        if (resp := not_ready()) is not None:
            return resp
        payload = await read_json(request)
        if isinstance(payload, Response):
            return payload
        updates = payload.get("server_args")
        if not isinstance(updates, dict):
            return _error(400, 'body must be {"server_args": {...}}')
        result = sim.set_internal_state(updates)
        return JSONResponse([result])

    async def metrics(request: Request) -> Response:
        if not sim.args.server_args.get("enable_metrics"):
            return PlainTextResponse("Not Found", status_code=404)
        return PlainTextResponse(
            sim.metrics_text(), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    async def read_json(request: Request) -> dict[str, Any] | Response:
        try:
            payload = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _error(400, "request body is not valid JSON")
        if not isinstance(payload, dict):
            return _error(400, "request body must be a JSON object")
        return payload

    async def generate(request: Request) -> Response:
        if (resp := not_ready()) is not None:
            return resp
        payload = await read_json(request)
        if isinstance(payload, Response):
            return payload
        sp = payload.get("sampling_params") or {}
        if not isinstance(sp, dict):
            return _error(400, "sampling_params must be an object")
        try:
            max_new = _positive_int(
                sp.get("max_new_tokens"), "sampling_params.max_new_tokens", DEFAULT_MAX_NEW_TOKENS
            )
        except ValueError as exc:
            return _error(400, str(exc))
        prompt_tokens = _count_prompt_tokens(payload)
        if (resp := _too_long(sim, prompt_tokens, max_new)) is not None:
            return resp
        rid = str(payload.get("rid") or uuid.uuid4().hex)
        req = sim.scheduler.submit(rid, prompt_tokens, max_new, _prompt_text(payload))
        if payload.get("stream"):
            return StreamingResponse(
                generate_stream(sim, req, prompt_tokens), media_type="text/event-stream"
            )
        await wait_finished(sim, req)
        return JSONResponse({"text": req.text, "meta_info": meta_info(sim, req, prompt_tokens)})

    async def completions(request: Request) -> Response:
        return await _openai(request, chat=False)

    async def chat_completions(request: Request) -> Response:
        return await _openai(request, chat=True)

    async def _openai(request: Request, chat: bool) -> Response:
        if (resp := not_ready()) is not None:
            return resp
        payload = await read_json(request)
        if isinstance(payload, Response):
            return payload
        try:
            max_new = _positive_int(
                payload.get("max_completion_tokens", payload.get("max_tokens")),
                "max_tokens",
                DEFAULT_MAX_NEW_TOKENS,
            )
        except ValueError as exc:
            return _error(400, str(exc))
        if chat and not isinstance(payload.get("messages"), list):
            return _error(400, "messages must be a list of {role, content} objects")
        if not chat and payload.get("prompt") is None:
            return _error(400, "prompt is required")
        prompt_tokens = _count_prompt_tokens(payload)
        if (resp := _too_long(sim, prompt_tokens, max_new)) is not None:
            return resp
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        req = sim.scheduler.submit(rid, prompt_tokens, max_new, _prompt_text(payload))
        if payload.get("stream"):
            opts = payload.get("stream_options") or {}
            usage = bool(isinstance(opts, dict) and opts.get("include_usage"))
            continuous = bool(isinstance(opts, dict) and opts.get("continuous_usage_stats"))
            return StreamingResponse(
                openai_stream(
                    sim,
                    req,
                    prompt_tokens,
                    chat,
                    str(payload.get("model") or sim.args.served_model_name),
                    usage,
                    continuous,
                ),
                media_type="text/event-stream",
            )
        await wait_finished(sim, req)
        usage_obj = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": req.generated,
            "total_tokens": prompt_tokens + req.generated,
        }
        choice: dict[str, Any] = {
            "index": 0,
            "logprobs": None,
            "finish_reason": "length",
            "matched_stop": None,
        }
        if chat:
            choice["message"] = {
                "role": "assistant",
                "content": req.text,
                "reasoning_content": None,
                "tool_calls": None,
            }
        else:
            choice["text"] = req.text
        return JSONResponse(
            {
                "id": rid,
                "object": "chat.completion" if chat else "text_completion",
                "created": int(time.time()),
                "model": payload.get("model") or sim.args.served_model_name,
                "choices": [choice],
                "usage": usage_obj,
            }
        )

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/health_generate", health, methods=["GET"]),
        Route("/server_info", server_info, methods=["GET"]),
        Route("/get_server_info", server_info, methods=["GET"]),
        Route("/model_info", model_info, methods=["GET"]),
        Route("/get_model_info", model_info, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/flush_cache", flush_cache, methods=["GET", "POST"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/set_internal_state", set_internal_state, methods=["POST"]),
        Route("/generate", generate, methods=["POST"]),
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
    ]
    api_key = sim.parsed.values.get("api_key")
    middleware = [Middleware(RequireApiKey, api_key=str(api_key))] if api_key else []
    return Starlette(routes=routes, middleware=middleware)
