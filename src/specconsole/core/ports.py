"""The seams between the controller and the outside world, as typing Protocols.

The controller runtime depends only on these: a ``Transport`` that carries commands and files
to the GPU box, a ``ServiceBackend`` that runs the inference server there (systemd unit, plain
process or docker container), and a ``BenchmarkRunner`` that drives load at it. Adapters in
``specconsole.remote`` and ``specconsole.bench`` implement them; tests substitute faithful
fakes only where the real thing cannot run here (systemd as PID 1, a GPU).

The value types that cross these seams live here too, so the core can speak about them
without importing an adapter.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from specconsole.core.config.model import ServerConfig
from specconsole.core.measure.acceptance import SpecCounters
from specconsole.core.measure.metrics import LevelMetrics, default_requests_per_level
from specconsole.core.measure.result import BenchResult

# --------------------------------------------------------------------------------------------
# Transport
# --------------------------------------------------------------------------------------------


PARENT_PID_ENV = "SPECCONSOLE_PARENT_PID"
"""The variable in which the local transport names the process that ran a command, so a
server it started on this machine can outlive the run only when it does not watch that PID
(the simulator watches it: ``specconsole.sim.parentwatch``; a real server ignores it)."""


class TransportError(Exception):
    """A transport operation failed; the message says what and how to fix it."""


class ConnectionLost(TransportError):
    """The connection to the box dropped; the transport may reconnect on the next call."""


class HostKeyRejected(TransportError):
    """The box's host key is unknown or changed; it is never silently accepted."""


class SudoWouldPrompt(TransportError):
    """``sudo -n`` refused because a password would be needed."""


class AuthenticationFailed(TransportError):
    """The box refused our credentials."""


class BoxUnreachable(ConnectionLost):
    """No connection to the box could be made (after the transport's own retry)."""


REACH_FAILURES: tuple[type[TransportError], ...] = (
    HostKeyRejected,
    SudoWouldPrompt,
    AuthenticationFailed,
    BoxUnreachable,
)
"""Failures of reach, not results: the sweep stops at once with the error and records no
trial for them (a configuration is never blamed for them)."""


@dataclass(frozen=True, slots=True)
class CommandResult:
    """Outcome of one command run on the box."""

    command: str
    exit_status: int | None
    """Exit status, or ``None`` when the command was killed by a signal or timed out."""
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


@dataclass(frozen=True, slots=True)
class PortForward:
    """A local TCP port that reaches ``remote_host:remote_port`` on the box."""

    local_port: int
    remote_host: str
    remote_port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.local_port}"


@runtime_checkable
class Transport(Protocol):
    """How commands and files reach the box (asyncssh, or local subprocesses)."""

    @property
    def description(self) -> str:
        """Human-readable target, e.g. ``gpu-box (ssh 10.0.0.5:22)`` or ``local``."""
        ...

    async def run(
        self,
        command: str,
        *,
        timeout: float | None = 60.0,
        sudo: bool = False,
        stdin: str | None = None,
    ) -> CommandResult:
        """Run a shell command to completion and return its status and output."""
        ...

    def stream(self, command: str, *, sudo: bool = False) -> AsyncIterator[str]:
        """Yield a long-running command's output lines (without newline) as they arrive.

        Lines are delivered with backpressure: the command is not read faster than the
        consumer iterates. The iterator ends when the command exits.
        """
        ...

    async def upload(
        self, data: bytes, remote_path: str, *, mode: int | None = None, sudo: bool = False
    ) -> None:
        """Write ``data`` to ``remote_path`` atomically (temp name, then rename)."""
        ...

    async def read_file(self, remote_path: str, *, sudo: bool = False) -> bytes | None:
        """Return the file's bytes, or ``None`` when it does not exist."""
        ...

    async def forward_local_port(
        self, remote_port: int, remote_host: str = "127.0.0.1"
    ) -> PortForward:
        """Listen on 127.0.0.1 (port chosen by the OS) and forward to the box's port."""
        ...

    async def close(self) -> None:
        """Close connections and forwards this transport opened."""
        ...


# --------------------------------------------------------------------------------------------
# Service backend
# --------------------------------------------------------------------------------------------


