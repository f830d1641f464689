"""The simulated SGLang server process: load sequence, HTTP endpoints, faults, shutdown.

One asyncio process plays all of SGLang's parts: it prints the load sequence (weights, KV
pools, CUDA-graph capture, capacity line, ready line) with timing spread over
``--sim-load-seconds``, serves SGLang's HTTP API with starlette on uvicorn, runs the
:class:`~specconsole.sim.engine.Scheduler` loop, and dies the way SGLang dies (scheduler
traceback, ``Received sigquit ...``, the process tree killed) when the memory model or a fault
flag says so. Every log line is flushed as it is written because the console follows this log
live and must see a fatal line the moment it appears.

The streaming hot path avoids per-chunk ``json.dumps``: token text is plain ASCII words, so
chunks are assembled from pre-encoded byte fragments.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import signal
import socket
import sys
import time
import traceback
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from specconsole.sim import logfmt
from specconsole.sim.args import ParsedArgs, ResolvedArgs, SimArgError, parse_argv, resolve
from specconsole.sim.engine import Scheduler, SchedulerCrash, SimRequest
from specconsole.sim.model import LoadFailure, MemoryPlan, plan_memory, uses_cuda_graph
from specconsole.sim.parentwatch import parent_pid, watch_parent
from specconsole.sim.profile import Profile, ProfileError, default_profile_path, load_profile

DEFAULT_MAX_NEW_TOKENS = 128
"""SGLang's default ``max_new_tokens`` when a request gives none."""


LOG_LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}


class LogWriter:
    """Writes SGLang-formatted records to stdout, one flushed write per record.

    Records below ``--log-level`` are dropped, as SGLang's logger drops them: with
    ``warning`` the load lines, Decode/Prefill statistics and even the ready line disappear.
    """

    def __init__(self, tp_size: int, stream: Any = None, level: str = "info") -> None:
        self.tp_size = tp_size
        self.stream = stream if stream is not None else sys.stdout
        self.min_level = LOG_LEVELS.get(str(level).lower(), logging.INFO)
        self.lines_written = 0

    def main(self, message: str, level: int = logging.INFO) -> None:
        """A record from the launcher / tokenizer manager / HTTP server (no TP tag)."""
        if level >= self.min_level:
            self._write(logfmt.prefix() + message)

    def rank(self, message: str, rank: int = 0, level: int = logging.INFO) -> None:
        """A record from a scheduler rank (``TP<n>`` tag when tp > 1)."""
        if level >= self.min_level:
            self._write(logfmt.prefix(tp_rank=rank if self.tp_size > 1 else None) + message)

    def all_ranks(self, message: str, level: int = logging.INFO) -> None:
        for r in range(self.tp_size):
            self.rank(message, r, level)

    def scheduler(self, message: str, from_scheduler: bool = True) -> None:
        """The scheduler loop's statistics lines (info level)."""
        if from_scheduler:
            self.rank(message, 0)
        else:
            self.main(message)

    def raw(self, text: str) -> None:
        """Text printed outside the logger (a launcher traceback): always shown."""
        self._write(text)

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text + "\n")
            self.stream.flush()
        except (BrokenPipeError, ValueError):
            pass
        self.lines_written += 1


@dataclass(frozen=True, slots=True)
class SimOptions:
    """The simulator's own flags (``--sim-*``)."""

    profile_path: str
    load_seconds: float
    crash_after_requests: int | None
    hang_during_load: bool
    stall_after_tokens: int | None
    slow_start: float
    unthrottled: bool

    @classmethod
    def from_values(cls, values: dict[str, Any], profile: Profile) -> SimOptions:
        load = values.get("sim_load_seconds")
        return cls(
            profile_path=profile.source,
            load_seconds=profile.load.seconds if load is None else max(float(load), 0.0),
            crash_after_requests=values.get("sim_crash_after_requests"),
            hang_during_load=bool(values.get("sim_hang_during_load")),
            stall_after_tokens=values.get("sim_stall_after_tokens"),
            slow_start=max(float(values.get("sim_slow_start") or 0.0), 0.0),
            unthrottled=bool(values.get("sim_unthrottled")),
        )


