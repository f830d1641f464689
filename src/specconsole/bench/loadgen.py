"""The console-side load generator: the ladder engine over a pool of c keep-alive connections.

Which client: for ``http://`` URLs the standard-library client of
:mod:`specconsole.bench.wire.rawhttp` (the one the remote runner uses): measured with
benchmarks/loadgen_overhead.py it spends less than half of httpx's CPU per streamed token
(httpx's h11/httpcore layers cost more per chunk than parsing the tokens). ``https://`` URLs go
through httpx (TLS verified). Either way: HTTP/1.1 keep-alive with a pool of exactly c
connections per level (the warm-up opens them, so the measured phase never pays a TCP
handshake), raw body bytes handed to the SSE parser as they arrive. Everything about
scheduling and metrics lives in :mod:`specconsole.bench.engine`, shared with the remote
runner; this module adapts httpx to its :class:`~specconsole.bench.ladder.StreamClient`
protocol, picks the client and turns a :class:`~specconsole.core.ports.BenchSpec` into a
:class:`~specconsole.bench.ladder.LadderPlan`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from specconsole.bench.api import loads_response
from specconsole.bench.engine import LadderRun
from specconsole.bench.ladder import LadderPlan, ProgressSink, StreamClient
from specconsole.bench.waits import (
    CONNECT_TIMEOUT_S,
    CONTROL_TIMEOUT_S,
    MAX_BODY_BYTES,
    RequestFailed,
    control_failure,
    silence_failure,
    stall_failure,
)
from specconsole.bench.wire.auth import header_names, request_headers
from specconsole.bench.wire.rawhttp import RawStreamClient
from specconsole.bench.workload.datasets import load_dataset
from specconsole.core.config.chat_templates import template_for
from specconsole.core.measure.metrics import default_requests_per_level
from specconsole.core.measure.result import BenchResult
from specconsole.core.ports import BenchSpec

if TYPE_CHECKING:
    import httpx

MAX_PROMPT_POOL = 512
"""Distinct prompts generated per run (used round-robin); bounds memory and the remote
runner's upload."""

