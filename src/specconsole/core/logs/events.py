"""Typed events recognised in inference-server logs.

The parser (``specconsole.core.logs``) turns raw journal lines into these values; the
controller, the UI's journal pane, session records and ``specconsole parse-log`` all consume
them. Keeping the vocabulary in its own module lets consumers import the types without the
parsing machinery, and keeps one definition of what a "load phase", a "capacity line" or a
"fatal cause" is.

Every event is a frozen dataclass: it is a fact read from the log, never mutated afterwards.
Field names follow SGLang's own wording (``max_total_num_tokens``, ``accept_len``...) so the
same words appear in the log, the events, the records and the reports. The fold of a load's
events into one summary is :mod:`specconsole.core.logs.load_summary`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any, ClassVar

from specconsole.core.logs.stages import (  # noqa: F401 - re-exported: named from here too
    STAGE_ORDER,
    LoadStage,
)


class Role(StrEnum):
    """Which model a load line is about: SGLang logs weights/KV lines for both, in order."""

    TARGET = "target"
    DRAFT = "draft"


class WarningKind(StrEnum):
    """Server warnings that matter when tuning."""

    MAX_RUNNING_REQUESTS_RESET = "max_running_requests_reset"
    """``Max running requests is reset to 48 for speculative decoding...``"""
    MAX_RUNNING_REQUESTS_REDUCED = "max_running_requests_reduced"
    """``max_running_requests was reduced from the requested A to B ...`` (KV capacity)."""
    DRAFT_TOKENS_ADJUSTED = "draft_tokens_adjusted"
    """``speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 ...``"""
    MIXED_CHUNK_DISABLED = "mixed_chunk_disabled"
    """``Mixed chunked prefill is disabled because of using eagle speculative decoding.``"""
    OVERLAP_DISABLED = "overlap_disabled"
    """The overlap scheduler is off (v0.5.9 without spec v2) or spec v1 is used instead."""
    MEMORY_UNBALANCED = "memory_unbalanced"
    """``The memory capacity is unbalanced. Some GPUs may be occupied by other processes.``"""
    HEALTH_CHECK_FAILED = "health_check_failed"
    """``Health check failed. Server couldn't get a response from detokenizer ...`` (a hang)."""


class FatalCause(StrEnum):
    """The generic reasons a server dies (or cannot start): those any PyTorch-based server
    shows, whatever the engine. An engine's grammar adds its own causes as plain strings (a
    ``StrEnum`` of its own, say): ``FatalError.cause`` carries either, the console shows a
    cause as words (``cuda_graph_capture_failed`` -> "cuda graph capture failed") and records
    keep it as is, so a new cause needs no change here. Which cause wins when an excerpt shows
    several is :data:`specconsole.core.logs.fatal.GENERIC_RANKS` plus each grammar's ranks."""

    KV_CACHE_NO_MEMORY = "kv_cache_no_memory"
    """No memory left for the KV cache after the weights (each engine words it its own way:
    SGLang's ``Not enough memory...``, vLLM's ``No available memory for the cache blocks``)."""
    ILLEGAL_MEMORY_ACCESS = "illegal_memory_access"
    """``CUDA error: an illegal memory access was encountered`` (often an invalid tree)."""
    CUDA_OOM = "cuda_oom"
    """``torch.OutOfMemoryError: CUDA out of memory``."""
    NCCL_ERROR = "nccl_error"
    """NCCL / ProcessGroupNCCL failures and collective timeouts."""
    BAD_ARGUMENT = "bad_argument"
    """A ValueError/AssertionError/argparse error before any weights loaded."""
    SCHEDULER_KILLED = "scheduler_killed"
    """A process was SIGKILLed (exit -9), usually by the OS OOM killer."""
    UNKNOWN_TRACEBACK = "unknown_traceback"
    """A traceback (or a fatal exit) matching none of the known signatures."""


@dataclass(frozen=True, slots=True)
class SuggestedFix:
    """One remedy for a fatal cause, from the grammar that classified it (its engine's own
    advice) or the core's generic remedies.

    ``changes`` are the configuration edits it suggests, as (``ServerConfig`` field, editor
    text) pairs with SGLang's recipe values (not relative to the crashed configuration), so
    ``replace_config(config, **dict(fix.changes))`` applies it; ``text`` always explains it
    (some remedies are not configuration changes).
    """

    text: str
    changes: tuple[tuple[str, str], ...] = ()
    only_when: tuple[tuple[str, tuple[str | None, ...]], ...] = ()
    """Where it can change the outcome at all: each (key, values) pair gives the values
    (editor text; ``None``: unset) the crashed configuration's key must have for the fix to
    be offered — llama.cpp's "leave fit on" only where fit is off and the size fit would
    lower is unset; ``()``: wherever its changes are not already so."""

    @property
    def field(self) -> str | None:
        """The first field the fix changes, if any (what a UI highlights)."""
        return self.changes[0][0] if self.changes else None