class SimServer:
    """State shared by the loader, the scheduler and the HTTP handlers."""

    def __init__(
        self,
        args: ResolvedArgs,
        parsed: ParsedArgs,
        profile: Profile,
        opts: SimOptions,
        log: LogWriter,
    ) -> None:
        self.args = args
        self.parsed = parsed
        self.profile = profile
        self.opts = opts
        self.log = log
        self.plan: MemoryPlan = plan_memory(args, profile)
        self.dialect = logfmt.dialect_for_version(profile.sim.version)
        self.ready = False
        self.shutting_down = False
        self.port = args.port
        self.scheduler = Scheduler(
            args,
            profile,
            self.plan,
            log.scheduler,
            unthrottled=opts.unthrottled,
            crash_after_requests=opts.crash_after_requests,
            stall_after_tokens=opts.stall_after_tokens,
        )
        self.created = int(time.time())
        self._fatal = asyncio.Event()

    # ------------------------------------------------------------------ load sequence

    async def _phase(self, share: float) -> None:
        seconds = self.opts.load_seconds * share
        if seconds > 0:
            await asyncio.sleep(seconds)

    async def load(self) -> bool:
        """Print the load sequence; returns False when the load failed (already logged)."""
        a, p, plan, log, d = self.args, self.profile, self.plan, self.log, self.dialect
        shares = p.load
        total = self.opts.load_seconds
        log.all_ranks(logfmt.init_distributed_begin())
        await self._phase(shares.distributed)
        log.all_ranks(
            logfmt.init_distributed_end(total * shares.distributed, p.memory.cuda_context_gb)
        )
        # Target weights.
        log.all_ranks(logfmt.load_weight_begin(plan.avail_start_gb))
        if self.opts.hang_during_load:
            await self._phase(shares.target_weights / 2)
            await asyncio.Event().wait()  # never ready; SIGTERM still stops us
        await self._phase(shares.target_weights)
        if plan.failure is LoadFailure.WEIGHTS_OOM and plan.failed_graph == "target":
            self._fatal_log(
                logfmt.weights_oom_traceback(
                    1.25, plan.total_gb, max(plan.avail_start_gb, 0.0) % 1.0
                )
            )
            return False
        log.all_ranks(
            logfmt.load_weight_end(
                d,
                total * shares.target_weights,
                p.model.architecture,
                p.model.quantization,
                "torch.bfloat16",
                plan.avail_after_target_gb,
                plan.target_weights_gb,
            )
        )
        if a.speculative:
            log.all_ranks(logfmt.load_weight_begin(plan.avail_after_target_gb))
            await self._phase(shares.draft_weights)
            if plan.failure is LoadFailure.WEIGHTS_OOM:
                self._fatal_log(
                    logfmt.weights_oom_traceback(
                        plan.draft_weights_gb, plan.total_gb, max(plan.avail_after_target_gb, 0.0)
                    )
                )
                return False
            log.all_ranks(
                logfmt.load_weight_end(
                    d,
                    total * shares.draft_weights,
                    p.model.draft_architecture,
                    "",
                    "torch.bfloat16",
                    plan.avail_after_draft_gb,
                    plan.draft_weights_gb,
                )
            )
        await self._phase(shares.kv_cache)
        if plan.failure is LoadFailure.NOT_ENOUGH_MEMORY:
            self._fatal_log(logfmt.not_enough_memory_traceback(d, a.mem_fraction_static))
            return False
        half_t = plan.target_kv_gb / 2
        log.all_ranks(
            logfmt.kv_cache_allocated(
                d, p.model.kv_dtype, plan.max_total_num_tokens, half_t, half_t
            )
        )
        if a.speculative:
            half_d = plan.draft_kv_gb / 2
            log.all_ranks(
                logfmt.kv_cache_allocated(
                    d, p.model.kv_dtype, plan.max_total_num_tokens, half_d, half_d
                )
            )
        log.all_ranks(logfmt.memory_pool_end(plan.avail_after_kv_gb))
        if a.capture_bs:
            ok = await self._capture()
            if not ok:
                return False
        avail = plan.avail_after_graph_gb if a.capture_bs else plan.avail_after_kv_gb
        log.rank(
            logfmt.capacity_line(
                plan.max_total_num_tokens,
                a.chunked_prefill_size,
                a.max_prefill_tokens,
                a.max_running_requests,
                a.context_length,
                avail,
            )
        )
        await self._phase(shares.warmup)
        # Warmup request, as SGLang's launcher sends one before announcing readiness.
        log.rank(logfmt.prefill_batch(d, 1, 6, 0, 0.0, 0, 0, 0, False, 0.0))
        log.main(logfmt.uvicorn_info(f'127.0.0.1:{self.port} - "POST /generate HTTP/1.1" 200 OK'))
        log.main(logfmt.READY)
        self.ready = True
        return True

    async def _capture(self) -> bool:
        a, p, plan, log, d = self.args, self.profile, self.plan, self.log, self.dialect
        shares = p.load
        total = self.opts.load_seconds
        bs = list(a.capture_bs)
        if a.speculative:
            target = logfmt.GraphCapture("target verify", a.num_draft_tokens)
            drafts = [
                logfmt.GraphCapture("draft decode", a.topk),
                logfmt.GraphCapture("draft extend", a.num_draft_tokens),
            ]
        else:
            target = logfmt.GraphCapture("target decode", 1)
            drafts = []
        log.all_ranks(target.begin(d, bs, plan.avail_after_kv_gb))
        await self._phase(shares.graph_target)
        if plan.failure is LoadFailure.CUDA_GRAPH_CAPTURE and plan.failed_graph == "target":
            self._fatal_log(
                logfmt.capture_failed_traceback(
                    d,
                    "target",
                    plan.graph_target_gb,
                    plan.total_gb,
                    max(plan.avail_after_kv_gb - plan.activation_reserve_gb, 0.0),
                )
            )
            return False
        log.all_ranks(
            target.end(
                d,
                total * shares.graph_target,
                plan.graph_target_gb,
                plan.avail_after_target_graph_gb,
            )
        )
        avail = plan.avail_after_target_graph_gb
        for i, g in enumerate(drafts):
            share_gb = plan.graph_draft_gb / len(drafts)
            log.all_ranks(g.begin(d, bs, avail))
            await self._phase(shares.graph_draft / len(drafts))
            if plan.failure is LoadFailure.CUDA_GRAPH_CAPTURE and i == 0:
                self._fatal_log(
                    logfmt.capture_failed_traceback(
                        d,
                        "draft",
                        share_gb,
                        plan.total_gb,
                        max(avail - plan.activation_reserve_gb, 0.0),
                    )
                )
                return False
            avail -= share_gb
            log.all_ranks(g.end(d, total * shares.graph_draft / len(drafts), share_gb, avail))
        return True

    def _fatal_log(self, traceback_text: str) -> None:
        """A scheduler rank died: its traceback, then the launcher's SIGQUIT line."""
        self.log.rank(traceback_text, level=logging.ERROR)
        self.log.main(logfmt.SIGQUIT, level=logging.ERROR)
        self._fatal.set()

    # ------------------------------------------------------------------ hot updates

    HOT_KEYS: tuple[str, ...] = (
        "speculative_accept_threshold_single",
        "speculative_accept_threshold_acc",
        "pp_max_micro_batch_size",
    )
    """The only arguments SGLang lets ``/set_internal_state`` change."""

    def set_internal_state(self, updates: dict[str, Any]) -> dict[str, Any]:
        """Apply ``/set_internal_state`` like SGLang: refuse any other key, else update, log
        the lifetime accept length and reset the speculative counters."""
        for key, value in updates.items():
            if key not in self.HOT_KEYS:
                self.log.rank(f"Updating {key} is not supported.", level=logging.WARNING)
                return {"updated": False, "server_args": dict(self.args.server_args)}
            if key.startswith("speculative_accept_threshold") and (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0.0 < float(value) <= 1.0
            ):
                self.log.rank(
                    f"Updating {key} failed: {value!r} is not in (0, 1].", level=logging.WARNING
                )
                return {"updated": False, "server_args": dict(self.args.server_args)}
        server_args = {**self.args.server_args, **updates}
        self.args = dataclasses.replace(
            self.args,
            accept_threshold_single=float(server_args["speculative_accept_threshold_single"]),
            accept_threshold_acc=float(server_args["speculative_accept_threshold_acc"]),
            server_args=server_args,
        )
        self.scheduler.set_args(self.args)
        avg = self.scheduler.spec.avg_accept_length
        self.log.rank(f"avg_spec_accept_length={avg}")
        self.scheduler.reset_spec_counters()
        return {"updated": True, "server_args": dict(server_args)}

    # ------------------------------------------------------------------ info

    def memory_usage(self) -> dict[str, float]:
        plan = self.plan
        return {
            "weight": round(plan.target_weights_gb + plan.draft_weights_gb, 2),
            "kvcache": round(plan.target_kv_gb + plan.draft_kv_gb, 2),
            "token_capacity": plan.max_total_num_tokens,
            "graph": round(plan.graph_target_gb + plan.graph_draft_gb, 2),
        }

    def server_info(self) -> dict[str, Any]:
        sched = self.scheduler
        args = {**self.args.server_args, "port": self.port}
        state: dict[str, Any] = {
            **args,
            "last_gen_throughput": sched.last_gen_throughput,
            "memory_usage": self.memory_usage(),
            "effective_max_running_requests_per_dp": self.args.max_running_requests,
        }
        if self.args.speculative and sched.spec.forward_ct > 0:
            state["avg_spec_accept_length"] = sched.spec.avg_accept_length
        return {
            **args,
            "max_total_num_tokens": self.plan.max_total_num_tokens,
            "max_req_input_len": self.args.context_length - 1,
            "internal_states": [state],
            "version": self.profile.sim.version,
            "sim": {
                "profile": self.opts.profile_path,
                "unrecognized_args": dict(self.args.unknown_args),
                "unthrottled": self.opts.unthrottled,
            },
        }

    def metrics_text(self) -> str:
        s = self.scheduler
        labels = f'model_name="{self.args.served_model_name}",engine_type="unified",tp_rank="0"'
        rows: list[tuple[str, str, float]] = [
            ("sglang:num_running_reqs", "gauge", len(s.running)),
            ("sglang:num_queue_reqs", "gauge", len(s.waiting)),
            ("sglang:gen_throughput", "gauge", s.last_gen_throughput),
            ("sglang:token_usage", "gauge", s.used_tokens / s.capacity),
            ("sglang:num_used_tokens", "gauge", s.used_tokens),
            ("sglang:max_total_num_tokens", "gauge", self.plan.max_total_num_tokens),
            ("sglang:context_len", "gauge", self.args.context_length),
            (
                "sglang:is_cuda_graph",
                "gauge",
                1.0 if uses_cuda_graph(self.args, max(len(s.running), 1)) else 0.0,
            ),
            ("sglang:spec_accept_length", "gauge", s.spec.avg_accept_length),
            (
                "sglang:spec_accept_rate",
                "gauge",
                (s.spec.avg_accept_length - 1) / max(self.args.num_draft_tokens - 1, 1)
                if s.spec.forward_ct
                else 0.0,
            ),
            ("sglang:spec_verify_calls_total", "counter", s.spec.forward_ct),
            ("sglang:prompt_tokens_total", "counter", s.total_prompt_tokens),
            ("sglang:generation_tokens_total", "counter", s.total_generated_tokens),
            ("sglang:num_requests_total", "counter", s.total_requests),
        ]
        out: list[str] = []
        for name, kind, value in rows:
            out.append(f"# HELP {name} {name.split(':', 1)[1].replace('_', ' ')}.")
            out.append(f"# TYPE {name} {kind}")
            out.append(f"{name}{{{labels}}} {float(value)}")
        return "\n".join(out) + "\n"