_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "text/event-stream",
    "Accept-Encoding": "identity",  # aiter_raw hands the parser undecoded bytes
}


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
    )


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every client: building one loads the CA bundle (~15 ms),
    which c clients per level would otherwise repeat."""
    return ssl.create_default_context()


class HttpxStreamClient:
    """:class:`~specconsole.bench.ladder.StreamClient` over httpx: c keep-alive connections.

    The pool is c single-connection ``httpx.AsyncClient`` objects handed out from a free list,
    rather than one client with ``max_connections=c``: httpcore's pool re-scans every
    connection (with a socket poll each) whenever a request starts or ends, which at c = 64
    cost more CPU than parsing the tokens. Same connections, same keep-alive, O(1) hand-out.
    """

    def __init__(
        self,
        base_url: str,
        concurrency: int,
        *,
        timeout_s: float = 600.0,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        import httpx  # here, not at the top: 60 ms that the console's start need not pay

        self._base_url = base_url.rstrip("/")
        self._headers = {**_HEADERS, **dict(headers)}
        self._timeout_s = timeout_s
        self._timeout = httpx.Timeout(
            connect=min(CONNECT_TIMEOUT_S, timeout_s), read=timeout_s, write=30.0, pool=None
        )
        self._free: list[httpx.AsyncClient] = []
        self._clients: list[httpx.AsyncClient] = []
        self._gate = asyncio.Semaphore(max(1, concurrency))

    def _new_client(self) -> httpx.AsyncClient:
        import httpx

        # TCP_NODELAY: httpcore writes the request head and body separately; with Nagle the
        # body waits for the server's delayed ACK (~40 ms) and inflates TTFT.
        transport = httpx.AsyncHTTPTransport(
            verify=_tls_context(),
            http1=True,
            http2=False,
            limits=httpx.Limits(
                max_connections=1, max_keepalive_connections=1, keepalive_expiry=300.0
            ),
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )
        client = httpx.AsyncClient(
            base_url=self._base_url,
            transport=transport,
            headers=self._headers,
            timeout=self._timeout,
            trust_env=False,
        )
        self._clients.append(client)
        return client

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[httpx.AsyncClient]:
        async with self._gate:
            client = self._free.pop() if self._free else self._new_client()
            try:
                yield client
            finally:
                self._free.append(client)

    async def stream_into(
        self, path: str, body: bytes, sink: Callable[[bytes], object], stall_s: float
    ) -> None:
        """The raw client's rules (:mod:`specconsole.bench.wire.rawhttp`): a token within
        ``min(stall_s, request timeout)`` from the request on and between tokens — the
        deadline moves only when the sink reports a token."""
        import httpx

        limit = min(stall_s, self._timeout_s)
        where = f"{self._base_url}{path}"
        loop = asyncio.get_running_loop()
        try:
            async with self._client() as client:
                try:
                    async with (
                        asyncio.timeout(limit) as deadline,
                        client.stream("POST", path, content=body) as response,
                    ):
                        if response.status_code != 200:
                            text = (await _capped(response, where)).decode("utf-8", "replace")
                            raise RequestFailed(f"http_{response.status_code}", text[:300])
                        async for data in response.aiter_raw():
                            if sink(data):
                                deadline.reschedule(loop.time() + limit)
                except TimeoutError:
                    if stall_s <= self._timeout_s:
                        raise stall_failure(stall_s, where) from None
                    raise silence_failure(self._timeout_s, where) from None
        except httpx.HTTPError as exc:
            raise _failure(exc, where) from exc

    async def _control(self, method: str, path: str) -> tuple[int, bytes]:
        """A control request's status and body: the whole answer within
        :data:`~specconsole.bench.api.CONTROL_TIMEOUT_S`, at most MAX_BODY_BYTES."""
        import httpx

        limit = min(CONTROL_TIMEOUT_S, self._timeout_s)
        where = f"{self._base_url}{path}"
        try:
            async with self._client() as client:
                try:
                    async with (
                        asyncio.timeout(limit),
                        client.stream(method, path) as response,
                    ):
                        return response.status_code, await _capped(response, where)
                except TimeoutError:
                    raise control_failure(limit, where) from None
        except httpx.HTTPError as exc:
            raise _failure(exc, where) from exc

    async def get_json(self, path: str) -> Any:
        status, data = await self._control("GET", path)
        if status != 200:
            raise RequestFailed(f"http_{status}", data.decode("utf-8", "replace")[:300])
        return loads_response(data, path)

    def control_client(self) -> HttpxStreamClient:
        """A client of one connection of its own (same server and headers), for control
        requests while every connection of this one streams."""
        return HttpxStreamClient(
            self._base_url, 1, timeout_s=self._timeout_s, headers=tuple(self._headers.items())
        )

    async def get_text(self, path: str) -> str:
        status, data = await self._control("GET", path)
        if status != 200:
            raise RequestFailed(f"http_{status}", data.decode("utf-8", "replace")[:300])
        return data.decode("utf-8", "replace")

    async def post(self, path: str) -> int:
        return (await self._control("POST", path))[0]

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()
        self._clients.clear()
        self._free.clear()


async def _capped(response: httpx.Response, where: str) -> bytes:
    """The response body, refused past MAX_BODY_BYTES (a hostile server's endless answer)."""
    pieces: list[bytes] = []
    size = 0
    async for data in response.aiter_raw():
        size += len(data)
        if size > MAX_BODY_BYTES:
            raise RequestFailed("protocol", f"{where}: answer over {MAX_BODY_BYTES >> 20} MiB")
        pieces.append(data)
    return b"".join(pieces)


def _failure(exc: httpx.HTTPError, where: str) -> RequestFailed:
    """Map an httpx exception to the error kinds the level counts, naming the URL."""
    import httpx

    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return RequestFailed("connect", f"cannot connect to {where}: {exc or type(exc).__name__}")
    if isinstance(exc, httpx.TimeoutException):
        kind = "timeout"
    elif isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        kind = "disconnect"
    else:
        kind = "http_error"
    return RequestFailed(kind, f"{where}: {exc or type(exc).__name__}")


def make_run(
    spec: BenchSpec, base_url: str, *, on_progress: ProgressSink | None = None
) -> LadderRun:
    """A ready-to-run ladder against ``base_url`` (call ``run()`` on any loop): the stdlib
    client for ``http://``, httpx for ``https://``."""
    plan = plan_for(spec)
    client = RawStreamClient if base_url.startswith("http://") else HttpxStreamClient

    def connect(c: int) -> StreamClient:
        return client(base_url, c, timeout_s=plan.request_timeout_s, headers=plan.headers)

    return LadderRun(plan, connect, on_progress=on_progress)


async def run_ladder(
    spec: BenchSpec, base_url: str, *, on_progress: ProgressSink | None = None
) -> BenchResult:
    """Run ``spec`` against ``base_url`` on the current loop (see runner.py for a thread)."""
    return await make_run(spec, base_url, on_progress=on_progress).run()