class ServiceState(StrEnum):
    """Coarse state of the inference-server service on the box."""

    RUNNING = "running"
    """Process alive (it may still be loading)."""
    STARTING = "starting"
    """Being started (systemd ``activating``)."""
    EXITED = "exited"
    """Process ended (cleanly or not); see ``exit_status``/``signal``."""
    FAILED = "failed"
    """The service manager marked it failed."""
    INACTIVE = "inactive"
    """Not running and never started, or stopped on request."""
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class ServiceStatus:
    """What the service manager says about the server right now."""

    state: ServiceState
    pid: int | None = None
    exit_status: int | None = None
    signal: int | None = None
    result: str | None = None
    """systemd ``Result=`` (``success``, ``exit-code``, ``signal``, ``oom-kill``...) or docker's."""
    restarts: int | None = None
    oom_killed: bool = False
    detail: str = ""
    cause: str | None = None
    """A scheduler's own reason the server ended, when it has one (Slurm: ``timeout``,
    ``out_of_memory``, ``node_fail``, ``cancelled``, ``unschedulable``...): the crash cause
    recorded instead of a bare "exited"."""


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One server log line as the backend delivered it."""

    text: str
    """The line as the server printed it (journal ``MESSAGE``, log-file line, docker line)."""
    source_time: float | None = None
    """Wall-clock time the line was written, from the journal/docker; None if unknown."""
    cursor: str | None = None
    """Resume token: journal cursor or byte offset after this line."""


@dataclass(frozen=True, slots=True)
class DeployPreview:
    """What ``deploy`` would put on the box, compared with what is there."""

    artifact: str
    """The rendered unit file, command line or docker command."""
    artifact_hash: str
    """sha256 of ``artifact``: the identity of the deployed configuration."""
    current: str | None
    """What is on the box now (None if nothing is)."""
    diff: str
    """Unified diff from ``current`` to ``artifact`` ('' when identical)."""


@dataclass(frozen=True, slots=True)
class Deployment:
    """Receipt of a deploy: what was uploaded and where the previous version went."""

    artifact_hash: str
    backup_path: str | None
    """Where the previous artifact was saved (None when there was none)."""
    location: str
    """Where the artifact now lives on the box (unit path, run folder...)."""
    restored_from: str | None = None
    """For a rollback: the backup whose text was put back (a message names it)."""


@runtime_checkable
class ServiceBackend(Protocol):
    """How the inference server is run on the box (systemd, plain process, docker)."""

    @property
    def description(self) -> str:
        """e.g. ``systemd unit sglang.service`` or ``process in /tmp/specconsole/run``."""
        ...

    async def preview(self, config: ServerConfig) -> DeployPreview:
        """Render the configuration and diff it against what is deployed now."""
        ...

    async def deploy(self, config: ServerConfig) -> Deployment:
        """Back up what is there, upload the rendered artifact, reload the manager."""
        ...

    async def start(self) -> None:
        """(Re)start the server with the deployed configuration; returns once launched."""
        ...

    async def stop(self) -> None:
        """Stop the server (TERM, then KILL after a grace period); no-op if not running."""
        ...

    async def status(self) -> ServiceStatus:
        """The server's current state, exit status and signal."""
        ...

    def logs(self, *, after: str | None = None) -> AsyncIterator[LogRecord]:
        """Follow the log of the current run from its start (or after a resume cursor).

        Lines of an earlier run never appear. Reconnects after a dropped connection resume
        from the last cursor so no line is lost or doubled.
        """
        ...

    async def rollback(self) -> Deployment | None:
        """Restore the most recent backup; returns None if there is nothing to restore."""
        ...

    async def deployed_hash(self) -> str | None:
        """sha256 of the artifact currently deployed (None if none): lets the controller
        ask "is the configuration I deployed the one that is running?" after a restart."""
        ...

    async def running_hash(self) -> str | None:
        """sha256 of the artifact the live server was started from (None when nothing runs,
        or when what runs can no longer be tied to an artifact): a server started before the
        current deploy is not the deployed configuration, whatever ``deployed_hash`` says."""
        ...


