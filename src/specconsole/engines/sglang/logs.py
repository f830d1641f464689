"""SGLang's log grammar: load progress, capacity, readiness, warnings, deaths.

Why it exists: everything the parser knows about what SGLang prints, release by release, as
one :class:`~specconsole.core.logs.grammar.LogGrammar` (:data:`GRAMMAR`, which the engine's
``log_grammar`` hands out). Each handler gets a message whose prefixes (journal, container,
rank, time) are already stripped and is routed by the message's first word (:data:`HEADS`).
The parts with a concern of their own have their own module: the header and its in-place
fast path (:mod:`.logheader`), the statistics lines read by key (:mod:`.logstats`, with
:mod:`.logbuild`'s positional events), the fatal causes and remedies (:mod:`.fatal`). Tuning
warnings are a table of (prefix, kind, extractor) rows (:data:`WARNINGS`).
"""

from __future__ import annotations

from collections.abc import Callable

from specconsole.core.logs.events import (
    Capacity,
    CudaGraphBegin,
    CudaGraphEnd,
    FatalCause,
    KVCacheAllocated,
    LogEvent,
    MemoryPoolEnd,
    ProcessStarting,
    Ready,
    Role,
    TuningWarning,
    WarningKind,
    WeightsBegin,
    WeightsEnd,
)
from specconsole.core.logs.fields import int_after, int_list_after, num_after, word_after
from specconsole.core.logs.grammar import FastPath, LogGrammar
from specconsole.core.logs.state import Handler, ParseState

from . import logheader, logstats
from .fatal import (
    CONSEQUENCE_TEXTS,
    FIXES,
    HINTS,
    PRECEDENCE,
    RECOVERABLE,
    SIGNATURES,
    TRACEBACK_OPENERS,
    SGLangCause,
    argument_error,
)

__all__ = ["GRAMMAR", "HEADS", "WARNINGS"]

NAME = "sglang"
"""The engine's registry name."""


