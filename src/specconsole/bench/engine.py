"""The concurrency-ladder engine: warm-up, flush, measure, read accept length, per level.

Why it is separate from any HTTP library: the exact same scheduling code must run in the
console (over httpx, in :mod:`specconsole.bench.loadgen`) and on the GPU box (over a stdlib
asyncio-streams client, in the self-contained remote runner). So this module is standard
library only (Python 3.10+) and speaks to the server through the small :class:`StreamClient`
protocol.

Per level it: sends ``warmup_requests × c`` requests at concurrency c and discards them (they
open the c keep-alive connections and warm the server), POSTs ``/flush_cache`` (which also
resets the speculative counters), then runs the measured phase — closed loop with exactly c
requests in flight until N requests (or a duration) are done, or Poisson arrivals capped at c
in flight — and finally reads ``avg_spec_accept_length`` from ``/server_info``.

Progress is reported per finished request (running counts, output tokens, the output tok/s
over the last second) and on a 250 ms tick in between; when a level ends, one more event
carries its computed metrics (``level_result``) so consumers see each level's numbers live.
:meth:`LadderRun.cancel` stops the load promptly: in-flight requests are abandoned, what
finished is kept, and the level and the result are marked partial/cancelled.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from specconsole.bench.api import (
    API_CHAT,
    API_GENERATE,
    APIS,
    BACKEND_NAMES,
    RequestFailed,
    accept_length_from_server_info,
    build_request,
    make_parser,
)
from specconsole.bench.prompts import Prompt
from specconsole.core.metrics import (
    DEFAULT_PERCENTILES,
    BenchResult,
    LevelMetrics,
    RequestTimeline,
    compute_level_metrics,
    default_requests_per_level,
)
from specconsole.core.slo import Slo

PROGRESS_TICK_S = 0.25
"""Interval of the rate-update progress events between request completions."""

RATE_WINDOW_S = 1.0
"""The live rate is output tokens received over this trailing window."""

FLUSH_ATTEMPTS = 10
"""``/flush_cache`` refuses while requests are still draining; retry this many times."""


class StreamClient(Protocol):
    """The HTTP operations the engine needs; one client per level, pooled for c connections."""

    def stream(self, path: str, body: bytes) -> AsyncIterator[bytes]:
        """POST ``body`` and yield the response body's bytes as they arrive.

        Raises :class:`~specconsole.bench.api.RequestFailed` for a non-200 status (kind
        ``http_<status>``), a refused connection (``connect``), a stall longer than the
        request timeout (``timeout``) or a dropped connection (``disconnect``).
        """
        ...

    async def get_json(self, path: str) -> Any:
        """GET a JSON document (``/server_info``, ``/v1/models``); raises RequestFailed."""
        ...

    async def post(self, path: str) -> int:
        """POST with an empty body and return the status (``/flush_cache``)."""
        ...

    async def aclose(self) -> None: ...


ClientFactory = Callable[[int], StreamClient]
"""Makes a client whose connection pool holds ``concurrency`` connections."""

ProgressSink = Callable[[dict[str, Any]], None]
"""Receives progress events: dicts with :class:`specconsole.core.ports.BenchProgress`'s fields."""


