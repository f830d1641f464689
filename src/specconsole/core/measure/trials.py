"""A trial and its figures: the phases it went through, its status and kind, the numbers
each ladder level measured, why it crashed, and the record that holds all of it.

Why a module of its own: these are the facts everything else reads — the strategy and
the objective rank recorded trials, the plan's objective is defined over their figures,
the session stores them, the reports and the console show them — while the controller's
live snapshot (``core.machine.state``) holds a plan that itself depends on them. Keeping the
records below the plan keeps the core's imports acyclic.

All types are frozen dataclasses of plain values; times are wall-clock seconds supplied by
the runtime in events (the pure core never reads a clock).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from specconsole.core.measure.stats import Spread

if TYPE_CHECKING:  # the records' field types, which a record never needs to be built
    from specconsole.core.config.model import ServerConfig
    from specconsole.core.logs.stages import LoadStage
    from specconsole.core.measure.acceptance import CounterAcceptance
    from specconsole.core.measure.forecast import Forecast
    from specconsole.core.measure.gpu import GpuSample, GpuSpan, TrialGpu

ACCEPT_TOLERANCE = 0.10
"""The client's tokens per chunk and the engine's acceptance length agree within this share."""


class Phase(StrEnum):
    """Where the controller is. A trial walks VALIDATING → … → RECORDING."""

    IDLE = "idle"
    """Nothing running: no sweep started yet (or a manual trial finished)."""
    VALIDATING = "validating"
    """Checking the configuration with the engine's own rules and rendering it."""
    DEPLOYING = "deploying"
    """Uploading the rendered unit/command (backup first) and reloading the service manager."""
    RESTARTING = "restarting"
    """Restarting the server with the new configuration."""
    LOADING = "loading"
    """Server starting: weights, KV cache, CUDA graphs (see ``ControllerState.load_stage``)."""
    READY = "ready"
    """Server answered health and logged its ready line; reading ``/server_info``."""
    FLUSHING = "flushing"
    """``POST /flush_cache`` so accept-length statistics cover this trial only."""
    BENCHMARKING = "benchmarking"
    """Running the concurrency ladder (see ``ControllerState.bench`` for per-level progress)."""
    RECORDING = "recording"
    """Appending the trial's record to the session (fsync) before moving on."""
    CRASHED = "crashed"
    """The server died (or never came up); the crashed trial is being recorded."""
    AWAITING_DECISION = "awaiting_decision"
    """Paused after a crash under the ``pause`` policy; see ``ControllerState.pending``."""
    PAUSED = "paused"
    """The sweep is paused by the user (between trials); resume continues it."""
    CANCELLED = "cancelled"
    """The user cancelled the running trial; the server is left as it is."""
    DONE = "done"
    """The sweep finished (plan exhausted or a budget reached)."""


BUSY_PHASES: frozenset[Phase] = frozenset(
    {
        Phase.VALIDATING,
        Phase.DEPLOYING,
        Phase.RESTARTING,
        Phase.LOADING,
        Phase.READY,
        Phase.FLUSHING,
        Phase.BENCHMARKING,
        Phase.RECORDING,
        Phase.CRASHED,
    }
)
"""Phases in which a trial (or a rollback, a trial of kind ROLLBACK) is in progress;
quitting here asks first."""

RESTING_PHASES: frozenset[Phase] = frozenset(
    {Phase.IDLE, Phase.AWAITING_DECISION, Phase.PAUSED, Phase.CANCELLED, Phase.DONE}
)
"""Phases in which the controller waits for an intent."""

WATCHED_PHASES: frozenset[Phase] = frozenset(
    {Phase.LOADING, Phase.READY, Phase.FLUSHING, Phase.BENCHMARKING}
)
"""Phases in which a fatal line, an exit or a timeout is a crash of the current trial."""