def on_load_weight(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    key = rank or ""
    if body.startswith("Load weight begin"):
        n = s.weights_begin.get(key, 0)
        s.weights_begin[key] = n + 1
        s.weights_started = True
        return [
            WeightsBegin(
                timestamp=ts,
                rank=rank,
                role=Role.TARGET if n == 0 else Role.DRAFT,
                avail_mem_gb=num_after(body, "avail mem="),
            )
        ]
    if body.startswith("Load weight end"):
        n = s.weights_end.get(key, 0)
        s.weights_end[key] = n + 1
        s.weights_started = True
        return [
            WeightsEnd(
                timestamp=ts,
                rank=rank,
                role=Role.TARGET if n == 0 else Role.DRAFT,
                elapsed_s=num_after(body, "elapsed="),
                model_type=word_after(body, "type="),
                dtype=word_after(body, "dtype="),
                avail_mem_gb=num_after(body, "avail mem="),
                mem_usage_gb=num_after(body, "mem usage="),
            )
        ]
    return []


def on_post_capture(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """0.5.23+: ``Post-capture KV sizing: KV cache allocated. dtype: ..., #tokens: N, KV size:
    ... GB`` — the pool's real size after the CUDA graphs (the earlier ``KV Cache VA upper
    bound.`` line is only a reservation, so it is not an allocation event)."""
    if not body.startswith("Post-capture KV sizing: ") or "KV cache allocated" not in body:
        return []
    role = Role.DRAFT if "draft KV cache allocated" in body else Role.TARGET
    return [
        KVCacheAllocated(
            timestamp=ts,
            rank=rank,
            role=role,
            num_tokens=int_after(body, "#tokens: "),
            dtype=word_after(body, "dtype: "),
            kv_size_gb=num_after(body, "KV size: "),
        )
    ]


def on_kv(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    if not body.startswith("KV Cache is allocated"):
        return []
    key = rank or ""
    n = s.kv.get(key, 0)
    s.kv[key] = n + 1
    k = num_after(body, ", K size: ")
    v = num_after(body, ", V size: ")
    kv = num_after(body, "KV size: ")
    if kv is None and k is not None and v is not None:
        kv = round(k + v, 4)
    return [
        KVCacheAllocated(
            timestamp=ts,
            rank=rank,
            role=Role.TARGET if n == 0 else Role.DRAFT,
            num_tokens=int_after(body, "#tokens: "),
            dtype=word_after(body, "dtype: "),
            k_size_gb=k,
            v_size_gb=v,
            kv_size_gb=kv,
        )
    ]


def on_memory_pool(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    if body.startswith("Memory pool end"):
        return [MemoryPoolEnd(timestamp=ts, rank=rank, avail_mem_gb=num_after(body, "avail mem="))]
    return []


def on_capture(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    lower = body.lower()
    g = lower.find("cuda graph")
    if g < 0:
        return []
    after = lower[g + 10 :].lstrip()
    if after.startswith("failed"):
        # "Capture cuda graph failed: ..." outside a traceback: the graph OOM recipe.
        return [s.fatal_now(SGLangCause.CUDA_GRAPH_CAPTURE_FAILED, body, ts, rank, FIXES)]
    stage = body[8:g].strip()
    role = Role.DRAFT if "draft" in stage.lower() else Role.TARGET
    if after.startswith("begin"):
        return [
            CudaGraphBegin(
                timestamp=ts,
                rank=rank,
                stage=stage,
                role=role,
                avail_mem_gb=num_after(body, "avail mem="),
                backend=word_after(body, "backend="),
                num_tokens_per_req=int_after(body, "num_tokens_per_req="),
                batch_sizes=int_list_after(body, "bs=["),
            )
        ]
    if after.startswith("end"):
        elapsed = num_after(body, "elapsed=")
        if elapsed is None:
            elapsed = num_after(body, "Time elapsed:")
        return [
            CudaGraphEnd(
                timestamp=ts,
                rank=rank,
                stage=stage,
                role=role,
                elapsed_s=elapsed,
                mem_usage_gb=num_after(body, "mem usage="),
                avail_mem_gb=num_after(body, "avail mem="),
            )
        ]
    return []


def on_capacity(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    values: dict[str, str] = {}
    for piece in body.split(", "):
        k, sep, v = piece.partition("=")
        if sep:
            values[k.strip()] = v.strip()

    def as_int(name: str) -> int | None:
        raw = values.get(name)
        if raw is None:
            return None
        try:
            return int(raw)
        except ValueError:
            return None

    mem_raw = values.get("available_gpu_mem", values.get("available_cpu_mem"))
    mem: float | None = None
    if mem_raw is not None:
        try:
            mem = float(mem_raw.split()[0])
        except (ValueError, IndexError):
            mem = None
    return [
        Capacity(
            timestamp=ts,
            rank=rank,
            max_total_num_tokens=as_int("max_total_num_tokens"),
            chunked_prefill_size=as_int("chunked_prefill_size"),
            max_prefill_tokens=as_int("max_prefill_tokens"),
            max_running_requests=as_int("max_running_requests"),
            context_len=as_int("context_len"),
            available_gpu_mem_gb=mem,
        )
    ]


READY_LINE = "The server is fired up and ready to roll"
"""SGLang's ready line (after its warm-up request; uvicorn's ``Application startup complete.``
comes before the warm-up, so it is not SGLang's readiness)."""


def on_the(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    if body.startswith(READY_LINE):
        return [Ready(timestamp=ts, rank=rank)]
    return on_warning(s, body, ts, rank)


def on_init(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    # Logged once per model runner: target and draft each print it, so it does not reset
    # the target/draft order (``server_args=`` and systemd's ``Started`` do).
    if body.startswith("Init torch distributed begin"):
        return [ProcessStarting(timestamp=ts, rank=rank, text=body)]
    return []


def on_server_args(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    # The first line a new SGLang process logs: a new start begins.
    if body.startswith("server_args="):
        s.reset_start()
    return []


def on_not_enough(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    if s.signature(body) == FatalCause.KV_CACHE_NO_MEMORY:
        return [s.fatal_now(FatalCause.KV_CACHE_NO_MEMORY, body, ts, rank, FIXES)]
    return []


def on_rank_died(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    if "scheduler is dead" in body:
        # "Rank 0 scheduler is dead. ..." is followed by "Exit code: N", which says how.
        s.dead_line = body
        return []
    if "died during initialization" not in body or s.is_recoverable(body):
        return []
    if "exit code: -9" in body.lower():
        # SIGKILL leaves no traceback: this line is the primary evidence.
        return [s.fatal_now(FatalCause.SCHEDULER_KILLED, body, ts, rank, FIXES)]
    return s.consequence(body, ts, rank)


def on_exit_code(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """``Exit code: -9`` after ``Rank N scheduler is dead`` (SGLang's launcher watchdog)."""
    if not body.startswith("Exit code:"):
        return []
    dead, s.dead_line = s.dead_line, None
    if s.is_recoverable(body):
        return []  # -15: an orderly stop
    text = f"{dead} {body}" if dead else body
    if "-9" in body:
        return [s.fatal_now(FatalCause.SCHEDULER_KILLED, text, ts, rank, FIXES)]
    return s.consequence(text, ts, rank) if dead else []


def on_sigquit(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    if body.startswith("Received sigquit"):
        return s.consequence(body, ts, rank)
    return []


def on_init_failed(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    if body.startswith("Initialization failed"):
        return s.consequence(body, ts, rank)
    return []


# ---------------------------------------------------------------------------------------------
# Tuning warnings: (message prefix, kind, extractor of extra fields)
# ---------------------------------------------------------------------------------------------

Extractor = Callable[[str], dict[str, object]]


def _reset_value(body: str) -> dict[str, object]:
    return {"value": int_after(body, "reset to ")}


def _reduced_values(body: str) -> dict[str, object]:
    return {"requested": int_after(body, "requested "), "value": int_after(body, " to ")}


WARNINGS: tuple[tuple[str, WarningKind, Extractor | None], ...] = (
    ("The memory capacity is unbalanced", WarningKind.MEMORY_UNBALANCED, None),
    ("Max running requests is reset to", WarningKind.MAX_RUNNING_REQUESTS_RESET, _reset_value),
    (
        "max_running_requests was reduced",
        WarningKind.MAX_RUNNING_REQUESTS_REDUCED,
        _reduced_values,
    ),
    ("speculative_num_draft_tokens is adjusted", WarningKind.DRAFT_TOKENS_ADJUSTED, None),
    ("Mixed chunked prefill is disabled", WarningKind.MIXED_CHUNK_DISABLED, None),
    ("Overlap scheduler is disabled", WarningKind.OVERLAP_DISABLED, None),
    ("Spec v1 is used", WarningKind.OVERLAP_DISABLED, None),
    ("Health check failed", WarningKind.HEALTH_CHECK_FAILED, None),
)
"""SGLang's messages that say it changed or refused part of the configuration."""


def on_warning(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """A :data:`WARNINGS` row whose prefix starts ``body``, as a :class:`TuningWarning`."""
    for prefix, kind, extract in WARNINGS:
        if body.startswith(prefix):
            extra = extract(body) if extract is not None else {}
            return [TuningWarning(timestamp=ts, rank=rank, warning=kind, text=body, **extra)]  # type: ignore[arg-type]
    return []


def on_uvicorn(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """uvicorn's own lines (``INFO:     127.0.0.1:... "POST /generate HTTP/1.1" 200 OK``, its
    ``Application startup complete.`` before the warm-up): nothing SGLang's state depends on."""
    return []


def _first_word(prefix: str) -> str:
    head = prefix.split(" ", 1)[0]
    return head.split("=", 1)[0]


HEADS: dict[str, Handler] = {
    **{_first_word(prefix): on_warning for prefix, _, _ in WARNINGS},
    "Decode": logstats.on_decode,
    "Prefill": logstats.on_prefill,
    "Load": on_load_weight,
    "KV": on_kv,
    "Post-capture": on_post_capture,
    "Memory": on_memory_pool,
    "Capture": on_capture,
    "max_total_num_tokens": on_capacity,
    "The": on_the,
    "Init": on_init,
    "server_args": on_server_args,
    "Not": on_not_enough,
    "Loaded": on_not_enough,
    "Rank": on_rank_died,
    "Exit": on_exit_code,
    "Received": on_sigquit,
    "Initialization": on_init_failed,
    "INFO:": on_uvicorn,
}
"""First word of an SGLang message -> its handler."""


GRAMMAR = LogGrammar(
    name=NAME,
    capacity_words="max_total_num_tokens",
    heads=HEADS,
    headers=logheader.HEADERS,
    header_examples=logheader.HEADER_EXAMPLES,
    fast=FastPath(
        starts="[",
        read=logheader.read_fast,
        heads={"Decode ": "Decode", "Prefill": "Prefill"},
        drops={"INFO:  ": "INFO:"},
    ),
    quiet_heads=frozenset(("Decode", "Prefill")),
    ready_lines=(READY_LINE,),
    traceback_openers=TRACEBACK_OPENERS,
    signatures=SIGNATURES,
    precedence=PRECEDENCE,
    fixes=FIXES,
    recoverable=RECOVERABLE,
    consequence_texts=CONSEQUENCE_TEXTS,
    fatal_line=argument_error,
    hints=HINTS,
)
"""SGLang's log grammar."""
