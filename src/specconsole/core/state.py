"""The controller's state: one frozen, render-friendly snapshot of everything going on.

Why one snapshot: the console, the headless printer, the session recorder and the tests are
all *views* of the same controller. The controller publishes a new ``ControllerState`` after
every transition; a view renders it as a pure function (no view ever asks the controller a
question or mutates anything). Everything a screen needs is here: the phase and when it began,
the loading sub-phase, trial *i of n*, the configuration being tried and the one deployed,
every trial record with its headline numbers, live benchmark progress per level, the pending
decision after a crash and the connection state.

All types are frozen dataclasses of plain values (numbers, strings, tuples, enums and
``ServerConfig``) so snapshots are cheap to share between threads and trivially comparable in
tests. Times are wall-clock seconds (``time.time()``) supplied by the runtime in events; the
pure core never reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from specconsole.core.config import ServerConfig

if TYPE_CHECKING:
    from specconsole.core.plan import SweepPlan


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


class LoadStage(StrEnum):
    """Sub-phase of LOADING, from the server's log lines."""

    QUEUED = "queued"
    """Submitted to a batch scheduler, waiting for a node (Slurm ``PENDING``)."""
    STARTING = "starting"
    """Process launched; no weight loading seen yet (argument checks, distributed init)."""
    WEIGHTS = "weights"
    KV_CACHE = "kv_cache"
    CUDA_GRAPH = "cuda_graph"
    WARMUP = "warmup"
    """Capacity line seen; waiting for warmup and the ready line."""


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
    """An operation failed (deploy, restart, benchmark error) without a server crash."""
    INFEASIBLE = "infeasible"
    """Skipped because the capacity predictor said it would not load."""
    SKIPPED = "skipped"
    """Skipped by the user's decision."""
    CANCELLED = "cancelled"


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


class CrashPolicy(StrEnum):
    """What happens after a crash."""

    PAUSE = "pause"
    """Wait for the user's decision (``ResumeChoice``)."""
    AUTO = "auto"
    """Record it and continue with the next planned trial."""


class ResumeChoice(StrEnum):
    """The user's decision after a crash (or to continue a paused/cancelled sweep)."""

    RESUME_NEXT = "resume_next"
    """Continue with the next configuration the strategy picks."""
    RETRY_SAME = "retry_same"
    """Deploy the crashed configuration again."""
    EDIT_THEN_DEPLOY = "edit_then_deploy"
    """Deploy the (edited) configuration carried by the intent."""
    SKIP = "skip"
    """Record the next planned configuration as skipped and continue after it."""
    ROLLBACK = "rollback"
    """Redeploy the last good configuration so the box serves again, then pause."""


class ConnectionState(StrEnum):
    """Reachability of the box, as the runtime last saw it."""

    UNKNOWN = "unknown"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    LOST = "lost"


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


@dataclass(frozen=True, slots=True)
class LevelProgress:
    """Live progress of one ladder level while benchmarking."""

    concurrency: int
    total: int
    """Measured requests planned for the level; 0 when the count is not known up front
    (duration mode: the level runs for ``planned_duration_s``)."""
    completed: int = 0
    failed: int = 0
    running: int = 0
    current_tok_s: float = 0.0
    elapsed_s: float = 0.0
    warmup: bool = False
    done: bool = False
    result: LevelSummary | None = None
    """Set when the level finished."""
    planned_duration_s: float | None = None
    """Duration mode: how long the level's measured phase runs."""

    @property
    def fraction(self) -> float:
        """Completed share in [0, 1] for a progress bar: requests done out of ``total``, or
        in duration mode the measured time spent out of the planned duration."""
        if self.done:
            return 1.0
        if self.total <= 0:
            if self.planned_duration_s and not self.warmup and self.elapsed_s > 0:
                return min(1.0, self.elapsed_s / self.planned_duration_s)
            return 0.0
        return min(1.0, (self.completed + self.failed) / self.total)


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

    @property
    def single_request_tok_s(self) -> float | None:
        """Headline 1: per-request output tok/s at concurrency 1 (lowest level if no c=1)."""
        if not self.levels:
            return None
        lowest = min(self.levels, key=lambda lv: lv.concurrency)
        return lowest.per_request_tok_s

    @property
    def peak_aggregate_tok_s(self) -> float | None:
        """Headline 2: the best aggregate output tok/s over the ladder."""
        if not self.levels:
            return None
        return max(lv.output_tok_s for lv in self.levels)

    @property
    def peak_concurrency(self) -> int | None:
        """The concurrency at which the aggregate peaked."""
        if not self.levels:
            return None
        return max(self.levels, key=lambda lv: lv.output_tok_s).concurrency

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


