"""The machine's outputs: what the runtime must do next, as plain data.

Why effects instead of calls: ``step()`` stays pure and synchronous, so every decision the
controller makes (what to deploy, when to stop the server, when a crash is a crash) is a
table row in a test, with no SSH, HTTP, threads or clocks. The runtime
(``specconsole.controller``) interprets each effect through the ports and feeds the result
back as an ``Outcome`` event stamped with the effect's ``epoch``.

Effects that start long-running work (``StartWatch``, ``RunBenchmark``, ``StartTimer``) are
stopped by a matching effect (``StopWatch``, ``CancelBenchmark``, ``CancelTimer``) or by
``AbortOperations``, which cancels whatever one-shot operation is in flight.
"""

from __future__ import annotations

from dataclasses import dataclass

from specconsole.core.config.model import ServerConfig
from specconsole.core.machine.state import TrialRecord
from specconsole.core.ports import BenchSpec

LOAD_TIMER = "load"
"""Key of the load-timeout timer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Effect:
    """Base of every machine output."""

    epoch: int = 0
    """Stamp this on the outcome event so stale answers can be recognised."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Validate(Effect):
    """Validate and normalize ``config``, render its argv → ConfigValidated | ConfigInvalid."""

    config: ServerConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckReattach(Effect):
    """Is ``config`` deployed (same artifact hash), running and healthy? → ReattachChecked."""

    config: ServerConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class Deploy(Effect):
    """Back up, upload, reload (``ServiceBackend.deploy``) → DeployDone | OperationFailed."""

    config: ServerConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class Restart(Effect):
    """(Re)start the server (``ServiceBackend.start``) → Restarted | OperationFailed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StartWatch(Effect):
    """Follow the log, poll health and service status together until ``StopWatch``.

    Emits LogLines, LoadStageSeen, CapacitySeen, ServerReady, FatalSeen, ServerExited.
    ``trial_index`` says which trial's captured log the lines belong to.
    """

    trial_index: int | None
    continue_previous: bool = False
    """Same server run as the previous watch: continue after the last line it delivered
    instead of replaying the run's log from its start (benchmark-only trials)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StopWatch(Effect):
    """Stop following the log and polling."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StartTelemetry(Effect):
    """Sample the box's GPUs (``nvidia-smi``, streamed) for ``trial_index`` until
    ``StopTelemetry`` → GpuSampled*, or GpuTelemetryAbsent once for a box without GPUs."""

    trial_index: int


@dataclass(frozen=True, slots=True, kw_only=True)
class StopTelemetry(Effect):
    """Stop sampling the GPUs (the trial ended)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StartTimer(Effect):
    """Fire ``TimerFired(key)`` after ``seconds`` unless cancelled."""

    key: str
    seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelTimer(Effect):
    key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchServerInfo(Effect):
    """GET ``/server_info`` → ServerInfoFetched | OperationFailed (not fatal)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FlushCache(Effect):
    """POST ``/flush_cache`` → CacheFlushed | OperationFailed (not fatal)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunBenchmark(Effect):
    """Run the ladder → BenchProgressed* (and BenchLevelFinished per level), then BenchFinished."""

    spec: BenchSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelBenchmark(Effect):
    """Stop the load now (partial results are discarded by the machine)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortOperations(Effect):
    """Cancel any one-shot operation in flight (validate, deploy, restart, flush...)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordTrial(Effect):
    """Append ``record`` to the session durably (fsync) → TrialRecorded | OperationFailed."""

    record: TrialRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class SaveSession(Effect):
    """Rewrite ``session.toml`` (progress) from the current state. Fire and forget."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StopServer(Effect):
    """Stop the server (after a crash, so a restart loop cannot spin; or on request)
    → ServerStopped with the final status | OperationFailed("stop")."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Notify(Effect):
    """Tell the user something (status line, headless output)."""

    level: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Finish(Effect):
    """The sweep ended; the headless driver exits with ``exit_code``."""

    reason: str
    exit_code: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Shutdown(Effect):
    """Stop the runtime (Quit). Stops the server first only when ``stop_server``."""

    stop_server: bool = False
