"""vLLM's log grammar (V0 and V1): load progress, KV capacity, statistics, speculative metrics.

Why it exists: what the parser knows about vLLM's output, as one
:class:`~specconsole.core.logs.grammar.LogGrammar` (:data:`GRAMMAR`, which the engine's
``log_grammar`` hands out). Handlers get the message with vLLM's ``INFO 07-20 10:27:57
[file.py:123]`` header (and any process prefix) already stripped and are routed by the
message's first word (:data:`HEADS`); its fatal texts and remedies are :mod:`.fatal`'s.
"""

from __future__ import annotations

import re

from specconsole.core.logs.events import (
    Capacity,
    CudaGraphBegin,
    CudaGraphEnd,
    DecodeStats,
    KVCacheAllocated,
    LoadStage,
    LogEvent,
    Ready,
    Role,
    SpecStats,
    WeightsBegin,
    WeightsEnd,
)
from specconsole.core.logs.fields import int_after, num_after
from specconsole.core.logs.grammar import Header, HeaderReader, LogGrammar
from specconsole.core.logs.state import Handler, ParseState

from .fatal import (
    CAUSE_WORDS,
    CONSEQUENCE_TEXTS,
    FIXES,
    HINTS,
    PRECEDENCE,
    REQUEST_ERRORS,
    SIGNATURES,
)

__all__ = ["GRAMMAR", "HEADS", "UVICORN_READY"]

NAME = "vllm"
"""The engine's registry name."""


_KV_SIZE = "KV cache size:"
_CONCURRENCY = "Maximum concurrency for"