class TrialStatus(StrEnum):
    """Outcome of a trial, as shown in tables and reports."""

    RUNNING = "running"
    OK = "ok"
    """Loaded and benchmarked."""
    CRASHED = "crashed"
    """The server died while loading or benchmarking."""
    LOAD_TIMEOUT = "load_timeout"
    """Not ready within the load timeout."""
    INVALID = "invalid"
    """Rejected by validation before anything was deployed."""
    FAILED = "failed"
    """An operation failed (deploy, restart, benchmark error) without a server crash, or
    every benchmark request failed or timed out."""
    DEGRADED = "degraded"
    """Benchmarked, but some requests failed, timed out or stalled: inconclusive, not a
    success (the record's note gives the counts and the reason)."""
    INFEASIBLE = "infeasible"
    """Skipped because the capacity predictor said it would not load."""
    SKIPPED = "skipped"
    """Skipped by the user's decision."""
    CANCELLED = "cancelled"
    PRUNED = "pruned"
    """Loaded, benchmarked first at the level that decides the objective and stopped there:
    it fell short of the best trial beyond the noise (``[sweep] prune``, core.search.prune).
    Neither a success nor a failure; never the best (``TrialRecord.prune`` says why)."""


class TrialKind(StrEnum):
    """Why a trial runs."""

    SWEEP = "sweep"
    """Chosen by the plan's strategy."""
    MANUAL = "manual"
    """A configuration the user deployed (editor apply, edit-then-deploy)."""
    RETRY = "retry"
    """The same configuration again after a crash."""
    BENCH_ONLY = "bench_only"
    """Benchmark what is deployed now; no deploy or restart."""
    REATTACH = "reattach"
    """Resumed session: the planned configuration is already up, so no restart."""
    ROLLBACK = "rollback"
    """Redeploy the last good configuration so the box serves again; not benchmarked."""


COUNTED_KINDS: frozenset[TrialKind] = frozenset(
    {TrialKind.SWEEP, TrialKind.MANUAL, TrialKind.RETRY, TrialKind.REATTACH}
)
"""Trial kinds that count against ``max_trials``."""


@dataclass(frozen=True, slots=True)
class PhaseStamp:
    """One phase a trial went through, with its start (and end, once left)."""

    phase: Phase
    started_at: float
    ended_at: float | None = None
    detail: str = ""
    """e.g. the load stage (``weights``) or the ladder level (``c=16``)."""


def close_open_stamp(phases: tuple[PhaseStamp, ...], at: float) -> tuple[PhaseStamp, ...]:
    """``phases`` with the last stamp ended at ``at`` if it is still open (never before it
    started: a wall clock can step back, a duration must not go negative)."""
    if phases and phases[-1].ended_at is None:
        last = phases[-1]
        return (*phases[:-1], replace(last, ended_at=max(at, last.started_at)))
    return phases