# ---------------------------------------------------------------------- request parsing


def _prompt_text(payload: dict[str, Any]) -> str | None:
    """The text whose kind sets the request's acceptance (:mod:`specconsole.sim.textkind`):
    ``text`` / ``prompt``, or the last user message; None for token ids (no text to read)."""
    for key in ("text", "prompt"):
        value = payload.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and value and isinstance(value[0], str):
            return value[0]
    messages = payload.get("messages")
    if isinstance(messages, list):
        for m in reversed(messages):
            if isinstance(m, dict) and m.get("role") == "user":
                content = m.get("content")
                if isinstance(content, str):
                    return content
                if isinstance(content, list):
                    return " ".join(
                        str(p.get("text")) for p in content if isinstance(p, dict) and p.get("text")
                    )
    return None


def _count_prompt_tokens(payload: dict[str, Any]) -> int:
    """Prompt tokens: ``input_ids`` length, else one token per whitespace-separated word."""
    ids = payload.get("input_ids")
    if isinstance(ids, list):
        return max(len(ids), 1)
    for key in ("text", "prompt"):
        value = payload.get(key)
        if isinstance(value, str):
            return max(len(value.split()), 1)
        if isinstance(value, list) and value and isinstance(value[0], str):
            return max(len(value[0].split()), 1)
        if isinstance(value, list) and value and isinstance(value[0], int):
            return len(value)
    messages = payload.get("messages")
    if isinstance(messages, list):
        total = 0
        for m in messages:
            content = m.get("content") if isinstance(m, dict) else None
            if isinstance(content, str):
                total += len(content.split()) + 4  # chat-template tokens per message
            elif isinstance(content, list):
                for part in content:
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        total += len(part["text"].split())
                total += 4
        return max(total, 1)
    return 1


