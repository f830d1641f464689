"""The simulated scheduler: one decode-step clock shared by every running request.

SGLang runs one scheduler loop per box: each iteration is either a prefill of newly admitted
requests or one decode (draft + verify) step for *all* running requests at once. That shared
clock is what makes batch size matter, so the simulator reproduces it literally: the step
durations come from :mod:`specconsole.sim.physics.model`, each decode step hands every running
request
a seeded number of accepted tokens, requests beyond the running limit queue, and the loop
sleeps to absolute deadlines so streams are paced in real time (or not at all, unthrottled).

This module holds no HTTP code and prints nothing: the server feeds it :class:`SimRequest`
objects and streams whatever tokens the loop hands them; after each step it tells its
:class:`StepReporter` (the face's statistics lines: SGLang's ``Prefill batch`` / ``Decode
batch``, vLLM's periodic ``Engine 000`` and ``SpecDecoding metrics``).
"""

from __future__ import annotations

import asyncio
import bisect
import math
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from specconsole.sim.physics.acceptance import args_accept_distribution
from specconsole.sim.physics.adaptive import AdaptiveRuntime
from specconsole.sim.physics.latency import E2E_BUCKETS, TTFT_BUCKETS, LatencyHistogram
from specconsole.sim.physics.launch import ResolvedArgs
from specconsole.sim.physics.model import MemoryPlan, prefill_time, step_time
from specconsole.sim.physics.textkind import TextKind, request_perf
from specconsole.sim.profile import PerfSection, Profile

GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
"""Weyl-sequence step: low-discrepancy draws keep every stream's accepted-token total within
a token or two of its mean, so requests of one wave finish on (nearly) the same step."""

_WORDS_TEXT = """
the of and to in is that for it as was with be by on not he this are or his from at which
but have an they you were her she there been one all we their has would when if so no more
will can out up about into them some time could these other than then its two may only first
new like over such our also after most made many before must through back years where much
your way well down should because each just those people how too little state good very make
world still own see men work long get here between both life being under never day same
another know while last might us great old year off come since against go came right used
take three states himself few house use during without again place around however home small
found thought went say part once general high upon school every don does got united left
number course war until always away something fact though water less public put think almost
hand enough far took head yet government system better set told nothing night end why called
didn eyes find going look asked later knew point next program city business give group
toward young days let room president side social present given several order national
possible rather second face per among form important often things looked early white case
john become large big need four within felt along children saw best church ever least power
development light thing seemed family interest want members mind country area others done
turned although open god service certain kind
"""

WORDS: tuple[str, ...] = tuple(_WORDS_TEXT.split())
"""Output vocabulary: plain ASCII words, so chunk text never needs JSON escaping."""

TOKEN_CYCLE_LEN = 8192


def token_cycle(seed: int) -> tuple[str, ...]:
    """A seeded cycle of output tokens (``" word"``); each request reads it from an offset."""
    rng = random.Random(seed)
    return tuple(" " + rng.choice(WORDS) for _ in range(TOKEN_CYCLE_LEN))


@dataclass(eq=False, slots=True)
class SimRequest:
    """One generation request as the scheduler sees it."""

    rid: str
    input_len: int
    max_new_tokens: int
    index: int
    """Arrival number (seeds its accepted-token draws and its words)."""
    created: float = field(default_factory=time.monotonic)
    generated: int = 0
    verify_ct: int = 0
    text: str = ""
    """All generated text so far."""
    pending_from: int = 0
    """Offset in ``text`` of tokens not yet streamed."""
    pending_tokens: int = 0
    first_token_at: float | None = None
    finished_at: float | None = None
    finished: bool = False
    aborted: bool = False
    stalled: bool = False
    weyl: float = 0.0
    kind: TextKind = TextKind.CHAT
    """What the prompt asks for (:mod:`specconsole.sim.physics.textkind`): it sets the acceptance.
    """
    perf: PerfSection | None = None
    """The acceptance coefficients this request's text drafts with (None: the profile's)."""
    cdf: list[float] = field(default_factory=list)
    cdf_generation: int = -1
    event: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def reserve(self) -> int:
        """KV tokens the request holds while running (prompt plus whole output)."""
        return self.input_len + self.max_new_tokens


class SchedulerCrash(Exception):
    """Raised inside the loop by fault injection (``--sim-crash-after-requests``)."""