@dataclass(frozen=True, slots=True)
class LevelSummary:
    """One concurrency level's benchmark figures, as recorded and reported."""

    concurrency: int
    output_tok_s: float
    """Aggregate output tokens/s across all requests in flight."""
    per_request_tok_s: float
    """Mean output tokens/s seen by one request (decode speed a user feels)."""
    completed: int
    failed: int = 0
    ttft_p50_ms: float | None = None
    itl_p50_ms: float | None = None
    accept_length: float | None = None
    """Mean tokens accepted per verify step (including the bonus token), if known."""
    duration_s: float | None = None
    ttft_p99_ms: float | None = None
    """Tail time to first token (SLO constraints such as ``ttft_p99_ms_at_64 <= 2000``)."""
    itl_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    """Median time per output token after the first, (e2e − ttft) / (n − 1)."""
    tpot_p99_ms: float | None = None
    request_goodput: float | None = None
    """Requests/s meeting every ``[bench] slo`` objective (None without an SLO)."""
    repeats: int = 1
    """Runs of the ladder this level's figures average (``[bench] repeats``)."""
    output_tok_s_ci: tuple[float, float] | None = None
    """95 % confidence interval of ``output_tok_s`` over the repeats (None for one run)."""
    per_request_tok_s_ci: tuple[float, float] | None = None
    """95 % confidence interval of ``per_request_tok_s`` over the repeats."""
    measurement: str = "completed"
    """How the level was measured: ``completed`` (bench_serving's metrics over finished
    requests) or ``steady`` (a steady-state window of streamed tokens; ``completed`` then
    counts the streams measured). docs/benchmark.md defines both."""
    counters: CounterAcceptance | None = None
    """The engine's own speculative-decoding counters over the level (drafts, draft tokens,
    accepted, per position, the server's output tokens); ``accept_length`` is then theirs."""
    gpu: GpuSpan | None = None
    """What the GPUs did while the level was measured (``nvidia-smi``; None: not sampled)."""
    client_accept_length: float | None = None
    """The load generator's own estimate: tokens per token-carrying chunk (the cross-check
    of ``accept_length``: :attr:`accept_disagreement`)."""

    @property
    def accept_disagreement(self) -> float | None:
        """How far the client's tokens per chunk is from the engine's acceptance length, as a
        share of the engine's (None when either is unknown); beyond
        :data:`ACCEPT_TOLERANCE` the figures disagree (a server that streams several steps
        per chunk, or one token per chunk whatever it accepted; a client that merges reads)."""
        engine, client = self.accept_length, self.client_accept_length
        if engine is None or client is None or engine <= 0:
            return None
        return abs(client - engine) / engine

    @property
    def tokens_per_joule(self) -> float | None:
        """Output tokens per joule: aggregate tok/s over the GPUs' mean power."""
        return None if self.gpu is None else self.gpu.tokens_per_joule(self.output_tok_s)

    @property
    def accept_rate(self) -> float | None:
        """Accepted / drafted tokens from the engine's counters (None: not counted)."""
        return None if self.counters is None else self.counters.acceptance_rate

    @property
    def output_tok_s_spread(self) -> Spread | None:
        """Mean, sample std and 95 % CI of ``output_tok_s`` over the repeats (None: one run)."""
        return _spread(self.repeats, self.output_tok_s, self.output_tok_s_ci)

    @property
    def per_request_tok_s_spread(self) -> Spread | None:
        """Mean, sample std and 95 % CI of ``per_request_tok_s`` over the repeats."""
        return _spread(self.repeats, self.per_request_tok_s, self.per_request_tok_s_ci)


def _spread(n: int, mean: float, ci: tuple[float, float] | None) -> Spread | None:
    if n < 2 or ci is None:
        return None
    return Spread.from_interval(n, mean, ci[0], ci[1])


@dataclass(frozen=True, slots=True)
class PruneInfo:
    """Why a trial was pruned: the figure that decided it against the incumbent's."""

    metric: str
    """The objective's metric as named in the plan (``aggregate_at_32``, ``max_rate_under_slo``)."""
    value: float
    """The candidate's figure at the deciding level (or rate probe)."""
    incumbent: int
    """The best trial's index when the decision was made."""
    incumbent_value: float
    threshold: float
    """The candidate had to reach this to stay in (the incumbent's figure less the noise)."""
    concurrency: int | None = None
    """The deciding ladder level (None for a rate probe)."""


@dataclass(frozen=True, slots=True)
class RateProbe:
    """One Poisson request rate tried by ``objective = "max_rate_under_slo"``."""

    rate: float
    """Requests per second offered."""
    level: LevelSummary
    """What the probe measured (its concurrency is the in-flight cap)."""
    met: bool
    """Every SLO constraint held at this rate."""
    missed: str = ""
    """The constraints it missed, with the figures (``ttft_p99_ms_at_64 2,310 > 2000``)."""