@dataclass(frozen=True, slots=True)
class LadderPlan:
    """Everything the engine needs, as plain JSON-able data (it crosses SSH as JSON)."""

    ladder: tuple[int, ...]
    prompts: tuple[Prompt, ...]
    """A pool of prompts used round-robin across the whole run."""
    requests_per_level: int | None = None
    duration_s: float | None = None
    warmup_requests: int = 1
    input_len: int = 256
    output_len: int = 256
    api: str = API_GENERATE
    temperature: float = 0.0
    request_rate: float | None = None
    flush_cache: bool = True
    seed: int = 42
    model: str | None = None
    request_timeout_s: float = 600.0
    stall_timeout_s: float = 30.0
    """No bytes on a stream for this long: the request is a ``stall`` failure (time lost =
    this); keeps a server that stops streaming from holding a level for the request timeout."""
    settings: dict[str, Any] = field(default_factory=dict)
    """bench_serving-style settings merged into every record (backend, dataset_name...)."""
    repeats: int = 1
    """Runs of the whole ladder (``[bench] repeats``), for mean ± 95 % CI."""
    percentiles: tuple[float, ...] = DEFAULT_PERCENTILES
    slo: dict[str, float] | None = None
    """Goodput objectives (``ttft_ms``, ``tpot_ms``, ``e2e_ms``), if any."""
    details: bool = False
    """Keep per-request lists in the level records (``--output-file``)."""
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    """Extra request headers, ``Authorization: Bearer <api key>`` included (never recorded:
    records only carry the header names)."""
    extra_body: dict[str, Any] | None = None
    """Merged into every request body (bench_serving's ``--extra-request-body``)."""

    def requests_for(self, concurrency: int) -> int | None:
        """Measured requests at a level (None in duration mode)."""
        if self.requests_per_level is not None:
            return self.requests_per_level
        if self.duration_s is not None:
            return None
        return default_requests_per_level(concurrency)

    def check(self) -> None:
        """Raise ValueError naming the field and the fix for unusable values."""
        if not self.ladder or any(c < 1 for c in self.ladder):
            raise ValueError("ladder: give concurrency levels >= 1, e.g. 1,4,16,32,64")
        if self.api not in APIS:
            raise ValueError(f"api: must be one of {', '.join(APIS)}, got {self.api!r}")
        if self.requests_per_level is not None and self.requests_per_level < 1:
            raise ValueError("requests: give at least 1 request per level")
        if self.duration_s is not None and self.duration_s <= 0:
            raise ValueError("duration: give a positive number of seconds")
        if self.output_len < 1:
            raise ValueError("output_len: give at least 1 output token")
        if self.warmup_requests < 0:
            raise ValueError("warmup_requests: give 0 or more")
        if self.request_rate is not None and self.request_rate <= 0:
            raise ValueError("request_rate: give a positive rate in requests/s (or none)")
        if not self.prompts:
            raise ValueError("prompts: the prompt pool is empty")
        if self.repeats < 1:
            raise ValueError("repeats: give at least 1 run of the ladder")
        if not self.percentiles or any(not 0 < q < 100 for q in self.percentiles):
            raise ValueError("percentiles: give percentiles between 0 and 100, e.g. 50,90,99.9")
        if self.slo is not None:
            Slo.from_mapping(self.slo)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ladder": list(self.ladder),
            "prompts": [p.to_dict() for p in self.prompts],
            "requests_per_level": self.requests_per_level,
            "duration_s": self.duration_s,
            "warmup_requests": self.warmup_requests,
            "input_len": self.input_len,
            "output_len": self.output_len,
            "api": self.api,
            "temperature": self.temperature,
            "request_rate": self.request_rate,
            "flush_cache": self.flush_cache,
            "seed": self.seed,
            "model": self.model,
            "request_timeout_s": self.request_timeout_s,
            "stall_timeout_s": self.stall_timeout_s,
            "settings": dict(self.settings),
            "repeats": self.repeats,
            "percentiles": list(self.percentiles),
            "slo": None if self.slo is None else dict(self.slo),
            "details": self.details,
            "headers": [list(h) for h in self.headers],
            "extra_body": self.extra_body,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LadderPlan:
        fields = dict(data)
        fields["ladder"] = tuple(int(c) for c in fields["ladder"])
        fields["prompts"] = tuple(Prompt.from_dict(p) for p in fields["prompts"])
        fields["settings"] = dict(fields.get("settings") or {})
        fields["headers"] = tuple((str(k), str(v)) for k, v in fields.get("headers") or ())
        fields["percentiles"] = tuple(float(q) for q in fields.get("percentiles", ()) or ())
        if not fields["percentiles"]:
            del fields["percentiles"]
        return cls(**fields)