@dataclass(slots=True)
class SpecCounters:
    """Speculative counters, as SGLang keeps them (reset by ``/flush_cache``)."""

    accept_tokens: int = 0
    forward_ct: int = 0

    @property
    def avg_accept_length(self) -> float:
        return self.accept_tokens / self.forward_ct if self.forward_ct else 0.0


@dataclass(slots=True)
class DraftCounters:
    """The drafts and what was accepted of them since start, never reset (vLLM's
    ``vllm:spec_decode_*`` counters): one draft per request per decode step that drafted."""

    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    by_accepted: list[int] = field(default_factory=list)
    """``by_accepted[a]``: drafts of which exactly ``a`` tokens were accepted."""

    def observe(self, drafted: int, accepted: int) -> None:
        self.drafts += 1
        self.draft_tokens += drafted
        self.accepted += accepted
        hist = self.by_accepted
        while len(hist) <= accepted:
            hist.append(0)
        hist[accepted] += 1

    def per_position(self, positions: int) -> list[int]:
        """Accepted tokens at each draft position: position ``i`` is accepted by every draft
        that accepted more than ``i`` tokens."""
        out = [0] * positions
        running = 0
        hist = self.by_accepted
        for a in range(len(hist) - 1, 0, -1):
            running += hist[a]
            if a - 1 < positions:
                out[a - 1] = running
        return out


class StepReporter(Protocol):
    """What a face logs after the scheduler's steps (its statistics lines)."""

    def prefill(self, sched: Scheduler, batch: int, tokens: int, seconds: float) -> None: ...

    def decode(self, sched: Scheduler, batch: int) -> None: ...