@runtime_checkable
class LocatedService(Protocol):
    """A backend whose server's host is known only once it runs (a batch job's node).

    The controller asks it where to reach the server instead of reading ``[server] host``.
    """

    async def server_host(self, config: ServerConfig) -> str | None:
        """The host the server listens on as the transport's end sees it (the job's node),
        or None while that is not known yet (the job is still queued)."""
        ...


# --------------------------------------------------------------------------------------------
# Benchmark runner
# --------------------------------------------------------------------------------------------


class BenchApi(StrEnum):
    """Which HTTP API the load generator speaks."""

    GENERATE = "generate"
    """SGLang native ``/generate`` (gives ``spec_verify_ct`` per request)."""
    COMPLETIONS = "completions"
    """OpenAI ``/v1/completions``."""
    CHAT = "chat"
    """OpenAI ``/v1/chat/completions`` with ``stream_options.include_usage``."""


class Placement(StrEnum):
    """Where the benchmark load is generated (see docs/benchmark.md, "Where the load runs").

    A plan's ``[bench] placement`` names one; ``specconsole.bench.runner.make_runner`` builds
    the runner for it."""

    DIRECT = "direct"
    """From the console host straight to the server's URL."""
    FORWARD = "forward"
    """From the console host through the transport's local port forward (SSH ``-L``; the
    local transport's "forward" is the loopback port itself)."""
    REMOTE = "remote"
    """On the GPU box, by the self-contained runner script."""


DEFAULT_OUTPUT_LEN = 256
"""Output tokens per request when neither the user nor the dataset says (bench_serving's
``--random-output-len`` default is 1024; 256 keeps a ladder of five levels short)."""


@dataclass(frozen=True, slots=True)
class BenchSpec:
    """What to measure: the concurrency ladder and the request shape."""

    ladder: tuple[int, ...] = (1, 4, 16, 32, 64)
    """Concurrency levels, each run at exactly that many requests in flight."""
    requests_per_level: int | None = None
    """Requests per level; None means :func:`default_requests_per_level`."""
    duration_s: float | None = None
    """Alternative to a request count: run each level for this long."""
    warmup_requests: int = 1
    """Requests per level that are sent and discarded before measuring (per slot: c)."""
    input_len: int = 256
    """Prompt length in tokens (approximate for built-in prompts)."""
    output_len: int = DEFAULT_OUTPUT_LEN
    """Fixed output length (``max_tokens`` with ``ignore_eos``)."""
    api: BenchApi = BenchApi.GENERATE
    prompts: str = "builtin"
    """The dataset (``[bench] dataset``): ``builtin``, ``random``, ``sharegpt:FILE``,
    ``jsonl:FILE`` or a JSONL path (bench/workload/datasets.py)."""
    range_ratio: float = 1.0
    """Lengths drawn uniformly from ``[max(1, int(len × ratio)), len]`` (1: fixed)."""
    output_len_from_dataset: bool = False
    """A dataset entry that recorded its answer (a ShareGPT conversation, a custom line's
    assistant turn) generates that answer's length, as bench_serving samples ShareGPT; the
    CLI and the plan set it when no output length is given (an explicit one fixes every
    request's length, bench_serving's ``--sharegpt-output-len``)."""
    temperature: float = 0.0
    request_rate: float | None = None
    """Poisson arrivals at this many req/s instead of closed-loop concurrency."""
    flush_cache: bool = True
    """POST /flush_cache before each level so accept length covers that level only."""
    seed: int = 42
    model: str | None = None
    """Model name for the OpenAI APIs (from /v1/models when None)."""
    request_timeout_s: float = 600.0
    """The longest any wait of the load generator may last: connecting (at most 10 s), a
    control request (at most 30 s), a stream without a token (when shorter than the stall
    timeout, it counts as ``timeout``). docs/benchmark.md, "Bounds and timeouts"."""
    stall_timeout_s: float = 30.0
    """No token for this long on a stream counts it as ``stall`` (the level is then degraded,
    or failed when nothing completed); bytes without a token do not count."""
    repeats: int = 1
    """Runs of the whole ladder; headlines are means, with std and a 95 % CI (repeat_stats)."""
    percentiles: tuple[float, ...] = (90.0, 95.0, 99.0)
    """Latency percentiles recorded (p90/p95/p99 always; e.g. 50, 99.9 in addition)."""
    slo: dict[str, float] | None = None
    """Goodput objectives in ms: ``ttft_ms``, ``tpot_ms``, ``e2e_ms`` (core/measure/slo.py)."""
    output_details: bool = False
    """Keep per-request lists in the level records (``--output-file``)."""
    api_key: str | None = field(default=None, repr=False)
    """Sent as ``Authorization: Bearer <key>`` (SGLang's ``--api-key``); ``env:VAR`` reads
    it from the environment when the run starts. Never recorded or printed."""
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    """Extra request headers (values may be ``env:VAR``); records keep the names only."""
    extra_body: dict[str, Any] | None = None
    """Merged into every request body (bench_serving's ``--extra-request-body``)."""
    window: str = "completed"
    """How each level is measured: ``completed`` (bench_serving's metrics over finished
    requests) or ``steady`` (a steady-state window of streamed tokens; docs/benchmark.md)."""
    window_s: float | None = None
    """Steady window length in seconds (2 s when neither bound is given)."""
    window_tokens: int | None = None
    """Steady window: end once this many output tokens streamed (whichever bound first)."""
    lead: int | None = None
    """Run this ladder level first, then the others in order (incumbent pruning: the level
    that decides the objective, core.search.prune); results keep the ladder's order."""
    spec_counters: SpecCounters | None = None
    """The engine's speculative-decoding counters, snapshotted around each level (not a plan
    key: the trial's engine supplies them, ``Endpoints.spec_counters``)."""
    chat_template: str | None = None
    """The chat template family of the trial's model (``core.config.chat_templates``): what
    the ``coding`` and ``prose`` workloads wrap each prompt in on the text APIs (not a plan
    key: the trial's ``[server] model_path`` decides, or ``[bench] model``)."""

    def requests_at(self, concurrency: int) -> int | None:
        """Measured requests the level at ``concurrency`` sends: ``requests_per_level``,
        :func:`default_requests_per_level` when unset, or None when levels run for
        ``duration_s`` instead (the count is then not known up front)."""
        if self.requests_per_level is not None:
            return self.requests_per_level
        if self.duration_s is not None or self.window == "steady":
            return None
        return default_requests_per_level(concurrency)