def on_kv(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """``GPU KV cache size: 1,234,567 tokens`` (0.11, its own line) or, from the 0.2x
    releases, one line with the concurrency too: ``GPU KV cache size: 1,234,567 tokens,
    Maximum concurrency for 131,072 tokens per request: 9.42x`` (``GPU + host`` with a host
    tier; ``CPU KV cache size: 46,592 tokens, ...`` on the CPU backend, 0.32). Numbers carry
    thousands separators."""
    i = body.find(_KV_SIZE, 0, 24)
    if i < 0:
        return []
    tokens = int_after(body, _KV_SIZE)
    s.kv_tokens = tokens
    out: list[LogEvent] = [KVCacheAllocated(timestamp=ts, rank=rank, num_tokens=tokens)]
    if _CONCURRENCY in body:
        out.extend(on_concurrency(s, body[body.find(_CONCURRENCY) :], ts, rank))
    return out


def on_concurrency(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """``Maximum concurrency for 131,072 tokens per request: 9.42x``: the capacity, with the
    KV cache's tokens from the size line before it. vLLM captures its CUDA graphs after this
    line, so the load stays in its KV-cache stage."""
    if not body.startswith(_CONCURRENCY):
        return []
    return [
        Capacity(
            timestamp=ts,
            rank=rank,
            max_total_num_tokens=s.kv_tokens,
            context_len=int_after(body, _CONCURRENCY),
            max_concurrency=num_after(body, "per request:"),
            then=LoadStage.KV_CACHE,
        )
    ]


def on_spec_v0(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """V0: ``Speculative metrics: Draft acceptance rate: 0.651, System efficiency: 0.564,
    Number of speculative tokens: 4, Number of accepted tokens: 1234, Number of draft tokens:
    1896, Number of emitted tokens: 1500.`` (the rate is a fraction here, not a percentage)."""
    if not body.startswith("Speculative metrics"):
        return []
    accepted = int_after(body, "Number of accepted tokens:")
    drafted = int_after(body, "Number of draft tokens:")
    emitted = int_after(body, "Number of emitted tokens:")
    k = int_after(body, "Number of speculative tokens:")
    accept_len: float | None = None
    efficiency = num_after(body, "System efficiency:")
    if efficiency is not None and k is not None:
        accept_len = round(efficiency * (k + 1), 4)  # emitted per step / (k + 1) possible
    del emitted
    return [
        SpecStats(
            timestamp=ts,
            rank=rank,
            accept_len=accept_len,
            accept_rate=num_after(body, "Draft acceptance rate:"),
            accepted_tokens=accepted,
            drafted_tokens=drafted,
        )
    ]


def on_spec(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    if not body.startswith("SpecDecoding metrics"):
        return []
    # "Avg Draft acceptance rate: 56.4%" (newer) / "Draft acceptance rate: 56.4%" (older)
    rate = num_after(body, "Draft acceptance rate:")
    if rate is not None:
        rate = rate / 100.0
    per_pos: tuple[float, ...] = ()
    i = body.find("Per-position acceptance rate:")
    if i >= 0:
        tail = body[i + 29 :]
        end = tail.find(", Avg")
        if end >= 0:
            tail = tail[:end]
        vals: list[float] = []
        for piece in tail.split(","):
            try:
                vals.append(float(piece.strip()))
            except ValueError:
                break
        per_pos = tuple(vals)
    return [
        SpecStats(
            timestamp=ts,
            rank=rank,
            accept_len=num_after(body, "Mean acceptance length:"),
            accept_rate=rate,
            accepted_tokens=int_after(body, "Accepted:"),
            drafted_tokens=int_after(body, "Drafted:"),
            per_position=per_pos,
        )
    ]


def on_engine(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """Periodic statistics: V1 ``Engine 000: Avg prompt throughput: ..., Running: N reqs,
    Waiting: N reqs, GPU KV cache usage: X%`` and V0 ``Avg prompt throughput: ..., Running: N
    reqs, Swapped: N reqs, Pending: N reqs, GPU KV cache usage: X%`` (``CPU KV cache usage``
    on the CPU backend)."""
    if "Avg generation throughput" not in body:
        return []
    usage = num_after(body, "KV cache usage:")
    waiting = int_after(body, "Waiting:")
    if waiting is None:
        waiting = int_after(body, "Pending:")
    return [
        DecodeStats(
            timestamp=ts,
            rank=rank,
            running_req=int_after(body, "Running:"),
            queue_req=waiting,
            token_usage=usage / 100.0 if usage is not None else None,
            gen_throughput=num_after(body, "Avg generation throughput:"),
        )
    ]


UVICORN_READY = "Application startup complete"
"""uvicorn's ready line: vLLM's readiness (SGLang prints it before its warm-up, so it counts
only when the log is vLLM's). Every other ``INFO:`` line yields nothing."""


def on_uvicorn(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    if UVICORN_READY in body and s.speaks(NAME):
        return [Ready(timestamp=ts, rank=rank)]
    return []


def on_starting(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    if body.startswith("Starting to load model"):
        key = rank or ""
        n = s.weights_begin.get(key, 0)
        s.weights_begin[key] = n + 1
        s.weights_started = True
        return [WeightsBegin(timestamp=ts, rank=rank, role=Role.TARGET if n == 0 else Role.DRAFT)]
    return []


def on_model_loading(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """``Model loading took 15.23 GiB and 5.31 seconds`` (0.11; target and draft summed) or
    ``Model loading took 15.23 GiB memory and 5.31 seconds`` (0.34); ``Loading drafter
    model...``: the draft's weights begin (the CPU model runner, 0.32, which logs no
    ``Model loading took``; a death from here on is the draft's)."""
    if body.startswith("Loading drafter model"):
        key = rank or ""
        s.weights_begin[key] = s.weights_begin.get(key, 0) + 1
        s.weights_started = True
        return [WeightsBegin(timestamp=ts, rank=rank, role=Role.DRAFT)]
    if body.startswith("Model loading took"):
        key = rank or ""
        n = s.weights_end.get(key, 0)
        s.weights_end[key] = n + 1
        s.weights_started = True
        return [
            WeightsEnd(
                timestamp=ts,
                rank=rank,
                role=Role.TARGET,
                mem_usage_gb=num_after(body, "took"),
                elapsed_s=num_after(body, "memory and" if "GiB memory and" in body else "GiB and"),
            )
        ]
    return []


def on_graph(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    if body.startswith("Graph capturing finished"):
        return [
            CudaGraphEnd(
                timestamp=ts,
                rank=rank,
                elapsed_s=num_after(body, "finished in"),
                mem_usage_gb=num_after(body, "took"),
            )
        ]
    if body.startswith("Capturing CUDA graph"):
        return [CudaGraphBegin(timestamp=ts, rank=rank)]
    return []


HEADS: dict[str, Handler] = {
    "GPU": on_kv,
    "CPU": on_kv,
    "Maximum": on_concurrency,
    "SpecDecoding": on_spec,
    "Engine": on_engine,
    "Avg": on_engine,
    "Speculative": on_spec_v0,
    "INFO:": on_uvicorn,
    "Application": on_uvicorn,
    "Starting": on_starting,
    "Model": on_model_loading,
    "Loading": on_model_loading,
    "Graph": on_graph,
    "Capturing": on_graph,
}
"""First word of a vLLM message -> its handler."""

# ---------------------------------------------------------------------------------------------
# The header: "INFO 07-20 10:27:57[.123] [file.py:123] message" (0.4: "... file.py:123] ")
# ---------------------------------------------------------------------------------------------

_HEADER_RE = re.compile(
    r"(INFO|WARNING|ERROR|DEBUG|CRITICAL) (\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)? "
    r"(?:\[([^\]]*)\]|([\w.]+\.py:\d+)\]) "
)
_LEVEL_PREFIXES = frozenset(("INFO ", "WARNI", "ERROR", "DEBUG", "CRITI"))


def _read_header(msg: str) -> Header | None:
    """vLLM's level, time and ``[file.py:N]``: the file key is what a record's continuation
    lines repeat (a traceback logged line by line keeps it)."""
    if msg[:5] not in _LEVEL_PREFIXES:
        return None
    m = _HEADER_RE.match(msg)
    if m is None:
        return None
    return msg[m.end() :], m.group(2), None, m.group(3) or m.group(4), True


HEADER_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("vLLM", "INFO 07-20 10:27:57 [gpu_model_runner.py:1932] MESSAGE"),
    ("vLLM with ms", "WARNING 07-20 10:27:57.123 [config.py:412] MESSAGE"),
    ("vLLM 0.4", "INFO 07-20 10:27:57 llm_engine.py:161] MESSAGE"),
    ("vLLM V1 API server", "(APIServer pid=48211) MESSAGE"),
    ("vLLM V1 engine core", "(EngineCore_DP0 pid=48305) MESSAGE"),
)

GRAMMAR = LogGrammar(
    name=NAME,
    capacity_words="GPU KV cache size",
    heads=HEADS,
    headers=(HeaderReader("IWEDC", _read_header),),
    header_examples=HEADER_EXAMPLES,
    ready_lines=(UVICORN_READY,),
    signatures=SIGNATURES,
    precedence=PRECEDENCE,
    cause_words=CAUSE_WORDS,
    fixes=FIXES,
    request_errors=REQUEST_ERRORS,
    consequence_texts=CONSEQUENCE_TEXTS,
    hints=HINTS,
    names_processes=True,
)
"""vLLM's log grammar (V0 and V1)."""