@dataclass(frozen=True, slots=True)
class PendingDecision:
    """What the user is asked after a crash under the ``pause`` policy."""

    trial_index: int
    crash: CrashInfo | None
    choices: tuple[ResumeChoice, ...]
    """The choices that are legal now (ROLLBACK only when there is a last good config)."""
    next_config: ServerConfig | None = None
    """What RESUME_NEXT would deploy (None: the plan is exhausted)."""
    rollback_config: ServerConfig | None = None


@dataclass(frozen=True, slots=True)
class Deployed:
    """The configuration currently deployed on the box, as far as the controller knows."""

    config: ServerConfig
    artifact_hash: str | None
    at: float
    serving: bool = False
    """True once it loaded and answered health; False while loading or after a crash."""


@dataclass(frozen=True, slots=True)
class Notice:
    """A message for the user (status line, headless output)."""

    level: str
    """``info``, ``warning`` or ``error``."""
    text: str
    at: float
    config: ServerConfig | None = None
    """The configuration the notice is about; front ends add its label to ``text``
    (``specconsole.present.labels.notice_text``), the core never formats one."""


@dataclass(frozen=True, slots=True)
class ControllerState:
    """The snapshot every view renders. Build new ones with ``dataclasses.replace``."""

    phase: Phase = Phase.IDLE
    phase_since: float = 0.0
    load_stage: LoadStage | None = None
    load_stage_since: float | None = None
    plan: SweepPlan | None = None
    policy: CrashPolicy = CrashPolicy.PAUSE
    trial: TrialRecord | None = None
    """The trial in progress (its record is built up as it goes)."""
    trials: tuple[TrialRecord, ...] = ()
    """Finished trials, oldest first."""
    deployed: Deployed | None = None
    last_good: ServerConfig | None = None
    """The most recent configuration that loaded (the rollback target)."""
    bench: tuple[LevelProgress, ...] = ()
    """Live ladder progress of the current trial."""
    pending: PendingDecision | None = None
    connection: ConnectionState = ConnectionState.UNKNOWN
    sweep_active: bool = False
    """A sweep is in progress (possibly paused, cancelled or awaiting a decision); False
    before the first StartSweep, once it is DONE, and after it is abandoned."""
    pause_requested: bool = False
    """Pause once the current trial is recorded (also set for a manual trial started while
    the sweep is paused, so it stays paused afterwards)."""
    sweep_started_at: float | None = None
    skipped_configs: tuple[ServerConfig, ...] = ()
    """Configurations the user chose to skip (the strategy never proposes them again)."""
    notice: Notice | None = None
    log_tail: tuple[str, ...] = ()
    """The current trial's last log lines (bounded), for crash excerpts."""
    quitting: bool = False
    finished_reason: str = ""
    """Why the sweep ended: ``plan exhausted``, ``max trials reached``..."""
    epoch: int = 0
    """Bumped whenever a trial starts or is abandoned; outcomes of older epochs are stale."""
    reattach_allowed: bool = False
    """The next trial may reattach to a server already up with the same configuration
    (set when a session is resumed)."""
    labels: tuple[tuple[str, str], ...] = ()
    """Free-form labels the runtime sets (host, engine, service); not used by the machine."""

    @property
    def busy(self) -> bool:
        """A trial or rollback is in progress."""
        return self.phase in BUSY_PHASES

    @property
    def trial_number(self) -> int | None:
        """1-based number of the current trial (the *i* of "trial i of n")."""
        return None if self.trial is None else self.trial.index + 1

    @property
    def trial_total(self) -> int | None:
        """The *n* of "trial i of n": the plan's size estimate, at least the trials so far."""
        done = len(self.trials) + (1 if self.trial is not None else 0)
        if self.plan is None:
            return done or None
        return max(done, self.plan.estimated_trials)

    @property
    def current_config(self) -> ServerConfig | None:
        """The configuration being tried now, else the deployed one."""
        if self.trial is not None:
            return self.trial.config
        return None if self.deployed is None else self.deployed.config

    @property
    def deployed_config(self) -> ServerConfig | None:
        return None if self.deployed is None else self.deployed.config

    def elapsed(self, now: float) -> float:
        """Seconds spent in the current phase."""
        return max(0.0, now - self.phase_since)

    def load_elapsed(self, now: float) -> float | None:
        """Seconds spent in the current load sub-phase."""
        if self.load_stage_since is None:
            return None
        return max(0.0, now - self.load_stage_since)