@dataclass(frozen=True, slots=True)
class BenchProgress:
    """A progress tick: one per finished request, plus periodic rate updates."""

    level_index: int
    concurrency: int
    completed: int
    failed: int
    total: int
    running: int
    output_tokens: int
    current_tok_s: float
    """Output tokens/s over the last second, across all requests."""
    elapsed_s: float
    warmup: bool = False
    level_count: int = 0
    """Levels in the ladder (so a consumer can show "level 2 of 5")."""
    planned_duration_s: float | None = None
    """Duration mode: the level's planned length (``total`` is 0 then)."""
    level_result: LevelMetrics | None = None
    """Set on the one tick that reports a finished level: its computed metrics, delivered
    as soon as the level ends (the ladder's result comes only when every level ran).
    Runners never coalesce such a tick away."""
    repeat: int = 0
    """Which run of the ladder this is (0-based; ``[bench] repeats``)."""
    repeat_count: int = 1


@runtime_checkable
class BenchmarkRunner(Protocol):
    """Runs a ladder against a base URL; lives outside the UI's event loop."""

    async def run(
        self,
        spec: BenchSpec,
        base_url: str,
        *,
        on_progress: Callable[[BenchProgress], None] | None = None,
    ) -> BenchResult:
        """Run every level; returns the trial's benchmark result (see core.measure.metrics).

        ``stop()`` ends the load promptly and makes ``run`` return what was measured so
        far, marked partial. Cancelling the awaiting task also stops the load; the partial
        result is then kept in ``last_result`` (where the runner can produce one).
        """
        ...

    def stop(self) -> None:
        """Ask a running ladder to stop; finished requests are kept, the result is partial."""
        ...