class Scheduler:
    """The loop, its queues and its counters."""

    def __init__(
        self,
        args: ResolvedArgs,
        profile: Profile,
        plan: MemoryPlan,
        reporter: StepReporter,
        *,
        unthrottled: bool = False,
        crash_after_requests: int | None = None,
        stall_after_tokens: int | None = None,
    ) -> None:
        self.args = args
        self.profile = profile
        self.plan = plan
        self.reporter = reporter
        self.unthrottled = unthrottled
        self.crash_after_requests = crash_after_requests
        self.stall_after_tokens = stall_after_tokens
        self.capacity = max(plan.max_total_num_tokens, 1)
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self.kv_used = 0
        self.arrivals = 0
        self.finished_count = 0
        self.spec = SpecCounters()
        self.interval_accept = SpecCounters()
        self.draft_counters = DraftCounters()
        """Every draft since start (never reset; vLLM's counters, its statistics lines)."""
        self.interval_tokens = 0
        self.interval_start = time.monotonic()
        self.last_gen_throughput = 0.0
        self.decode_iters = 0
        self.total_prompt_tokens = 0
        self.total_generated_tokens = 0
        self.total_requests = 0
        self.finished_output_tokens = 0
        self.finished_verify_ct = 0
        """Tokens and verify steps of the requests that finished (never reset): SGLang's
        ``generation_tokens_total`` / ``spec_verify_calls_total``, counted at the finish."""
        self.ttft = LatencyHistogram(TTFT_BUCKETS)
        self.e2e = LatencyHistogram(E2E_BUCKETS)
        """Server-side latencies from a request's arrival (``/metrics`` histograms)."""
        self.on_finish: Callable[[int], None] | None = None
        """Told the number of finished requests as each one finishes (the box's faults)."""
        self.crashed = False
        self.stalled = False
        """Every running request is stalled (fault injection): the loop waits for news."""
        self._wake = asyncio.Event()
        self._clock = 0.0
        self.seed = int(args.seed) if args.seed is not None else profile.sim.seed
        """The launch's seed if it gives one, else the profile's."""
        self._tokens = token_cycle(self.seed)
        self._cdfs: dict[tuple[PerfSection, int], list[float]] = {}
        self._at_batch: dict[int, ResolvedArgs] = {}
        self._generation = 0
        self.set_args(args)

    def set_args(self, args: ResolvedArgs) -> None:
        """Adopt (hot-updated) arguments: the accepted-token distributions follow them
        (running requests pick the new distribution up on their next step)."""
        adaptive = getattr(self, "adaptive", None)
        if args.adaptive is None:
            self.adaptive = None
        elif adaptive is None or adaptive.spec != args.adaptive:
            self.adaptive = AdaptiveRuntime(args.adaptive, args.capture_bs, args.num_steps)
        """SGLang's adaptive controller (``--speculative-adaptive``): per bucket its step."""
        self.args = args
        self._cdfs = {}
        self._at_batch: dict[int, ResolvedArgs] = {}
        self._generation += 1

    def _say(self, event: str, *values: float) -> None:
        """Tell the face what the adaptive controller did (``switch``: a decode step runs
        another candidate's state; ``updated``: a bucket's EMA moved its step): the face
        logs it in its engine's words, if it has an adaptive mode."""
        say = getattr(self.reporter, "adaptive", None)
        if say is not None:
            say(self, event, *values)

    def step_args(self, batch: int) -> ResolvedArgs:
        """The arguments a decode step of ``batch`` requests runs (a per-batch-size K, or
        the step SGLang's adaptive controller activates for the batch's bucket)."""
        if self.adaptive is not None:
            before = self.adaptive.active
            steps = self.adaptive.steps_for(batch)
            if steps != before:
                self._say("switch", before, steps)
            got = self._at_batch.get(-steps - 1)
            if got is None:
                got = self._at_batch[-steps - 1] = self.args.with_steps(steps)
            return got
        if not self.args.steps_by_batch:
            return self.args
        got = self._at_batch.get(batch)
        if got is None:
            got = self._at_batch[batch] = self.args.at_batch(batch)
        return got

    def _cdf_for(self, perf: PerfSection, args: ResolvedArgs) -> list[float]:
        key = (perf, args.num_steps)
        cdf = self._cdfs.get(key)
        if cdf is None:
            cdf = []
            acc = 0.0
            for p in args_accept_distribution(args, perf):
                acc += p
                cdf.append(acc)
            cdf[-1] = 1.0
            self._cdfs[key] = cdf
        return cdf

    # ----------------------------------------------------------------------------- queueing

    def submit(
        self, rid: str, input_len: int, max_new_tokens: int, text: str | None = None
    ) -> SimRequest:
        """Queue a request; the loop admits it when a slot and KV space are free. ``text``
        (the prompt) sets its acceptance by :func:`specconsole.sim.physics.textkind.request_perf`;
        None drafts with the profile's calibrated (chat) acceptance."""
        index = self.arrivals
        self.arrivals += 1
        req = SimRequest(
            rid=rid, input_len=max(input_len, 1), max_new_tokens=max(max_new_tokens, 1), index=index
        )
        if text is not None:
            req.kind, req.perf = request_perf(self.profile.perf, text)
        # Seeded per-request start of the Weyl sequence (deterministic by arrival order).
        req.weyl = random.Random(self.seed * 1_000_003 + index).random()
        self.waiting.append(req)
        self.stalled = False
        self.total_requests += 1
        self._wake.set()
        return req

    def abort(self, req: SimRequest) -> None:
        """A client went away: drop the request wherever it is."""
        if req.finished or req.aborted:
            return
        req.aborted = True
        self.stalled = False
        self._wake.set()
        if req in self.running:
            self.running.remove(req)
            self.kv_used -= req.reserve
        else:
            try:
                self.waiting.remove(req)
            except ValueError:
                pass

    @property
    def used_tokens(self) -> int:
        """KV tokens holding running sequences (SGLang's ``#token``)."""
        return sum(r.input_len + r.generated for r in self.running)

    @property
    def idle(self) -> bool:
        return not self.waiting and not self.running

    def reset_spec_counters(self) -> None:
        self.spec = SpecCounters()
        self.interval_accept = SpecCounters()

    # ----------------------------------------------------------------------------- pacing

    async def _pace(self, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        if self.unthrottled:
            await asyncio.sleep(0)
            return
        now = loop.time()
        # Fall behind by at most 250 ms (then catch up), so averages hold when a busy machine
        # deschedules the process for a while, without an unbounded burst after a long pause.
        self._clock = max(self._clock, now - 0.25) + seconds
        delay = self._clock - now
        await asyncio.sleep(delay if delay > 0 else 0)

    # ----------------------------------------------------------------------------- the loop

    def _emit(self, req: SimRequest, n: int) -> None:
        if n <= 0:
            return
        start = (req.index * 977 + req.generated) % TOKEN_CYCLE_LEN
        end = start + n
        toks = self._tokens
        if end <= TOKEN_CYCLE_LEN:
            piece = "".join(toks[start:end])
        else:
            piece = "".join(toks[start:]) + "".join(toks[: end - TOKEN_CYCLE_LEN])
        req.text += piece
        req.generated += n
        req.pending_tokens += n
        self.interval_tokens += n
        self.total_generated_tokens += n
        if req.first_token_at is None:
            req.first_token_at = time.monotonic()
            self.ttft.observe(req.first_token_at - req.created)
        req.event.set()

    def _draw(self, req: SimRequest, args: ResolvedArgs) -> int:
        key = self._generation * 1024 + args.num_steps
        if req.cdf_generation != key:
            req.cdf = self._cdf_for(req.perf or self.profile.perf, args)
            req.cdf_generation = key
        req.weyl = (req.weyl + GOLDEN) % 1.0
        return bisect.bisect_left(req.cdf, req.weyl) + 1

    def _admit(self) -> list[SimRequest]:
        admitted: list[SimRequest] = []
        limit = self.args.max_running
        budget = max(self.args.max_prefill_tokens, self.args.chunked_prefill_size)
        tokens = 0
        while self.waiting and len(self.running) + len(admitted) < limit:
            req = self.waiting[0]
            if self.kv_used + req.reserve > self.capacity and (self.running or admitted):
                break
            if admitted and tokens + req.input_len > budget:
                break
            self.waiting.popleft()
            admitted.append(req)
            tokens += req.input_len
            self.kv_used += req.reserve
        return admitted

    async def _prefill(self, batch: list[SimRequest]) -> None:
        tokens = sum(r.input_len for r in batch)
        seconds = prefill_time(self.args, self.profile, tokens)
        await self._pace(seconds)
        for r in batch:
            if r.aborted:
                self.kv_used -= r.reserve
                continue
            self.total_prompt_tokens += r.input_len
            self.running.append(r)
            self._emit(r, 1)
            self._maybe_finish(r)
        self.running = [r for r in self.running if not r.finished]
        self.reporter.prefill(self, len(batch), tokens, seconds)

    def _maybe_finish(self, r: SimRequest) -> None:
        if r.generated >= r.max_new_tokens and not r.finished:
            r.finished = True
            r.finished_at = time.monotonic()
            self.e2e.observe(r.finished_at - r.created)
            self.kv_used -= r.reserve
            self.finished_count += 1
            self.finished_output_tokens += r.generated
            if self.args.speculative:
                self.finished_verify_ct += r.verify_ct
            if self.on_finish is not None:
                self.on_finish(self.finished_count)
            r.event.set()

    async def _decode(self) -> None:
        running = self.running
        batch = len(running)
        context = sum(r.input_len + r.generated for r in running) / batch
        args = self.step_args(batch)
        await self._pace(step_time(args, self.profile, batch, context))
        if (
            self.crash_after_requests is not None
            and self.finished_count >= self.crash_after_requests
        ):
            raise SchedulerCrash("fault injection: --sim-crash-after-requests")
        stall = self.stall_after_tokens
        spec = args.speculative
        drafted = args.num_steps
        counters = self.draft_counters
        forwards = accepted = 0
        drafts: list[float] = []
        for r in running:
            if r.aborted:
                continue
            if stall is not None and r.generated >= stall:
                r.stalled = True
                continue
            n = self._draw(r, args) if spec else 1
            drafts.append(n - 1)
            emit = min(n, r.max_new_tokens - r.generated)
            r.verify_ct += 1
            forwards += 1
            accepted += n
            if spec:
                counters.observe(drafted, n - 1)
            self._emit(r, emit)
            self._maybe_finish(r)
        if spec:
            self.spec.forward_ct += forwards
            self.spec.accept_tokens += accepted
            self.interval_accept.forward_ct += forwards
            self.interval_accept.accept_tokens += accepted
        if self.adaptive is not None:
            slot = self.adaptive.slots[self.adaptive.spec.bucket_for(batch, self.args.capture_bs)]
            old = slot.current
            if self.adaptive.observe(drafts, batch) is not None:
                self._say("updated", old, slot.current, slot.ema)
        self.running = [r for r in running if not r.finished and not r.aborted]
        self.stalled = forwards == 0 and bool(self.running)
        self.decode_iters += 1
        self.reporter.decode(self, batch)

    async def run(self) -> None:
        """Serve until cancelled; raises :class:`SchedulerCrash` on an injected fault."""
        loop = asyncio.get_running_loop()
        while True:
            if self.idle:
                self._wake.clear()
                await self._wake.wait()
                self._clock = loop.time()
                self.interval_start = time.monotonic()
            batch = self._admit()
            if batch:
                await self._prefill(batch)
            elif self.running and not self.stalled:
                await self._decode()
            else:
                # Only stalled or aborted work, or nothing admissible: wait for news.
                self._wake.clear()
                await self._wake.wait()