@dataclass(frozen=True, slots=True)
class CrashInfo:
    """Why and where a trial died, for the crash banner, records and reports."""

    cause: str
    """Classified cause, e.g. ``kv_cache_oom``, ``cuda_graph_oom``, ``exited``, ``load_timeout``."""
    message: str
    """One human line: the fatal log line or what the service manager said."""
    phase: Phase
    """The phase the trial had reached."""
    load_stage: LoadStage | None = None
    excerpt: tuple[str, ...] = ()
    """The log lines around the fatal line."""
    fixes: tuple[str, ...] = ()
    """Suggested fixes (SGLang's own 'Possible solutions' and ours)."""
    exit_status: int | None = None
    signal: int | None = None
    capacity: int | None = None
    """``max_total_num_tokens`` if the capacity line was seen before the crash."""
    detected_at: float | None = None
    """When the controller noticed (wall clock)."""
    source_time: float | None = None
    """When the fatal line was written, if the log said."""
    gpu_memory: tuple[GpuSample, ...] = ()
    """Each GPU as last sampled when the crash was seen: the memory at the fatal line."""


@dataclass(frozen=True, slots=True)
class CapacityPrediction:
    """The KV capacity predicted for a configuration from earlier trials."""

    predicted_tokens: int | None
    """Predicted ``max_total_num_tokens`` (None: not enough data to predict)."""
    feasible: bool
    """False when the prediction says the configuration will not load."""
    minimum_tokens: int
    """Capacity below which a configuration is considered not to load."""
    basis: tuple[tuple[int, int], ...] = ()
    """The (draft tokens, capacity) points the fit used."""
    slope: float | None = None
    """Tokens of capacity per extra draft token (negative)."""
    intercept: float | None = None
    draft_tokens: int | None = None
    """The configuration's draft token count the prediction is for."""
    reason: str = ""
    """Human explanation, e.g. ``predicted 1,200 tokens < minimum 8,192``."""


@dataclass(frozen=True, slots=True)
class Remeasure:
    """A trial that measures a configuration already measured again, under other benchmark
    settings: at the concurrencies around a schedule's edges (``core.search.edges``), or on
    another workload. Its figures answer that question only — never a level's best, never
    the sweep's best (``core.plans.objective``)."""

    why: str
    """``edge`` (the rungs around a schedule's edges) or ``workload`` (another dataset)."""
    ladder: tuple[int, ...] = ()
    """The concurrencies it is measured at (empty: the plan's ladder)."""
    dataset: str = ""
    """The workload it is measured on (empty: the plan's ``[bench] dataset``)."""

    def to_dict(self) -> dict[str, Any]:
        return {"why": self.why, "ladder": list(self.ladder), "dataset": self.dataset}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Remeasure:
        return cls(
            why=str(data["why"]),
            ladder=tuple(int(c) for c in data.get("ladder", ())),
            dataset=str(data.get("dataset", "")),
        )


