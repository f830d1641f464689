"""The machine's inputs: user intents and the outcomes of the effects it asked for.

Why two families behind one module: the state machine treats them alike (``step(state,
event)``), but they come from different places. *Intents* come from the UI or the headless
driver and are the only way a user changes anything (one key = one intent); they are defined
in :mod:`.intents` (which the console loads alone) and re-exported here, so the machine and
the runtime name every input as ``events.X``. *Outcomes* come from the runtime, which
performed an effect (deploy, restart, watch the load, benchmark, record) and reports what
happened. Every outcome carries the ``epoch`` of the effect that caused it, so a
late answer from an abandoned trial (cancelled, crashed) is recognised as stale and dropped
instead of corrupting the next trial.

Every event carries ``at``: the wall-clock time the runtime observed it. The pure core never
reads a clock, which keeps every transition reproducible in tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from specconsole.core.boxfacts import BoxProbe
from specconsole.core.config.model import ServerConfig
from specconsole.core.logs.events import LoadStage, SuggestedFix
from specconsole.core.machine.intents import (  # noqa: F401 - re-exported: every input is here
    INTENT_TYPES,
    BenchmarkOnly,
    Cancel,
    DeployConfig,
    Event,
    FocusBox,
    Intent,
    Pause,
    Quit,
    Resume,
    SetPolicy,
    StartSweep,
)
from specconsole.core.machine.vocab import ConnectionState, PoolView
from specconsole.core.measure.forecast import ModelFacts
from specconsole.core.measure.gpu import GpuSample
from specconsole.core.measure.trials import LevelSummary, TrialRecord
from specconsole.core.ports import BenchProgress, ServiceStatus

# --------------------------------------------------------------------------------------------
# Outcomes (runtime → controller)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome(Event):
    """What happened when the runtime performed an effect."""

    epoch: int = 0
    """The epoch of the effect this answers (see ``ControllerState.epoch``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigValidated(Outcome):
    """The configuration passed validation; ``config`` is the normalized one."""

    config: ServerConfig
    argv: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    model_facts: tuple[ModelFacts, ...] = ()
    """The models' own limits as read from the box (``controller.probe.modelfacts``), for
    the forecast of the trial (``core.search.forecasting``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigInvalid(Outcome):
    """Validation rejected the configuration (each error names the field and the fix)."""

    errors: tuple[str, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ReattachChecked(Outcome):
    """Answer to ``CheckReattach``: is this exact configuration already up and healthy?"""

    attached: bool
    artifact_hash: str | None = None
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeployPreviewed(Outcome):
    """What the deploy is about to change on the box: a unified diff of the unit, script or
    docker command against what is there ('' when nothing changes), values redacted."""

    diff: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DeployDone(Outcome):
    """The artifact was backed up, uploaded and the service manager reloaded."""

    artifact_hash: str
    backup_path: str | None = None
    location: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Restarted(Outcome):
    """The server was (re)started with the deployed configuration; it is now loading."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OperationFailed(Outcome):
    """An operation failed (deploy, restart, server_info, flush, benchmark, record...)."""

    operation: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LogLines(Outcome):
    """A batch of server log lines, in order (batched so a burst is one event)."""

    lines: tuple[str, ...]
    source_time: float | None = None
    trial_index: int | None = None
    """The trial whose captured log these lines belong to (None: no trial)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadStageSeen(Outcome):
    """The log shows the server entered a load sub-phase."""

    stage: LoadStage
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacitySeen(Outcome):
    """The capacity line: ``max_total_num_tokens=...``."""

    max_total_num_tokens: int
    max_running_requests: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerReady(Outcome):
    """The ready line was logged and/or ``/health`` answered 200."""

    via: str = "log"


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeculationOffSeen(Outcome):
    """The server says it serves without the speculation it was asked for (its log)."""

    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FatalSeen(Outcome):
    """A fatal log line: the server is dying (or hung after an unrecoverable error)."""

    cause: str
    message: str
    excerpt: tuple[str, ...] = ()
    fixes: tuple[SuggestedFix, ...] = ()
    """The grammar's remedies; the crash keeps those that can change the outcome for the
    trial's configuration (``handlers.crash``)."""
    source_time: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerExited(Outcome):
    """The service went failed/inactive or the process exited (from a status poll; the log's
    own ``Main process exited`` line is ``core.logs.events.ServiceExited``)."""

    status: ServiceStatus


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSampled(Outcome):
    """One ``nvidia-smi`` sample of every GPU, taken for ``trial_index``'s telemetry. Holds
    in every epoch (a crash begins a new one while the GPUs are still being watched); the
    trial it was taken for decides where it counts."""

    samples: tuple[GpuSample, ...]
    trial_index: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuTelemetryLost(Outcome):
    """The GPUs were being sampled and the samples stopped: ``nvidia-smi`` went silent (a
    hung driver) or exited and could not be restarted. The GPU figures stop there — shown
    as lost, never as the last sample or as 0 — until a sample arrives again."""

    reason: str
    trial_index: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuTelemetryAbsent(Outcome):
    """The box has no GPU to sample (no ``nvidia-smi``, no device, or the backend's GPUs
    are elsewhere): said once, nothing else changes."""

    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TimerFired(Outcome):
    """A timer set by ``StartTimer`` expired."""

    key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerInfoFetched(Outcome):
    """Selected resolved arguments from ``/server_info`` as (name, JSON value) pairs."""

    items: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheFlushed(Outcome):
    """``/flush_cache`` succeeded."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchProgressed(Outcome):
    """A progress tick from the benchmark runner."""

    progress: BenchProgress


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchLevelFinished(Outcome):
    """One ladder level finished: its figures, while the rest of the ladder still runs."""

    level_index: int
    level: LevelSummary
    repeat: int = 0
    """Which run of the ladder measured it (0-based; ``[bench] repeats``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchFinished(Outcome):
    """The ladder finished (or stopped early: ``partial`` with ``error``)."""

    levels: tuple[LevelSummary, ...]
    accept_length: float | None = None
    partial: bool = False
    error: str | None = None
    reruns: tuple[str, ...] = ()
    """Levels re-run once after a lost connection, with why and how it went."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TrialRecorded(Outcome):
    """The trial's record is durably in the session (fsync'd)."""

    index: int
    record: TrialRecord | None = None
    """The record as written (its ``recording`` stamp closed, ``log_file`` filled in)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerStopped(Outcome):
    """The server was stopped on request; ``status`` is what the manager says afterwards."""

    status: ServiceStatus | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolChanged(Outcome):
    """The rest of the pool changed: what this box's strategy must take into account.

    Not an answer for this box's trial, so it holds in every epoch (like ConnectionChanged):
    the pool orchestrator applies it synchronously whenever another box starts or records a
    trial."""

    view: PoolView


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionChanged(Outcome):
    """The transport's connection state changed."""

    state: ConnectionState
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class BoxProbed(Outcome):
    """The box probe finished (``controller.probe.boxprobe``): reachable or the exact error, engine
    release, GPUs, the service's state, the configuration it runs now, serving or not. Holds
    in every epoch (it is about the box, not a trial); ``ControllerState.box`` carries it."""

    probe: BoxProbe


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineVersionKnown(Outcome):
    """The engine release on the box became known (declared, detected, from ``/server_info``
    or recorded by the session resumed); it holds in every epoch, like ConnectionChanged. The
    editor shows that release's flag names and validates with its rules."""

    version: str | None
    """The release number, ``None`` when it could not be found."""
    source: str = ""
    """``declared``, ``detected``, ``server_info`` or ``unknown``."""
    note: str = ""
    """What it means for the trials, said once as a notice ('' when nothing to say): an
    unknown release is deployed only with flags every release accepts."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PreflightChecked(Outcome):
    """The pre-flight's findings before the first deploy (``core.machine.handlers.preflight``): what
    blocks the plan and what is only said once. Holds in every epoch, like BoxProbed."""

    findings: tuple[str, ...]
    """Each finding as one sentence with its fix (``check: message``)."""
    blocking: bool = False
    """Whether the plan cannot run (a headless run has stopped)."""


OUTCOME_TYPES: tuple[type[Outcome], ...] = (
    PoolChanged,
    ConfigValidated,
    ConfigInvalid,
    ReattachChecked,
    DeployPreviewed,
    DeployDone,
    Restarted,
    OperationFailed,
    LogLines,
    LoadStageSeen,
    CapacitySeen,
    ServerReady,
    SpeculationOffSeen,
    FatalSeen,
    ServerExited,
    GpuSampled,
    GpuTelemetryLost,
    GpuTelemetryAbsent,
    TimerFired,
    ServerInfoFetched,
    CacheFlushed,
    BenchProgressed,
    BenchLevelFinished,
    BenchFinished,
    TrialRecorded,
    ServerStopped,
    ConnectionChanged,
    BoxProbed,
    EngineVersionKnown,
    PreflightChecked,
)
"""Every outcome, for documentation and exhaustive tests."""