def _positive_int(value: Any, name: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(
        {"object": "error", "message": message, "type": "BadRequestError", "code": status},
        status_code=status,
    )


def _too_long(sim: SimServer, prompt_tokens: int, max_new: int) -> JSONResponse | None:
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


SSE_DONE = b"data: [DONE]\n\n"


def build_app(sim: SimServer) -> Starlette:
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
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {
                        "id": a.served_model_name,
                        "object": "model",
                        "created": sim.created,
                        "owned_by": "sglang",
                        "root": a.served_model_name,
                        "parent": None,
                        "max_model_len": a.context_length,
                    }
                ],
            }
        )

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
        if not sim.args.enable_metrics:
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
                _generate_stream(sim, req, prompt_tokens), media_type="text/event-stream"
            )
        await _wait_finished(sim, req)
        return JSONResponse({"text": req.text, "meta_info": _meta_info(sim, req, prompt_tokens)})

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
                _openai_stream(
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
        await _wait_finished(sim, req)
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


class RequireApiKey:
    """SGLang's ``--api-key``: every request but ``/health*``, ``/metrics`` and ``OPTIONS``
    needs ``Authorization: Bearer <key>``, else 401 ``{"error": "Unauthorized"}``.

    Pure ASGI (not BaseHTTPMiddleware), so streamed responses pass through untouched.
    """

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self.expected = ("Bearer " + api_key).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] != "OPTIONS":
            path: str = scope["path"]
            if not path.startswith(("/health", "/metrics")):
                headers = dict(scope["headers"])
                if headers.get(b"authorization") != self.expected:
                    response = JSONResponse({"error": "Unauthorized"}, status_code=401)
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)


