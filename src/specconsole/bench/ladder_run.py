"""The concurrency-ladder engine: warm-up, flush, measure, read accept length, per level.

Why it is separate from any HTTP library: the exact same scheduling code must run in the
console (over httpx, in :mod:`specconsole.bench.loadgen`) and on the GPU box (over a stdlib
asyncio client, in the self-contained remote runner). So this module is standard
library only (Python 3.10+) and speaks to the server through the small
:class:`~specconsole.bench.ladder.StreamClient` protocol; what to run is a
:class:`~specconsole.bench.ladder.LadderPlan`, and each phase's counters and live rate are a
:class:`~specconsole.bench.phase.Phase`.

Per level it: sends ``warmup_requests × c`` requests at concurrency c and discards them (they
open the c keep-alive connections and warm the server), POSTs ``/flush_cache`` (which also
resets SGLang's counters) and snapshots the engine's own counters, runs the measured phase —
closed loop with exactly c requests in flight until N requests (or a duration) are done, or
Poisson arrivals capped at c in flight — then reads ``avg_spec_accept_length`` from
``/server_info`` and the counters' deltas (:mod:`specconsole.bench.acceptance`).

Progress is reported per finished request (running counts, output tokens, the output tok/s
over the last second) and on a 250 ms tick in between; when a level ends, one more event
carries its computed metrics (``level_result``) so consumers see each level's numbers live.
:meth:`LadderRun.cancel` stops the load promptly: in-flight requests are abandoned, what
finished is kept, and the level and the result are marked partial/cancelled.

A level whose requests failed because the connection was lost (``connect``/``disconnect``:
an SSH forward or the HTTP link dropped mid-level) is re-run once, as soon as the server
answers again (bounded by :data:`RERUN_WAIT_S`): the re-run's figures replace the level's, and
``BenchResult.reruns`` says what happened, so a clean re-run is an ``ok`` trial that notes it
and a re-run that still fails leaves the trial ``degraded``. Failures of any other kind (HTTP
errors, stalls, timeouts) are the server's answer and are kept as measured.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from specconsole.bench.acceptance import CounterProbe
from specconsole.bench.api import (
    API_CHAT,
    API_GENERATE,
    BACKEND_NAMES,
    RequestFailed,
    build_request,
    make_parser,
)
from specconsole.bench.control import accept_length, flush_cache, open_connections, resolve_model
from specconsole.bench.failures import overrun_limit, silent_wave, warmup_failure
from specconsole.bench.ladder import ClientFactory, LadderPlan, ProgressSink, StreamClient
from specconsole.bench.phase import Phase
from specconsole.bench.rerun import RERUN_WAIT_S, answers_again, lost_midway
from specconsole.bench.steady import WINDOW_STEADY, SteadyPhase
from specconsole.bench.wire.eventloop import loop_name
from specconsole.bench.workload.prompts import Prompt
from specconsole.core.measure.metrics import LevelMetrics, RequestTimeline, compute_level_metrics
from specconsole.core.measure.result import BenchResult
from specconsole.core.measure.slo import Slo

T = TypeVar("T")

PROGRESS_TICK_S = 0.25
"""Interval of the rate-update progress events between request completions."""


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
        self._by_category: dict[str, tuple[Prompt, ...]] = {}
        self._model = plan.model
        self._rng = random.Random(plan.seed)
        self._slo = Slo.from_mapping(plan.slo) if plan.slo else None
        self._repeat = 0
        self._first_error = ""
        """The first failed measured request's error (URL and cause) of the last level."""
        self.reruns: list[str] = []
        """What happened to each level re-run after a lost connection (``BenchResult.reruns``)."""

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
            "event_loop": loop_name(asyncio.get_running_loop()),
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
            if levels or not runs:  # in the ladder's order, whichever level ran first
                place = {c: i for i, c in enumerate(self.plan.ladder)}
                runs.append(tuple(sorted(levels, key=lambda lv: place.get(lv.max_concurrency, 0))))
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
            reruns=tuple(self.reruns),
        )

    async def _ladder(self) -> tuple[list[LevelMetrics], str | None]:
        """One run of the ladder: its levels and why it stopped early (None if it did not)."""
        assert self._cancel is not None
        levels: list[LevelMetrics] = []
        for index in self.plan.order():  # the lead level first (pruning), then the ladder's
            concurrency = self.plan.ladder[index]
            if self._cancel.is_set():
                break
            try:
                level = await self._level(index, concurrency)
            except RequestFailed as exc:
                return levels, f"level c={concurrency}: {exc.detail}"
            if level is not None and lost_midway(level, levels) and not self._cancel.is_set():
                try:
                    level = await self._rerun(index, concurrency, level)
                except RequestFailed as exc:
                    return levels, f"level c={concurrency} (re-run): {exc.detail}"
            if level is not None:
                levels.append(level)
                if level.completed == 0 and level.failed > 0 and not level.partial:
                    kinds = ", ".join(f"{k} x{n}" for k, n in sorted(level.errors.items()))
                    cause = f": {self._first_error}" if self._first_error else ""
                    return levels, f"level c={concurrency}: every request failed ({kinds}){cause}"
        return levels, None

    async def _rerun(self, index: int, concurrency: int, first: LevelMetrics) -> LevelMetrics:
        """Re-run a level whose connection was lost, once, when the server answers again;
        the note in ``reruns`` says why and how the re-run went."""
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(first.errors.items()))
        why = (
            f"c={concurrency}: {first.failed} of {first.completed + first.failed} requests "
            f"failed ({kinds}), the connection was lost"
        )
        assert self._cancel is not None
        if not await answers_again(self._factory, self._cancel):
            self.reruns.append(f"{why}; not re-run: no answer within {RERUN_WAIT_S:g} s")
            return first
        again = await self._level(index, concurrency)
        if again is None:  # cancelled while re-running: the measured level stands
            self.reruns.append(f"{why}; the re-run was cancelled")
            return first
        outcome = "clean" if not again.failed else f"{again.failed} failed again"
        self.reruns.append(f"{why}; re-run once after the reconnect: {outcome}")
        return again

    # ---------------------------------------------------------------------------- internals

    def _emit(self, phase: Phase, *, level_result: LevelMetrics | None = None) -> None:
        if self._on_progress is not None:
            event = phase.snapshot(len(self.plan.ladder))
            event["repeat"], event["repeat_count"] = self._repeat, self.plan.repeats
            if level_result is not None:  # live levels, every run's (``repeat`` says which)
                event["level_result"] = level_result
            self._on_progress(event)

    def _next_prompt(self, category: str | None = None) -> Prompt:
        """The pool's next prompt, round-robin (within ``category`` when one is given)."""
        prompts = self.plan.prompts
        if category is not None:
            prompts = self._by_category.setdefault(
                category, tuple(p for p in prompts if p.category == category) or prompts
            )
        prompt = prompts[self._prompt_index % len(prompts)]
        self._prompt_index += 1
        return prompt

    async def _level(self, index: int, concurrency: int) -> LevelMetrics | None:
        plan = self.plan
        client = self._factory(concurrency)
        counters: CounterProbe | None = None
        try:
            if self._model is None and plan.api != API_GENERATE:
                self._model = await self._within_stall(resolve_model(client), "GET /v1/models")
            warmup_total = plan.warmup_requests * concurrency
            if warmup_total:
                warm, _, _ = await self._phase(
                    client, index, concurrency, warmup_total, None, warmup=True
                )
                cancelled = self._cancel is not None and self._cancel.is_set()
                if failure := warmup_failure(warm.records, reached=bool(index) and not cancelled):
                    raise failure
            if self._cancel is not None and self._cancel.is_set():
                return None
            if plan.window == WINDOW_STEADY:
                await open_connections(client, concurrency)
            if plan.flush_cache:
                await self._within_stall(flush_cache(client), "POST /flush_cache")
            counters = await self._counters(client)
            count = plan.requests_for(concurrency)
            measured, duration, partial = await self._phase(
                client,
                index,
                concurrency,
                count,
                plan.duration_s,
                warmup=False,
                steady=plan.window == WINDOW_STEADY,
                split=None if counters is None else counters.split,
            )
            # nothing completed (a silent server): nothing to read, and no wait for it
            answered = measured.streamed > 0
            accept = None if partial or not answered else await accept_length(client)
            spec = (
                None
                if partial or counters is None or not answered
                else await counters.finish(measured)
            )
            metrics = compute_level_metrics(
                measured.records,
                duration=duration,
                max_concurrency=concurrency,
                request_rate=plan.request_rate,
                accept_length=accept,
                counters=spec,
                partial=partial,
                warmup_requests=warmup_total,
                percentiles=plan.percentiles,
                slo=self._slo,
                details=plan.details,
            )
            if isinstance(measured, SteadyPhase):
                metrics = measured.metrics(metrics, plan.percentiles)
            self._first_error = next((r.error for r in measured.records if r.error), "")
            self._emit(measured, level_result=metrics)  # the level's numbers, live
            return metrics
        finally:
            if counters is not None:
                await counters.aclose()  # its reads during the level end with it
            await client.aclose()

    async def _within_stall(self, request: Awaitable[T], what: str) -> T:
        """A control request before the level, bounded by the stall timeout: a server that
        says nothing for that long is silent (the level fails at once, naming the request),
        not worth the control timeout per request."""
        stall = self.plan.stall_timeout_s
        try:
            return await asyncio.wait_for(request, stall)
        except asyncio.TimeoutError:  # noqa: UP041 - distinct from TimeoutError on 3.10
            raise RequestFailed(
                "stall", f"{what}: no answer for {stall:g} s (stall_timeout_s): a silent server"
            ) from None

    async def _counters(self, client: StreamClient) -> CounterProbe | None:
        """The level's counter probe, its first read bounded by the stall timeout (no
        counters when ``/metrics`` stays silent: the level is measured without them)."""
        try:
            return await asyncio.wait_for(
                CounterProbe.started(client, self.plan.spec_counters), self.plan.stall_timeout_s
            )
        except asyncio.TimeoutError:  # noqa: UP041 - distinct from TimeoutError on 3.10
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
        steady: bool = False,
        split: Callable[[str, Phase], Awaitable[None]] | None = None,
    ) -> tuple[Phase, float, bool]:
        """Run one phase; returns its state, its duration and whether it was cut short.
        ``split``: told at the end of each category's turn of shifting traffic."""
        phase: Phase
        if steady:
            phase = SteadyPhase(
                index,
                concurrency,
                self._clock,
                window_s=self.plan.window_s,
                window_tokens=self.plan.window_tokens,
            )
            load = asyncio.ensure_future(self._steady_loop(client, phase))
        elif self.plan.request_rate is not None and not warmup:
            phase = Phase(index, concurrency, count or 0, warmup, self._clock, duration_s)
            load = asyncio.ensure_future(self._poisson(client, phase, count, duration_s))
        else:
            phase = Phase(index, concurrency, count or 0, warmup, self._clock, duration_s)
            if self.plan.phases and not warmup and count is not None:
                load = asyncio.ensure_future(self._shifting(client, phase, count, split))
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

    async def _tick(self, phase: Phase) -> None:
        while True:
            await asyncio.sleep(PROGRESS_TICK_S)
            self._emit(phase)

    def _more(self, phase: Phase, count: int | None, duration_s: float | None) -> bool:
        if count is not None and phase.issued >= count:
            return False
        if not phase.warmup and silent_wave(phase.records, phase.concurrency, phase.streamed):
            return False  # the server is silent: the level's outcome is decided
        return duration_s is None or self._clock() - phase.t0 < duration_s

    async def _closed_loop(
        self, client: StreamClient, phase: Phase, count: int | None, duration_s: float | None
    ) -> None:
        async def slot() -> None:
            while self._more(phase, count, duration_s):
                phase.issued += 1
                await self._one(client, phase, self._next_prompt())

        await asyncio.gather(*(slot() for _ in range(phase.concurrency)))

    async def _shifting(
        self,
        client: StreamClient,
        phase: Phase,
        count: int,
        split: Callable[[str, Phase], Awaitable[None]] | None,
    ) -> None:
        """Closed loop in turns (``LadderPlan.phases``): a phase's requests all of one
        category, drained before the next category's turn, ``split`` told at each end."""
        size = self.plan.phase_size(phase.concurrency, count)
        turn = 0
        while phase.issued < count and self._more(phase, count, None):
            category = self.plan.phases[turn % len(self.plan.phases)]
            limit = min(count, phase.issued + size)

            async def slot(category: str = category, limit: int = limit) -> None:
                while phase.issued < limit and self._more(phase, count, None):
                    phase.issued += 1
                    await self._one(client, phase, self._next_prompt(category))

            await asyncio.gather(*(slot() for _ in range(phase.concurrency)))
            if split is not None:
                await split(category, phase)
            turn += 1

    async def _steady_loop(self, client: StreamClient, phase: SteadyPhase) -> None:
        """c slots in flight until the steady window is complete; then every in-flight
        request is cancelled (its connection closed, so the server aborts it)."""
        plan = self.plan

        async def slot(number: int) -> None:
            while True:
                prompt = self._next_prompt()
                phase.issued += 1
                sink = phase.begin(number, prompt.output_len or plan.output_len, prompt.est_tokens)
                await self._one(client, phase, prompt, sink)

        slots = [asyncio.ensure_future(slot(i)) for i in range(phase.concurrency)]
        assert self._cancel is not None
        window = asyncio.ensure_future(
            phase.settle(self._cancel, plan.request_timeout_s + phase.bound_s, plan.stall_timeout_s)
        )
        try:
            # A slot only ends by raising: then the window ends with it.
            await asyncio.wait([window, *slots], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (window, *slots):
                task.cancel()
            outcomes = await asyncio.gather(window, *slots, return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, Exception):
                raise outcome
        if outcomes[0] is False and not self._cancel.is_set():
            kinds = ", ".join(sorted({r.error_kind for r in phase.records if r.error_kind}))
            raise RequestFailed(
                "no_window",
                f"steady window: {phase.started} of {phase.concurrency} streams produced a "
                f"token, {phase.failed} requests failed{f' ({kinds})' if kinds else ''}",
            )

    async def _poisson(
        self, client: StreamClient, phase: Phase, count: int | None, duration_s: float | None
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

    async def _one(
        self,
        client: StreamClient,
        phase: Phase,
        prompt: Prompt,
        sink: Callable[[float, int], None] | None = None,
    ) -> None:
        """One request; each token-carrying chunk goes to ``sink`` (default
        ``phase.add_tokens``; a steady window's slot passes its own)."""
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
        # the steady window's slot sink, or the phase's: the client calls it from its protocol
        # callback, outside this task, so the slot is passed in, never read from a context
        add_tokens = sink or phase.add_tokens
        feed = parser.feed
        asked = prompt.output_len or plan.output_len
        most = overrun_limit(asked)
        seen = 0

        def on_data(data: bytes) -> int:
            """Feed the parser; the new tokens are the client's progress (its watchdog re-arms
            only on them). A stream far beyond the tokens asked for never ends: cut it."""
            nonlocal seen
            now = clock()
            new = feed(data, now - start)
            if new:
                add_tokens(now, new)
                seen += new
                if seen > most:
                    raise RequestFailed(
                        "overrun", f"the server streamed over {most} tokens for {asked} asked"
                    )
            return new

        phase.running += 1
        start = clock()
        try:
            await client.stream_into(path, body, on_data, plan.stall_timeout_s)
            latency = clock() - start
            outcome = parser.finish()
            if outcome.completion_tokens > most:  # a final count the stream never carried
                raise RequestFailed(
                    "overrun",
                    f"the server counted {outcome.completion_tokens} tokens for {asked} asked",
                )
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