class _Phase:
    """Counters and the live-rate window of one warm-up or measured phase."""

    def __init__(
        self,
        level_index: int,
        concurrency: int,
        total: int,
        warmup: bool,
        clock: Callable[[], float],
        duration_s: float | None,
    ) -> None:
        self.level_index = level_index
        self.concurrency = concurrency
        self.total = total
        self.warmup = warmup
        self.clock = clock
        self.duration_s = duration_s
        self.t0 = clock()
        self.issued = 0
        self.completed = 0
        self.failed = 0
        self.running = 0
        self.output_tokens = 0
        self.records: list[RequestTimeline] = []
        self.window: deque[tuple[float, int]] = deque()
        self.window_tokens = 0

    def add_tokens(self, now: float, tokens: int) -> None:
        self.window.append((now, tokens))
        self.window_tokens += tokens

    def snapshot(self, level_count: int) -> dict[str, Any]:
        now = self.clock()
        horizon = now - RATE_WINDOW_S
        window = self.window
        while window and window[0][0] < horizon:
            self.window_tokens -= window.popleft()[1]
        elapsed = now - self.t0
        span = min(RATE_WINDOW_S, elapsed) if elapsed > 0 else RATE_WINDOW_S
        return {
            "level_index": self.level_index,
            "concurrency": self.concurrency,
            "completed": self.completed,
            "failed": self.failed,
            "total": self.total,
            "running": self.running,
            "output_tokens": self.output_tokens,
            "current_tok_s": self.window_tokens / span if span > 0 else 0.0,
            "elapsed_s": elapsed,
            "warmup": self.warmup,
            "level_count": level_count,
            "planned_duration_s": self.duration_s,
        }