async def _wait_finished(sim: SimServer, req: SimRequest) -> None:
    try:
        while not req.finished:
            req.event.clear()
            await req.event.wait()
    except asyncio.CancelledError:
        sim.scheduler.abort(req)
        raise


def _meta_info(sim: SimServer, req: SimRequest, prompt_tokens: int) -> dict[str, Any]:
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


async def _generate_stream(
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
        final = {"text": req.text, "meta_info": _meta_info(sim, req, prompt_tokens)}
        yield b"data: " + json.dumps(final).encode() + b"\n\n"
        yield SSE_DONE
    finally:
        if not req.finished:
            sim.scheduler.abort(req)


async def _openai_stream(
    sim: SimServer,
    req: SimRequest,
    prompt_tokens: int,
    chat: bool,
    model: str,
    include_usage: bool,
    continuous_usage: bool = False,
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
        pre, post = b'"text":"', b'","logprobs":null,"finish_reason":null}]'
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
                        + (
                            b',"completion_tokens":%d,"prompt_tokens_details":null,'
                            b'"reasoning_tokens":0}}\n\n' % n
                        )
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
                delta + '"logprobs":null,"finish_reason":"length","matched_stop":null}]}\n\n'
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


# ---------------------------------------------------------------------- process


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handling (the simulator handles SIGTERM like SGLang)."""

    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[no-untyped-def,override]
        yield


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only when the
    # socket's proto says TCP. Without it (proto 0) Nagle holds the first SSE chunk of a
    # reused keep-alive connection until the client's delayed ACK (~40 ms on TTFT).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def _die_like_sglang() -> None:
    """The launcher kills its whole process tree after SIGQUIT: the process ends by SIGKILL."""
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


async def _serve(sim: SimServer, sock: socket.socket) -> int:
    loop = asyncio.get_running_loop()
    config = uvicorn.Config(
        build_app(sim),
        log_config=None,
        access_log=False,
        lifespan="off",
        http="h11",
        loop="asyncio",
        timeout_graceful_shutdown=2,
    )
    server = _QuietServer(config)
    stop = asyncio.Event()

    def on_term() -> None:
        sim.shutting_down = True
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_term)
    watched = parent_pid()
    watcher = None if watched is None else asyncio.create_task(watch_parent(watched, on_term))
    serve_task = asyncio.create_task(server.serve(sockets=[sock]))
    log = sim.log
    log.main(logfmt.uvicorn_info(f"Started server process [{os.getpid()}]"))
    log.main(logfmt.uvicorn_info("Waiting for application startup."))
    log.main(logfmt.uvicorn_info("Application startup complete."))
    log.main(
        logfmt.uvicorn_info(
            f"Uvicorn running on http://{sim.args.host}:{sim.port} (Press CTRL+C to quit)"
        )
    )

    async def lifecycle() -> None:
        if not await sim.load():
            return
        try:
            await sim.scheduler.run()
        except SchedulerCrash:
            sim.scheduler.crashed = True
            sim._fatal_log(logfmt.serving_crash_traceback())

    life = asyncio.create_task(lifecycle())
    fatal = asyncio.create_task(sim._fatal.wait())
    stopper = asyncio.create_task(stop.wait())
    await asyncio.wait({life, fatal, stopper, serve_task}, return_when=asyncio.FIRST_COMPLETED)
    if (
        life.done()
        and not life.cancelled()
        and life.exception() is not None
        and not sim._fatal.is_set()
    ):
        # A bug in the simulator itself: report it the way SGLang reports a scheduler crash.
        exc = life.exception()
        assert exc is not None
        text = "".join(traceback.format_exception(exc)).rstrip("\n")
        sim._fatal_log("Scheduler hit an exception: " + text)
    if sim._fatal.is_set():
        _die_like_sglang()
    if life.done() and not stop.is_set() and not sim._fatal.is_set():
        # The lifecycle ended without a fatal error or a stop: keep serving until SIGTERM.
        await asyncio.wait({stopper, serve_task}, return_when=asyncio.FIRST_COMPLETED)
    # Clean shutdown (SIGTERM/SIGINT), as uvicorn and SGLang report it.
    life.cancel()
    log.main(logfmt.uvicorn_info("Shutting down"))
    server.should_exit = True
    with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
        await asyncio.wait_for(serve_task, timeout=3)
    log.main(logfmt.uvicorn_info("Waiting for application shutdown."))
    log.main(logfmt.uvicorn_info("Application shutdown complete."))
    log.main(logfmt.uvicorn_info(f"Finished server process [{os.getpid()}]"))
    for task in (fatal, stopper, life, watcher):
        if task is not None:
            task.cancel()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m specconsole.sim``: parse, resolve, then load and serve (or fail) like SGLang."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parsed = parse_argv(argv)
    except SimArgError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    values = dict(parsed.values)
    slow = float(values.get("sim_slow_start") or 0.0)
    if slow > 0:
        # Nothing has started yet: a stop request during the silence is a clean exit.
        previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        time.sleep(slow)
        signal.signal(signal.SIGTERM, previous)
    try:
        profile = load_profile(values.get("sim_profile") or default_profile_path())
    except ProfileError as exc:
        print(f"specconsole.sim: {exc}", file=sys.stderr)
        return 2
    tp = int(values.get("tp_size") or 1)
    log = LogWriter(tp)
    try:
        args = resolve(parsed, profile)
    except SimArgError as exc:
        log.raw(logfmt.argument_error_traceback(exc.exception_type, str(exc)))
        return 1
    log.min_level = LOG_LEVELS.get(args.log_level.lower(), logging.INFO)
    for warning in args.warnings:
        log.main(warning, level=logging.WARNING)
    opts = SimOptions.from_values(values, profile)
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        log.raw(
            logfmt.prefix() + f"ERROR:    [Errno {exc.errno}] error while attempting to "
            f"bind on address ({args.host!r}, {args.port}): {exc.strerror}"
        )
        return 1
    sim = SimServer(args, parsed, profile, opts, log)
    sim.port = sock.getsockname()[1]
    try:
        return asyncio.run(_serve(sim, sock))
    except KeyboardInterrupt:
        return 130