@dataclass(frozen=True, slots=True)
class TrialRecord:
    """Everything about one trial; the unit of ``trials.jsonl`` and of the trials table."""

    index: int
    """0-based position in the session (trial *index + 1* of n)."""
    config: ServerConfig
    """The configuration as requested (the plan's or the user's): the trial's identity."""
    normalized: ServerConfig | None = None
    """The configuration after validation's auto-adjustments (what was deployed)."""
    kind: TrialKind = TrialKind.SWEEP
    status: TrialStatus = TrialStatus.RUNNING
    started_at: float = 0.0
    finished_at: float | None = None
    phases: tuple[PhaseStamp, ...] = ()
    argv: tuple[str, ...] = ()
    """The rendered server command line."""
    artifact_hash: str | None = None
    """sha256 of the deployed unit/command: the configuration's identity on the box."""
    warnings: tuple[str, ...] = ()
    """Validation warnings and auto-adjustments."""
    errors: tuple[str, ...] = ()
    """Validation errors or the failed operation's message."""
    capacity: int | None = None
    """``max_total_num_tokens`` from the capacity line."""
    max_running_requests: int | None = None
    """As resolved by the server (capacity line)."""
    predicted: CapacityPrediction | None = None
    server_info: tuple[tuple[str, str], ...] = ()
    """Selected resolved server args from ``/server_info`` (name, JSON-encoded value)."""
    levels: tuple[LevelSummary, ...] = ()
    accept_length: float | None = None
    """Mean accept length over the whole ladder."""
    crash: CrashInfo | None = None
    log_file: str | None = None
    """Path of the captured server log, relative to the session folder."""
    note: str = ""
    deploy_diff: str = ""
    """The unified diff this trial's deploy made on the box (environment values redacted)."""
    box: str = ""
    """The pool member that ran the trial ('' for a one-box session)."""
    speculation_off: str = ""
    """Why the server ran without the speculation the configuration asked for ('' when it
    speculated, or was not asked to): neither a crash nor an ordinary success, and never the
    best of a sweep (``core.machine.handlers.speculation``)."""
    prune: PruneInfo | None = None
    """Set when the trial was pruned (status ``pruned``): the figure that decided it."""
    rate_probes: tuple[RateProbe, ...] = ()
    """``max_rate_under_slo``: every rate probe, in the order they ran."""
    gpu: TrialGpu | None = None
    """What the GPUs did: memory while loading (peak) and at ready, and per level (also in
    each level's ``gpu``); None when the box was not sampled."""
    forecast: Forecast | None = None
    """What was predicted before the deploy (will it load, capacity, throughput where a
    model exists), to check against what ran (``core.measure.forecast``)."""
    remeasure: Remeasure | None = None
    """Set when the trial measures its configuration again under other benchmark settings
    (a schedule's edges, another workload): its figures answer that question only."""

    @property
    def effective(self) -> ServerConfig:
        """The configuration the server ran (or will run): the normalized one once the trial
        was validated, else the requested one. Every view and action reads this; ``config``
        stays the trial's identity for the strategy (``core.config.effective``)."""
        return self.normalized or self.config

    @property
    def slo_rate(self) -> float | None:
        """The highest probed request rate at which every SLO constraint held (None: no
        rate search, or no probe met them)."""
        return max((p.rate for p in self.rate_probes if p.met), default=None)

    @property
    def single_request_tok_s(self) -> float | None:
        """Headline 1: per-request output tok/s at concurrency 1 (lowest level if no c=1)."""
        if not self.levels:
            return None
        lowest = min(self.levels, key=lambda lv: lv.concurrency)
        return lowest.per_request_tok_s

    @property
    def single_request_spread(self) -> Spread | None:
        """Headline 1's mean, sample std and 95 % CI over ``[bench] repeats`` (None: one
        run)."""
        if not self.levels:
            return None
        return min(self.levels, key=lambda lv: lv.concurrency).per_request_tok_s_spread

    @property
    def peak_aggregate_tok_s(self) -> float | None:
        """Headline 2: the best aggregate output tok/s over the ladder."""
        level = self.peak_level
        return None if level is None else level.output_tok_s

    @property
    def peak_aggregate_spread(self) -> Spread | None:
        """Headline 2's mean, sample std and 95 % CI over the repeats (None: one run)."""
        level = self.peak_level
        return None if level is None else level.output_tok_s_spread

    @property
    def peak_level(self) -> LevelSummary | None:
        """The level whose (mean) aggregate output tok/s is the highest."""
        if not self.levels:
            return None
        return max(self.levels, key=lambda lv: lv.output_tok_s)

    @property
    def peak_concurrency(self) -> int | None:
        """The concurrency at which the aggregate peaked."""
        level = self.peak_level
        return None if level is None else level.concurrency

    @property
    def repeats(self) -> int:
        """Runs of the ladder the figures average (``[bench] repeats``; 1 when not repeated
        or not benchmarked)."""
        return max((lv.repeats for lv in self.levels), default=1)

    @property
    def loaded(self) -> bool:
        """True if the server reached ready with this configuration."""
        return any(p.phase in (Phase.READY, Phase.BENCHMARKING) for p in self.phases) or (
            self.status is TrialStatus.OK
        )

    @property
    def duration_s(self) -> float | None:
        if self.finished_at is None:
            return None
        return self.finished_at - self.started_at
