"""The controller's state: one frozen, render-friendly snapshot of everything going on.

Why one snapshot: the console, the headless printer, the session recorder and the tests are
all *views* of the same controller. The controller publishes a new ``ControllerState`` after
every transition; a view renders it as a pure function (no view ever asks the controller a
question or mutates anything). Everything a screen needs is here: the phase and when it began,
the loading sub-phase, trial *i of n*, the configuration being tried and the one deployed,
every trial record with its headline numbers, live benchmark progress per level, the pending
decision after a crash and the connection state. The trial records it holds are defined in
``core.measure.trials`` (below the plan, so the imports stay acyclic) and re-exported here.

All types are frozen dataclasses of plain values (numbers, strings, tuples, enums and
``ServerConfig``) so snapshots are cheap to share between threads and trivially comparable in
tests. Times are wall-clock seconds (``time.time()``) supplied by the runtime in events; the
pure core never reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from specconsole.core.machine.vocab import ConnectionState, PoolView, ResumeChoice
from specconsole.core.measure.trials import (
    BUSY_PHASES,
    COUNTED_KINDS,
    RESTING_PHASES,
    WATCHED_PHASES,
    CapacityPrediction,
    CrashInfo,
    LevelSummary,
    Phase,
    PhaseStamp,
    TrialKind,
    TrialRecord,
    TrialStatus,
    close_open_stamp,
)
from specconsole.core.plans.modes import CrashPolicy

if TYPE_CHECKING:  # the fields' types only: the first frame of the console loads none of them
    from specconsole.core.boxfacts import BoxProbe
    from specconsole.core.config.model import ServerConfig
    from specconsole.core.logs.stages import LoadStage
    from specconsole.core.machine.intents import Intent
    from specconsole.core.measure.gpu import GpuSample
    from specconsole.core.plans.plan import SweepPlan
    from specconsole.core.search.eta import Costs

__all__ = [  # the trial records are re-exported: views import the whole vocabulary here
    "BUSY_PHASES",
    "COUNTED_KINDS",
    "RESTING_PHASES",
    "WATCHED_PHASES",
    "CapacityPrediction",
    "ConnectionState",
    "ControllerState",
    "CrashInfo",
    "Deployed",
    "LevelProgress",
    "LevelSummary",
    "Notice",
    "PendingDecision",
    "Phase",
    "PhaseStamp",
    "PoolView",
    "ResumeChoice",
    "TrialKind",
    "TrialRecord",
    "TrialStatus",
    "close_open_stamp",
]


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
    """Set when the level finished: with ``[bench] repeats``, the runs finished so far
    combined (``core.machine.results.combine_runs``: means with their 95 % CI)."""
    planned_duration_s: float | None = None
    """Duration mode: how long the level's measured phase runs."""
    runs: tuple[LevelSummary, ...] = ()
    """Each finished run's own figures, in run order (``[bench] repeats``)."""
    repeat: int = 0
    """The run of the ladder this progress is about (0-based)."""
    repeat_count: int = 1
    """Runs of the ladder planned (``[bench] repeats``)."""
    request_rate: float | None = None
    """A rate search's probe: the Poisson rate offered (req/s; ``max_rate_under_slo``)."""
    position: int = 0
    """Where the level runs: 0 for the first (``BenchSpec.lead`` under pruning), then the
    ladder's order; levels that ran before a level reporting progress are finished."""

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
class BoxLane:
    """One box of a pool as the console's pool lanes show it
    (``controller.pool.console``)."""

    box: str
    phase: Phase = Phase.IDLE
    phase_since: float = 0.0
    trial_index: int | None = None
    """The trial the box is running (None between trials)."""
    trial_config: ServerConfig | None = None
    tail: str = ""
    """The box's last journal line."""
    crashed: bool = False
    """Awaiting a decision after a crash (paused under ``pause``)."""
    removed: str = ""
    """Why the box left the pool ('' while it is in it)."""


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
    deferred: tuple[Intent, ...] = ()
    """Intents sent while the controller was finishing a crash or a record (CRASHED,
    RECORDING), applied (or refused with a notice) once it leaves that phase
    (``core.deferral``): a key pressed as the crash banner appears is never lost."""
    connection: ConnectionState = ConnectionState.UNKNOWN
    box: BoxProbe | None = None
    """What the box probe found as the controller started (``core.boxfacts``): reachable or
    the exact error, engine release, GPUs, the service's state and running configuration,
    serving or not. None until the probe finished."""
    pool: PoolView | None = None
    """Set when this machine is one box of a pool (``controller.pool.run``)."""
    lanes: tuple[BoxLane, ...] = ()
    """Every box of the pool, for the console (set only on the snapshot the console shows,
    which is the focused box's: ``pool.box``); never read by the machine."""
    sweep_active: bool = False
    """A sweep is in progress (possibly paused, cancelled or awaiting a decision); False
    before the first StartSweep, once it is DONE, and after it is abandoned."""
    pause_requested: bool = False
    """Pause once the current trial is recorded (also set for a manual trial started while
    the sweep is paused, so it stays paused afterwards)."""
    sweep_started_at: float | None = None
    eta_prior: Costs | None = None
    """Trial costs learnt from the box's last session (``core.search.eta``): the ETA's and
    the wall-time budget's basis before this session finished a trial."""
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
    engine_version: str | None = None
    """The engine release on the box once known (``EngineVersionKnown``): the editor's flag
    names and rules follow it."""
    engine_version_source: str = ""
    """Where it came from: ``declared``, ``detected``, ``server_info``, ``unknown``."""
    gpus: tuple[GpuSample, ...] = ()
    """The GPUs as last sampled for the trial in progress (empty between trials)."""
    gpu_absent: str = ""
    """Why the box's GPUs cannot be sampled, once known ('' while they can or nobody
    asked): said once, and not asked again."""
    gpu_lost: str = ""
    """Why the samples stopped (``nvidia-smi`` silent or gone), until one arrives again."""
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
        """The configuration being tried now (as the engine runs it, once validated), else
        the deployed one."""
        if self.trial is not None:
            return self.trial.effective
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