def _jsonable(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEvent:
    """Base of every event: where and when in the log it was seen."""

    kind: ClassVar[str] = "event"
    """Stable event name used in JSON output (``parse-log``) and records."""
    phase: ClassVar[LoadStage | None] = None
    """The load sub-phase this event belongs to (``None`` for runtime events)."""

    timestamp: str | None = None
    """The server's own timestamp (``2026-07-20 10:27:57``), else the journal's, if any."""
    rank: str | None = None
    """SGLang's parallel-rank prefix (``TP0``, ``DP0 TP1``), if the line had one."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``{"event": kind, ...fields}`` with enums as their values."""
        out: dict[str, Any] = {"event": self.kind}
        for f in dataclasses.fields(self):
            out[f.name] = _jsonable(getattr(self, f.name))
        return out


# ---------------------------------------------------------------------------------------------
# Load phases
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessStarting(LogEvent):
    """``Init torch distributed begin.`` (SGLang) or the engine's first start-up line."""

    kind: ClassVar[str] = "process_starting"
    phase: ClassVar[LoadStage | None] = LoadStage.STARTING
    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class WeightsBegin(LogEvent):
    """``Load weight begin. avail mem=78.50 GB`` (first per rank: target, second: draft)."""

    kind: ClassVar[str] = "weights_begin"
    phase: ClassVar[LoadStage | None] = LoadStage.WEIGHTS
    role: Role = Role.TARGET
    avail_mem_gb: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WeightsEnd(LogEvent):
    """``Load weight end. elapsed=..., type=..., avail mem=... GB, mem usage=... GB.``"""

    kind: ClassVar[str] = "weights_end"
    phase: ClassVar[LoadStage | None] = LoadStage.WEIGHTS
    role: Role = Role.TARGET
    elapsed_s: float | None = None
    model_type: str | None = None
    dtype: str | None = None
    avail_mem_gb: float | None = None
    mem_usage_gb: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class KVCacheAllocated(LogEvent):
    """``KV Cache is allocated. [dtype: D, ]#tokens: N, K size: X GB, V size: Y GB``.

    vLLM's ``GPU KV cache size: N tokens`` maps here too (role target, sizes unknown).
    """

    kind: ClassVar[str] = "kv_cache_allocated"
    phase: ClassVar[LoadStage | None] = LoadStage.KV_CACHE
    role: Role = Role.TARGET
    num_tokens: int | None = None
    dtype: str | None = None
    k_size_gb: float | None = None
    v_size_gb: float | None = None
    kv_size_gb: float | None = None
    """Combined size (MLA pools log ``KV size``; otherwise K + V)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryPoolEnd(LogEvent):
    """``Memory pool end. avail mem=XX.XX GB``."""

    kind: ClassVar[str] = "memory_pool_end"
    phase: ClassVar[LoadStage | None] = LoadStage.KV_CACHE
    avail_mem_gb: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaGraphBegin(LogEvent):
    """``Capture <stage> CUDA graph begin. ...`` (latest); ``Capture cuda graph begin.`` (v0.5.9)"""

    kind: ClassVar[str] = "cuda_graph_begin"
    phase: ClassVar[LoadStage | None] = LoadStage.CUDA_GRAPH
    stage: str = ""
    """What is captured, as logged: ``target verify``, ``draft decode``, ``draft extend``,
    ``target decode``, ``target prefill``, ``piecewise``, or ``""`` (v0.5.9 target)."""
    role: Role = Role.TARGET
    avail_mem_gb: float | None = None
    backend: str | None = None
    """``backend=`` (latest only)."""
    num_tokens_per_req: int | None = None
    """Tokens per request in each captured batch (topk for draft decode, the verify width
    for target verify and draft extend; latest only)."""
    batch_sizes: tuple[int, ...] = ()
    """The ``bs=[...]`` list of captured batch sizes (latest only)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaGraphEnd(LogEvent):
    """``Capture <stage> CUDA graph end. elapsed=X s, mem usage=Y GB, avail mem=Z GB.``"""

    kind: ClassVar[str] = "cuda_graph_end"
    phase: ClassVar[LoadStage | None] = LoadStage.CUDA_GRAPH
    stage: str = ""
    role: Role = Role.TARGET
    elapsed_s: float | None = None
    mem_usage_gb: float | None = None
    avail_mem_gb: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Capacity(LogEvent):
    """The scheduler's capacity line: ``max_total_num_tokens=..., ..., available_gpu_mem=X GB``.

    vLLM's ``Maximum concurrency for N tokens per request: X.XXx`` fills ``context_len`` and
    ``max_concurrency`` only.
    """

    kind: ClassVar[str] = "capacity"
    phase: ClassVar[LoadStage | None] = LoadStage.WARMUP
    max_total_num_tokens: int | None = None
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int | None = None
    max_running_requests: int | None = None
    context_len: int | None = None
    available_gpu_mem_gb: float | None = None
    max_concurrency: float | None = None
    """vLLM only: how many full-context requests fit in the KV cache."""
    then: LoadStage = LoadStage.WARMUP
    """The load stage once this line is out: SGLang logs its capacity after capturing CUDA
    graphs, before its warm-up; vLLM sizes its KV cache first and captures graphs after
    (``kv_cache``: the stage stays until the capture lines)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Ready(LogEvent):
    """``The server is fired up and ready to roll!`` (vLLM: ``Application startup complete.``)."""

    kind: ClassVar[str] = "ready"
    phase: ClassVar[LoadStage | None] = LoadStage.READY


# ---------------------------------------------------------------------------------------------
# Runtime statistics and warnings
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DecodeStats(LogEvent):
    """One ``Decode batch`` line (SGLang) or ``Engine 000: ...`` stats line (vLLM)."""

    kind: ClassVar[str] = "decode"
    running_req: int | None = None
    num_tokens: int | None = None
    """``#token``: KV tokens in use."""
    token_usage: float | None = None
    """Used KV tokens / capacity (0..1)."""
    accept_len: float | None = None
    """Accepted tokens per verify step per request, including the bonus token."""
    accept_rate: float | None = None
    cuda_graph: bool | None = None
    gen_throughput: float | None = None
    """Whole-server generated tokens per second over the interval."""
    queue_req: int | None = None
    iteration: int | None = None
    """The ``[N]`` forward-iteration counter, when logged."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PrefillStats(LogEvent):
    """One ``Prefill batch`` line."""

    kind: ClassVar[str] = "prefill"
    new_seq: int | None = None
    new_token: int | None = None
    cached_token: int | None = None
    token_usage: float | None = None
    running_req: int | None = None
    queue_req: int | None = None
    pending_token: int | None = None
    cuda_graph: bool | None = None
    input_throughput: float | None = None
    iteration: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SpecStats(LogEvent):
    """vLLM's ``SpecDecoding metrics: Mean acceptance length: X, ...`` line."""

    kind: ClassVar[str] = "spec"
    accept_len: float | None = None
    """vLLM's mean acceptance length (includes the bonus token, like SGLang's accept len)."""
    accept_rate: float | None = None
    """Average draft acceptance rate as a fraction (vLLM prints a percentage)."""
    accepted_tokens: int | None = None
    drafted_tokens: int | None = None
    per_position: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TuningWarning(LogEvent):
    """A server warning that changes what a trial actually ran with."""

    kind: ClassVar[str] = "warning"
    warning: WarningKind = WarningKind.MAX_RUNNING_REQUESTS_RESET
    text: str = ""
    value: int | None = None
    """The value the server settled on (e.g. 48 for the max-running-requests reset)."""
    requested: int | None = None
    """The value that was asked for, when the warning says so."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeculationOff(LogEvent):
    """The server came up, but without the speculative decoding it was asked for (llama.cpp:
    a draft whose vocabulary the target refuses, ``draft-simple`` without a draft): not a
    crash and not an ordinary success — the trial is marked, and never wins a speculative
    sweep."""

    kind: ClassVar[str] = "speculation_off"
    reason: str = ""
    """The server's own words for why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FatalError(LogEvent):
    """The server died or cannot start, with the evidence and what to do about it."""

    kind: ClassVar[str] = "fatal"
    cause: str = FatalCause.UNKNOWN_TRACEBACK
    """A :class:`FatalCause` or a cause the engine's grammar defines (a string)."""
    summary: str = ""
    """The single most telling line (e.g. the exception line)."""
    excerpt: str = ""
    """The log text that proves the cause (a whole traceback, bounded in size)."""
    fixes: tuple[SuggestedFix, ...] = ()
    before_weights: bool = False
    """True when nothing had started loading yet (argument errors happen there)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceExited(LogEvent):
    """systemd's ``<unit>: Main process exited, code=..., status=...`` line."""

    kind: ClassVar[str] = "service_exited"
    code: str = ""
    """``exited``, ``killed`` or ``dumped``."""
    status: str = ""
    """``1/FAILURE``, ``9/KILL``..."""
    expected: bool = False
    """True when the exit follows a stop request (``Stopping ...``)."""
