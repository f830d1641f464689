"""The console-side load generator: the ladder engine over a pool of c keep-alive connections.

Which client: for ``http://`` URLs the standard-library client of
:mod:`specconsole.bench.wire.rawhttp` (the one the remote runner uses): measured with
benchmarks/loadgen_overhead.py it spends less than half of httpx's CPU per streamed token
(httpx's h11/httpcore layers cost more per chunk than parsing the tokens). ``https://`` URLs go
through httpx (TLS verified). Either way: HTTP/1.1 keep-alive with a pool of exactly c
connections per level (the warm-up opens them, so the measured phase never pays a TCP
handshake), raw body bytes handed to the SSE parser as they arrive. Everything about
scheduling and metrics lives in :mod:`specconsole.bench.ladder_run`, shared with the remote
runner; this module picks the client (httpx's adapter is
:mod:`specconsole.bench.wire.httpxclient`, imported only for ``https://``) and turns a
:class:`~specconsole.core.ports.BenchSpec` into a :class:`~specconsole.bench.ladder.LadderPlan`.
"""

from __future__ import annotations

from collections.abc import Callable

from specconsole.bench.ladder import LadderPlan, ProgressSink, StreamClient
from specconsole.bench.ladder_run import LadderRun
from specconsole.bench.wire.auth import header_names, request_headers
from specconsole.bench.wire.rawhttp import RawStreamClient
from specconsole.bench.workload.datasets import load_dataset
from specconsole.core.config.chat_templates import template_for
from specconsole.core.measure.metrics import default_requests_per_level
from specconsole.core.measure.result import BenchResult
from specconsole.core.ports import BenchSpec

MAX_PROMPT_POOL = 512
"""Distinct prompts generated per run (used round-robin); bounds memory and the remote
runner's upload."""


def plan_for(spec: BenchSpec) -> LadderPlan:
    """The engine's plan for ``spec``, with the prompt pool resolved (raises PromptError)."""
    per_level = [
        spec.requests_per_level
        if spec.requests_per_level is not None
        else default_requests_per_level(c)
        for c in spec.ladder
    ]
    needed = sum(per_level) + spec.warmup_requests * sum(spec.ladder)
    pool, settings = load_dataset(
        spec.prompts,
        min(max(needed, 1), MAX_PROMPT_POOL),
        input_len=spec.input_len,
        output_len=spec.output_len,
        range_ratio=spec.range_ratio,
        seed=spec.seed,
        reply_lengths=spec.output_len_from_dataset,
        chat_template=spec.chat_template or template_for(spec.model),
    )
    headers = request_headers(spec)
    if headers:
        settings["header_names"] = header_names(headers)
    if spec.extra_body:
        settings["extra_body"] = dict(spec.extra_body)
    return LadderPlan(
        ladder=tuple(spec.ladder),
        prompts=tuple(pool),
        requests_per_level=spec.requests_per_level,
        duration_s=spec.duration_s,
        warmup_requests=spec.warmup_requests,
        input_len=spec.input_len,
        output_len=spec.output_len,
        api=str(spec.api),
        temperature=spec.temperature,
        request_rate=spec.request_rate,
        flush_cache=spec.flush_cache,
        seed=spec.seed,
        model=spec.model,
        request_timeout_s=getattr(spec, "request_timeout_s", 600.0),
        stall_timeout_s=getattr(spec, "stall_timeout_s", 30.0),
        settings=settings,
        repeats=spec.repeats,
        percentiles=tuple(spec.percentiles),
        slo=None if not spec.slo else dict(spec.slo),
        details=spec.output_details,
        headers=headers,
        extra_body=None if not spec.extra_body else dict(spec.extra_body),
        window=spec.window,
        window_s=spec.window_s,
        window_tokens=spec.window_tokens,
        spec_counters=None if spec.spec_counters is None else spec.spec_counters.to_dict(),
        lead=spec.lead,
        phases=tuple(settings.get("phases") or ()),
    )


def make_run(
    spec: BenchSpec, base_url: str, *, on_progress: ProgressSink | None = None
) -> LadderRun:
    """A ready-to-run ladder against ``base_url`` (call ``run()`` on any loop): the stdlib
    client for ``http://``, httpx for ``https://``."""
    plan = plan_for(spec)
    client: Callable[..., StreamClient] = RawStreamClient
    if not base_url.startswith("http://"):
        # httpx (60 ms with the command-line client it imports) only for https://
        from specconsole.bench.wire.httpxclient import HttpxStreamClient

        client = HttpxStreamClient

    def connect(c: int) -> StreamClient:
        return client(base_url, c, timeout_s=plan.request_timeout_s, headers=plan.headers)

    return LadderRun(plan, connect, on_progress=on_progress)


async def run_ladder(
    spec: BenchSpec, base_url: str, *, on_progress: ProgressSink | None = None
) -> BenchResult:
    """Run ``spec`` against ``base_url`` on the current loop (see runner.py for a thread)."""
    return await make_run(spec, base_url, on_progress=on_progress).run()