class LadderRun:
    """One run of a ladder; create, ``await run()``, optionally ``cancel()`` from its loop."""

    def __init__(
        self,
        plan: LadderPlan,
        client_factory: ClientFactory,
        *,
        on_progress: ProgressSink | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        plan.check()
        self.plan = plan
        self._factory = client_factory
        self._on_progress = on_progress
        self._clock = clock
        self._cancel: asyncio.Event | None = None
        self._cancel_requested = False
        self._prompt_index = 0
        self._model = plan.model
        self._rng = random.Random(plan.seed)
        self._slo = Slo.from_mapping(plan.slo) if plan.slo else None
        self._repeat = 0

    @property
    def cancelled(self) -> bool:
        return self._cancel_requested

    def cancel(self) -> None:
        """Stop promptly; ``run()`` returns the partial result. Call on the run's loop."""
        self._cancel_requested = True
        if self._cancel is not None:
            self._cancel.set()

    async def run(self) -> BenchResult:
        """Run every level in order and return the trial's result (partial if cut short)."""
        self._cancel = asyncio.Event()
        if self._cancel_requested:
            self._cancel.set()
        runs: list[tuple[LevelMetrics, ...]] = []
        error: str | None = None
        settings = {
            "backend": BACKEND_NAMES[self.plan.api],
            "api": self.plan.api,
            "random_input_len": self.plan.input_len,
            "random_output_len": self.plan.output_len,
            **self.plan.settings,
        }
        if self.plan.slo:
            settings["slo"] = dict(self.plan.slo)
        for repeat in range(self.plan.repeats):
            if self._cancel.is_set() or error is not None:
                break
            # Every repeat replays the same workload (prompts and arrival gaps).
            self._repeat, self._prompt_index = repeat, 0
            self._rng = random.Random(self.plan.seed)
            levels, error = await self._ladder()
            if levels or not runs:
                runs.append(tuple(levels))
        if self._model is not None:
            settings["model"] = self._model
        return BenchResult(
            levels=runs[0] if runs else (),
            settings=settings,
            cancelled=self._cancel.is_set(),
            error=error,
            planned_levels=tuple(self.plan.ladder),
            extra_repeats=tuple(runs[1:]),
            planned_repeats=self.plan.repeats,
        )

    async def _ladder(self) -> tuple[list[LevelMetrics], str | None]:
        """One run of the ladder: its levels and why it stopped early (None if it did not)."""
        assert self._cancel is not None
        levels: list[LevelMetrics] = []
        for index, concurrency in enumerate(self.plan.ladder):
            if self._cancel.is_set():
                break
            try:
                level = await self._level(index, concurrency)
            except RequestFailed as exc:
                return levels, f"level c={concurrency}: {exc}"
            if level is not None:
                levels.append(level)
                if level.completed == 0 and level.failed > 0 and not level.partial:
                    kinds = ", ".join(f"{k} x{n}" for k, n in sorted(level.errors.items()))
                    return levels, f"level c={concurrency}: every request failed ({kinds})"
        return levels, None

    # ---------------------------------------------------------------------------- internals

    def _emit(self, phase: _Phase, *, level_result: LevelMetrics | None = None) -> None:
        if self._on_progress is not None:
            event = phase.snapshot(len(self.plan.ladder))
            event["repeat"], event["repeat_count"] = self._repeat, self.plan.repeats
            if level_result is not None and self._repeat == 0:
                event["level_result"] = level_result  # live levels: the first run's
            self._on_progress(event)

    def _next_prompt(self) -> Prompt:
        prompts = self.plan.prompts
        prompt = prompts[self._prompt_index % len(prompts)]
        self._prompt_index += 1
        return prompt

    async def _resolve_model(self, client: StreamClient) -> None:
        if self._model is not None or self.plan.api == API_GENERATE:
            return
        try:
            models = await client.get_json("/v1/models")
            self._model = str(models["data"][0]["id"])
        except (RequestFailed, KeyError, IndexError, TypeError) as exc:
            raise RequestFailed(
                "no_model", f"cannot read the model name from /v1/models ({exc}); pass a model"
            ) from exc

    async def _level(self, index: int, concurrency: int) -> LevelMetrics | None:
        plan = self.plan
        client = self._factory(concurrency)
        try:
            await self._resolve_model(client)
            warmup_total = plan.warmup_requests * concurrency
            if warmup_total:
                await self._phase(client, index, concurrency, warmup_total, None, warmup=True)
            if self._cancel is not None and self._cancel.is_set():
                return None
            if plan.flush_cache:
                await self._flush(client)
            count = plan.requests_for(concurrency)
            measured, duration, partial = await self._phase(
                client, index, concurrency, count, plan.duration_s, warmup=False
            )
            accept = None if partial else await self._accept_length(client)
            metrics = compute_level_metrics(
                measured.records,
                duration=duration,
                max_concurrency=concurrency,
                request_rate=plan.request_rate,
                accept_length=accept,
                partial=partial,
                warmup_requests=warmup_total,
                percentiles=plan.percentiles,
                slo=self._slo,
                details=plan.details,
            )
            self._emit(measured, level_result=metrics)  # the level's numbers, live
            return metrics
        finally:
            await client.aclose()

    async def _flush(self, client: StreamClient) -> None:
        for _ in range(FLUSH_ATTEMPTS):
            try:
                status = await client.post("/flush_cache")
            except RequestFailed:
                return
            if status != 400:
                return  # flushed, or a server without the endpoint (e.g. vLLM: 404)
            await asyncio.sleep(0.2)  # SGLang answers 400 until it is idle

    async def _accept_length(self, client: StreamClient) -> float | None:
        try:
            return accept_length_from_server_info(await client.get_json("/server_info"))
        except RequestFailed:
            return None

    async def _phase(
        self,
        client: StreamClient,
        index: int,
        concurrency: int,
        count: int | None,
        duration_s: float | None,
        *,
        warmup: bool,
    ) -> tuple[_Phase, float, bool]:
        """Run one phase; returns its state, its duration and whether it was cut short."""
        phase = _Phase(index, concurrency, count or 0, warmup, self._clock, duration_s)
        if self.plan.request_rate is not None and not warmup:
            load = asyncio.ensure_future(self._poisson(client, phase, count, duration_s))
        else:
            load = asyncio.ensure_future(self._closed_loop(client, phase, count, duration_s))
        ticker = asyncio.ensure_future(self._tick(phase))
        assert self._cancel is not None
        stopper = asyncio.ensure_future(self._cancel.wait())
        try:
            await asyncio.wait({load, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ticker.cancel()
            stopper.cancel()
            if not load.done():
                load.cancel()
            try:
                await load
            except asyncio.CancelledError:
                pass
        partial = self._cancel.is_set()
        if partial:
            ends = [r.start + r.latency for r in phase.records]
            duration = max(ends) if ends else 0.0
        else:
            duration = self._clock() - phase.t0
        phase.running = 0
        self._emit(phase)
        return phase, duration, partial

    async def _tick(self, phase: _Phase) -> None:
        while True:
            await asyncio.sleep(PROGRESS_TICK_S)
            self._emit(phase)

    def _more(self, phase: _Phase, count: int | None, duration_s: float | None) -> bool:
        if count is not None and phase.issued >= count:
            return False
        return duration_s is None or self._clock() - phase.t0 < duration_s

    async def _closed_loop(
        self, client: StreamClient, phase: _Phase, count: int | None, duration_s: float | None
    ) -> None:
        async def slot() -> None:
            while self._more(phase, count, duration_s):
                phase.issued += 1
                await self._one(client, phase, self._next_prompt())

        await asyncio.gather(*(slot() for _ in range(phase.concurrency)))

    async def _poisson(
        self, client: StreamClient, phase: _Phase, count: int | None, duration_s: float | None
    ) -> None:
        rate = self.plan.request_rate
        assert rate is not None
        gate = asyncio.Semaphore(phase.concurrency)

        async def gated(prompt: Prompt) -> None:
            async with gate:
                await self._one(client, phase, prompt)

        tasks: list[asyncio.Future[None]] = []
        try:
            while self._more(phase, count, duration_s):
                if phase.issued:
                    await asyncio.sleep(self._rng.expovariate(rate))
                phase.issued += 1
                tasks.append(asyncio.ensure_future(gated(self._next_prompt())))
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    async def _one(self, client: StreamClient, phase: _Phase, prompt: Prompt) -> None:
        plan = self.plan
        path, body = build_request(
            plan.api,
            text=prompt.text,
            messages=prompt.chat_messages() if plan.api == API_CHAT else None,
            output_len=prompt.output_len or plan.output_len,
            temperature=plan.temperature,
            model=self._model,
            extra_body=plan.extra_body,
        )
        parser = make_parser(plan.api)
        clock = self._clock
        phase.running += 1
        start = clock()
        try:
            async for data in _watched(client.stream(path, body), plan.stall_timeout_s):
                now = clock()
                new = parser.feed(data, now - start)
                if new:
                    phase.add_tokens(now, new)
            latency = clock() - start
            outcome = parser.finish()
        except RequestFailed as exc:
            phase.running -= 1
            phase.failed += 1
            phase.records.append(
                RequestTimeline(
                    start=start - phase.t0,
                    latency=clock() - start,
                    prompt_len=prompt.est_tokens,
                    error_kind=exc.kind,
                    error=exc.detail,
                )
            )
            self._emit(phase)
            return
        except BaseException:
            phase.running -= 1
            raise
        phase.running -= 1
        if outcome.completion_tokens <= 0 or not outcome.chunk_times:
            phase.failed += 1
            phase.records.append(
                RequestTimeline(
                    start=start - phase.t0,
                    latency=latency,
                    prompt_len=prompt.est_tokens,
                    error_kind="empty",
                    error="the server returned no tokens",
                )
            )
        else:
            phase.completed += 1
            phase.output_tokens += outcome.completion_tokens
            phase.records.append(
                RequestTimeline(
                    start=start - phase.t0,
                    latency=latency,
                    prompt_len=(
                        outcome.prompt_tokens
                        if outcome.prompt_tokens is not None
                        else prompt.est_tokens
                    ),
                    output_len=outcome.completion_tokens,
                    chunk_times=tuple(outcome.chunk_times),
                    chunk_tokens=tuple(outcome.chunk_tokens),
                    spec_verify_ct=outcome.spec_verify_ct,
                )
            )
        self._emit(phase)


async def _watched(chunks: AsyncIterator[bytes], stall_s: float) -> AsyncIterator[bytes]:
    """``chunks``, failing with ``RequestFailed("stall", ...)`` when none arrives for
    ``stall_s`` seconds (a stream that stopped while the connection stays open)."""
    iterator = aiter(chunks)
    try:
        while True:
            try:
                async with asyncio.timeout(stall_s):
                    data = await anext(iterator)
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise RequestFailed(
                    "stall", f"no token for {stall_s:g} s (stall_timeout_s); {stall_s:g} s lost"
                ) from None
            yield data
    finally:
        close = getattr(iterator, "aclose", None)
        if close is not None:
            await close()
