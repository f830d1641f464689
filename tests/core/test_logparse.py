"""The log parser over real log text: every event, every fatal cause, every journal mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specconsole.core.logs.dialect import classify_fatal, dialect_for, registered_grammars
from specconsole.core.logs.events import (
    Capacity,
    CudaGraphBegin,
    CudaGraphEnd,
    DecodeStats,
    FatalCause,
    FatalError,
    KVCacheAllocated,
    LoadStage,
    LogEvent,
    MemoryPoolEnd,
    PrefillStats,
    ProcessStarting,
    Ready,
    Role,
    ServiceExited,
    SpecStats,
    TuningWarning,
    WarningKind,
    WeightsBegin,
    WeightsEnd,
)
from specconsole.core.logs.fatal import GENERIC_FIXES
from specconsole.core.logs.fields import key_values as _key_values
from specconsole.core.logs.load_summary import summarize
from specconsole.core.logs.parser import LogParser, parse_lines
from specconsole.engines.sglang.fatal import FIXES, SGLangCause
from specconsole.engines.sglang.logstats import DECODE_KEYS as _DECODE_KEYS
from specconsole.engines.sglang.logstats import decode_fast as _decode_fast
from specconsole.engines.vllm.fatal import FIXES as VLLM_FIXES

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"


def parse_file(name: str, engine: str | None = None) -> list[LogEvent]:
    return parse_lines((LOGS / name).read_text().splitlines(), engine)


def only(events: list[LogEvent], cls: type) -> list:
    return [e for e in events if isinstance(e, cls)]


# ---------------------------------------------------------------------------------------------
# Single lines, table-driven
# ---------------------------------------------------------------------------------------------

LINE_CASES: list[tuple[str, LogEvent]] = [
    (
        "[2026-07-20 10:25:09] Init torch distributed begin.",
        ProcessStarting(timestamp="2026-07-20 10:25:09", text="Init torch distributed begin."),
    ),
    (
        "[2026-07-20 10:25:10 TP0] Load weight begin. avail mem=78.54 GB",
        WeightsBegin(timestamp="2026-07-20 10:25:10", rank="TP0", avail_mem_gb=78.54),
    ),
    (
        "[2026-07-20 10:25:14] Load weight end. elapsed=3.87 s, type=LlamaForCausalLM, "
        "avail mem=63.47 GB, mem usage=15.07 GB.",
        WeightsEnd(
            timestamp="2026-07-20 10:25:14",
            elapsed_s=3.87,
            model_type="LlamaForCausalLM",
            avail_mem_gb=63.47,
            mem_usage_gb=15.07,
        ),
    ),
    (
        "[2026-02-11 08:15:42 TP0] Load weight end. elapsed=36.60 s, type=LlamaForCausalLM, "
        "dtype=torch.bfloat16, avail mem=45.08 GB, mem usage=33.04 GB.",
        WeightsEnd(
            timestamp="2026-02-11 08:15:42",
            rank="TP0",
            elapsed_s=36.6,
            model_type="LlamaForCausalLM",
            dtype="torch.bfloat16",
            avail_mem_gb=45.08,
            mem_usage_gb=33.04,
        ),
    ),
    (
        "[2026-07-20 10:25:14] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 423846, "
        "K size: 25.87 GB, V size: 25.87 GB",
        KVCacheAllocated(
            timestamp="2026-07-20 10:25:14",
            num_tokens=423846,
            dtype="torch.bfloat16",
            k_size_gb=25.87,
            v_size_gb=25.87,
            kv_size_gb=51.74,
        ),
    ),
    (
        "[2026-02-11 08:15:42 TP0] KV Cache is allocated. #tokens: 266112, K size: 16.24 GB, "
        "V size: 16.24 GB",
        KVCacheAllocated(
            timestamp="2026-02-11 08:15:42",
            rank="TP0",
            num_tokens=266112,
            k_size_gb=16.24,
            v_size_gb=16.24,
            kv_size_gb=32.48,
        ),
    ),
    (
        "[2026-07-20 10:25:14] KV Cache is allocated. #tokens: 900000, KV size: 30.12 GB",
        KVCacheAllocated(timestamp="2026-07-20 10:25:14", num_tokens=900000, kv_size_gb=30.12),
    ),
    (
        "[2026-07-20 10:25:14] Memory pool end. avail mem=11.40 GB",
        MemoryPoolEnd(timestamp="2026-07-20 10:25:14", avail_mem_gb=11.4),
    ),
    (
        "[2026-07-20 10:25:17] Capture target verify CUDA graph begin. backend=fa3, "
        "num_tokens_per_req=8, bs=[1, 2, 4], avail mem=8.60 GB",
        CudaGraphBegin(
            timestamp="2026-07-20 10:25:17",
            stage="target verify",
            avail_mem_gb=8.6,
            backend="fa3",
            num_tokens_per_req=8,
            batch_sizes=(1, 2, 4),
        ),
    ),
    (
        "[2026-07-20 10:25:31] Capture target verify CUDA graph end. elapsed=13.92 s, "
        "mem usage=1.24 GB, avail mem=7.36 GB.",
        CudaGraphEnd(
            timestamp="2026-07-20 10:25:31",
            stage="target verify",
            elapsed_s=13.92,
            mem_usage_gb=1.24,
            avail_mem_gb=7.36,
        ),
    ),
    (
        "[2026-07-20 10:25:31] Capture draft decode CUDA graph begin. backend=fa3, "
        "num_tokens_per_req=4, bs=[1, 2], avail mem=7.36 GB",
        CudaGraphBegin(
            timestamp="2026-07-20 10:25:31",
            stage="draft decode",
            role=Role.DRAFT,
            avail_mem_gb=7.36,
            backend="fa3",
            num_tokens_per_req=4,
            batch_sizes=(1, 2),
        ),
    ),
    (
        "[2026-02-11 08:15:43 TP0] Capture cuda graph begin. This can take up to several "
        "minutes. avail mem=11.61 GB",
        CudaGraphBegin(timestamp="2026-02-11 08:15:43", rank="TP0", avail_mem_gb=11.61),
    ),
    (
        "[2026-02-11 08:16:02 TP0] Capture cuda graph end. Time elapsed: 18.77 s. "
        "mem usage=1.52 GB. avail mem=10.09 GB.",
        CudaGraphEnd(
            timestamp="2026-02-11 08:16:02",
            rank="TP0",
            elapsed_s=18.77,
            mem_usage_gb=1.52,
            avail_mem_gb=10.09,
        ),
    ),
    (
        "[2026-02-11 08:16:19 TP0] Capture draft extend cuda graph end. Time elapsed: 4.62 s. "
        "mem usage=0.38 GB. avail mem=7.53 GB.",
        CudaGraphEnd(
            timestamp="2026-02-11 08:16:19",
            rank="TP0",
            stage="draft extend",
            role=Role.DRAFT,
            elapsed_s=4.62,
            mem_usage_gb=0.38,
            avail_mem_gb=7.53,
        ),
    ),
    (
        "[2026-07-20 10:25:44] max_total_num_tokens=423846, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=64, context_len=131072, "
        "available_gpu_mem=6.63 GB",
        Capacity(
            timestamp="2026-07-20 10:25:44",
            max_total_num_tokens=423846,
            chunked_prefill_size=8192,
            max_prefill_tokens=16384,
            max_running_requests=64,
            context_len=131072,
            available_gpu_mem_gb=6.63,
        ),
    ),
    (
        "[2026-07-20 10:25:44] max_total_num_tokens=1000, chunked_prefill_size=-1, "
        "max_prefill_tokens=16384, max_running_requests=4, context_len=4096, "
        "available_cpu_mem=100.00 GB",
        Capacity(
            timestamp="2026-07-20 10:25:44",
            max_total_num_tokens=1000,
            chunked_prefill_size=-1,
            max_prefill_tokens=16384,
            max_running_requests=4,
            context_len=4096,
            available_gpu_mem_gb=100.0,
        ),
    ),
    (
        "[2026-07-20 10:25:48] The server is fired up and ready to roll!",
        Ready(timestamp="2026-07-20 10:25:48"),
    ),
    (
        "[2026-07-20 10:27:57 TP0] Decode batch, #running-req: 1, #token: 186, token usage: "
        "0.00, accept len: 1.95, accept rate: 0.49, cuda graph: True, gen throughput "
        "(token/s): 178.86, #queue-req: 0",
        DecodeStats(
            timestamp="2026-07-20 10:27:57",
            rank="TP0",
            running_req=1,
            num_tokens=186,
            token_usage=0.0,
            accept_len=1.95,
            accept_rate=0.49,
            cuda_graph=True,
            gen_throughput=178.86,
            queue_req=0,
        ),
    ),
    (
        "[2025-10-02 14:01:13 TP0] Decode batch. #running-req: 1, #token: 160, token usage: "
        "0.00, accept len: 2.43, cuda graph: True, gen throughput (token/s): 96.12, "
        "#queue-req: 0, ",
        DecodeStats(
            timestamp="2025-10-02 14:01:13",
            rank="TP0",
            running_req=1,
            num_tokens=160,
            token_usage=0.0,
            accept_len=2.43,
            cuda_graph=True,
            gen_throughput=96.12,
            queue_req=0,
        ),
    ),
    (
        "[2025-10-02 14:01:14 TP0] Decode batch [1200], #running-req: 2, #token: 412, token "
        "usage: 0.01, cuda graph: False, gen throughput (token/s): 180.40, #queue-req: 3, ",
        DecodeStats(
            timestamp="2025-10-02 14:01:14",
            rank="TP0",
            iteration=1200,
            running_req=2,
            num_tokens=412,
            token_usage=0.01,
            cuda_graph=False,
            gen_throughput=180.4,
            queue_req=3,
        ),
    ),
    (
        # Keys reordered and an unknown key added: parsed by key, not position.
        "[2026-07-20 10:27:57] Decode batch, #queue-req: 7, #running-req: 9, fwd occupancy: "
        "88%, gen throughput (token/s): 10.00, #token: 5, token usage: 0.50",
        DecodeStats(
            timestamp="2026-07-20 10:27:57",
            running_req=9,
            num_tokens=5,
            token_usage=0.5,
            gen_throughput=10.0,
            queue_req=7,
        ),
    ),
    (
        "[2026-07-20 10:26:02] Prefill batch, #new-seq: 1, #new-token: 812, #cached-token: 0, "
        "token usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: "
        "False, input throughput (token/s): 3402.11",
        PrefillStats(
            timestamp="2026-07-20 10:26:02",
            new_seq=1,
            new_token=812,
            cached_token=0,
            token_usage=0.0,
            running_req=0,
            queue_req=0,
            pending_token=0,
            cuda_graph=False,
            input_throughput=3402.11,
        ),
    ),
    (
        "[2026-02-11 08:17:30 TP0] Prefill batch, #new-seq: 4, #new-token: 2048, "
        "#cached-token: 1024, token usage: 0.01, #running-req: 12, #queue-req: 3, input "
        "throughput (token/s): 8120.55, cuda graph: False",
        PrefillStats(
            timestamp="2026-02-11 08:17:30",
            rank="TP0",
            new_seq=4,
            new_token=2048,
            cached_token=1024,
            token_usage=0.01,
            running_req=12,
            queue_req=3,
            cuda_graph=False,
            input_throughput=8120.55,
        ),
    ),
    (
        "[2026-02-11 08:14:55] Max running requests is reset to 48 for speculative decoding. "
        "You can override this by explicitly setting --max-running-requests.",
        TuningWarning(
            timestamp="2026-02-11 08:14:55",
            warning=WarningKind.MAX_RUNNING_REQUESTS_RESET,
            text="Max running requests is reset to 48 for speculative decoding. You can "
            "override this by explicitly setting --max-running-requests.",
            value=48,
        ),
    ),
    (
        "[2026-02-11 08:14:55] speculative_num_draft_tokens is adjusted to "
        "speculative_num_steps + 1 when speculative_eagle_topk == 1",
        TuningWarning(
            timestamp="2026-02-11 08:14:55",
            warning=WarningKind.DRAFT_TOKENS_ADJUSTED,
            text="speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
            "speculative_eagle_topk == 1",
        ),
    ),
    (
        "[2026-02-11 08:16:20 TP0] max_running_requests was reduced from the requested 256 to "
        "120 (per dp worker) due to the available KV cache capacity.",
        TuningWarning(
            timestamp="2026-02-11 08:16:20",
            rank="TP0",
            warning=WarningKind.MAX_RUNNING_REQUESTS_REDUCED,
            text="max_running_requests was reduced from the requested 256 to 120 (per dp "
            "worker) due to the available KV cache capacity.",
            requested=256,
            value=120,
        ),
    ),
    (
        "[2026-02-11 08:14:55] Mixed chunked prefill is disabled because of using eagle "
        "speculative decoding.",
        TuningWarning(
            timestamp="2026-02-11 08:14:55",
            warning=WarningKind.MIXED_CHUNK_DISABLED,
            text="Mixed chunked prefill is disabled because of using eagle speculative decoding.",
        ),
    ),
    (
        "[2026-07-20 10:00:00] Spec v1 is used for eagle/eagle3/standalone speculative decoding "
        "because spec v2 currently only supports topk = 1.",
        TuningWarning(
            timestamp="2026-07-20 10:00:00",
            warning=WarningKind.OVERLAP_DISABLED,
            text="Spec v1 is used for eagle/eagle3/standalone speculative decoding because spec "
            "v2 currently only supports topk = 1.",
        ),
    ),
    (
        "[2026-07-20 10:00:00 TP0] The memory capacity is unbalanced. Some GPUs may be "
        "occupied by other processes.",
        TuningWarning(
            timestamp="2026-07-20 10:00:00",
            rank="TP0",
            warning=WarningKind.MEMORY_UNBALANCED,
            text="The memory capacity is unbalanced. Some GPUs may be occupied by other processes.",
        ),
    ),
]


VLLM_PREFIX = "(EngineCore_DP0 pid=51402) INFO 07-20 10:30:31 [x.py:1] "
VLLM_CASES: list[tuple[str, LogEvent]] = [
    (
        VLLM_PREFIX + "Starting to load model /models/Llama-3.1-8B-Instruct...",
        WeightsBegin(timestamp="07-20 10:30:31"),
    ),
    (
        VLLM_PREFIX + "Model loading took 15.8843 GiB and 5.112074 seconds",
        WeightsEnd(timestamp="07-20 10:30:31", mem_usage_gb=15.8843, elapsed_s=5.112074),
    ),
    (
        VLLM_PREFIX + "GPU KV cache size: 1,234,560 tokens",
        KVCacheAllocated(timestamp="07-20 10:30:31", num_tokens=1234560),
    ),
    (
        VLLM_PREFIX + "Maximum concurrency for 32,768 tokens per request: 37.68x",
        Capacity(
            timestamp="07-20 10:30:31",
            context_len=32768,
            max_concurrency=37.68,
            then=LoadStage.KV_CACHE,  # vLLM captures its CUDA graphs after this line
        ),
    ),
    (
        VLLM_PREFIX + "Model loading took 15.8843 GiB memory and 5.112074 seconds",  # 0.34
        WeightsEnd(timestamp="07-20 10:30:31", mem_usage_gb=15.8843, elapsed_s=5.112074),
    ),
    (
        VLLM_PREFIX + "Graph capturing finished in 9 secs, took 0.61 GiB",
        CudaGraphEnd(timestamp="07-20 10:30:31", elapsed_s=9.0, mem_usage_gb=0.61),
    ),
    (
        VLLM_PREFIX + "Engine 000: Avg prompt throughput: 81.2 tokens/s, Avg generation "
        "throughput: 97.3 tokens/s, Running: 4 reqs, Waiting: 2 reqs, GPU KV cache usage: 50.0%, "
        "Prefix cache hit rate: 0.0%",
        DecodeStats(
            timestamp="07-20 10:30:31",
            running_req=4,
            queue_req=2,
            token_usage=0.5,
            gen_throughput=97.3,
        ),
    ),
    (
        VLLM_PREFIX + "SpecDecoding metrics: Draft acceptance rate: 50.0%, Mean acceptance "
        "length: 2.00, Accepted: 10 tokens, Drafted: 20 tokens, Per-position acceptance rate: "
        "0.600, 0.400",
        SpecStats(
            timestamp="07-20 10:30:31",
            accept_len=2.0,
            accept_rate=0.5,
            accepted_tokens=10,
            drafted_tokens=20,
            per_position=(0.6, 0.4),
        ),
    ),
    ("(APIServer pid=51320) INFO:     Application startup complete.", Ready()),
]


@pytest.mark.parametrize(("line", "expected"), VLLM_CASES, ids=lambda v: getattr(v, "kind", ""))
def test_vllm_single_line_events(line: str, expected: LogEvent) -> None:
    assert LogParser(engine="vllm").feed(line) == [expected]


def test_vllm_kv_size_and_concurrency_make_the_capacity() -> None:
    """The size line (thousands separators) gives the capacity its tokens, whether the
    concurrency follows on its own line (0.11) or on the same one (0.2x+)."""
    ts = "07-20 10:30:31"
    both = Capacity(
        timestamp=ts,
        max_total_num_tokens=1234560,
        context_len=131072,
        max_concurrency=9.42,
        then=LoadStage.KV_CACHE,
    )
    kv = KVCacheAllocated(timestamp=ts, num_tokens=1234560)
    size = VLLM_PREFIX + "GPU KV cache size: 1,234,560 tokens"
    concurrency = "Maximum concurrency for 131,072 tokens per request: 9.42x"
    assert LogParser(engine="vllm").feed(size + ", " + concurrency) == [kv, both]
    two = LogParser(engine="vllm")
    assert two.feed(size) == [kv]
    assert two.feed(VLLM_PREFIX + concurrency) == [both]


@pytest.mark.parametrize(("line", "expected"), LINE_CASES, ids=lambda v: getattr(v, "kind", ""))
def test_single_line_events(line: str, expected: LogEvent) -> None:
    assert LogParser().feed(line) == [expected]


@pytest.mark.parametrize(
    "line",
    [
        "",
        '[2026-07-20 10:25:45] INFO:     127.0.0.1:51234 - "GET /health HTTP/1.1" 200 OK',
        "[2026-07-20 10:25:45] INFO:     Application startup complete.",
        "[2026-07-20 10:25:10] Using model weights format ['*.safetensors']",
        "Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:03<00:00,  1.19it/s]",
        "[2026-02-11 08:15:43 TP0] Capture cuda graph bs [1, 2, 3, 4]",
        "-- Boot 4a1e8f0c9d2b4e6f8a0b1c2d3e4f5a6b --",
        "[2026-07-20 10:25:10] Decode batchless line",
    ],
)
def test_lines_without_events(line: str) -> None:
    assert LogParser(engine="sglang").feed(line) == []


def test_sglang_uvicorn_startup_is_not_ready() -> None:
    # SGLang prints uvicorn's "Application startup complete." *before* warm-up.
    events = parse_file("sglang_latest_eagle3_startup.log")
    ready = only(events, Ready)
    assert len(ready) == 1
    assert ready[0].timestamp == "2026-07-20 10:25:48"


# ---------------------------------------------------------------------------------------------
# Whole start-up sequences
# ---------------------------------------------------------------------------------------------


def test_latest_startup_sequence() -> None:
    events = parse_file("sglang_latest_eagle3_startup.log")
    weights = only(events, WeightsEnd)
    assert [(w.role, w.model_type) for w in weights] == [
        (Role.TARGET, "LlamaForCausalLM"),
        (Role.DRAFT, "LlamaForCausalLMEagle3"),
    ]
    assert [k.role for k in only(events, KVCacheAllocated)] == [Role.TARGET, Role.DRAFT]
    ends = only(events, CudaGraphEnd)
    assert [(g.stage, g.role) for g in ends] == [
        ("target verify", Role.TARGET),
        ("draft decode", Role.DRAFT),
        ("draft extend", Role.DRAFT),
    ]
    summary = summarize(events)
    assert summary.phases == tuple(s for s in LoadStage if s is not LoadStage.QUEUED)
    assert summary.ready and summary.fatal is None
    assert summary.capacity is not None and summary.capacity.max_total_num_tokens == 423846
    assert summary.kv_tokens == 423846
    assert summary.weights_loaded == 2
    assert summary.cuda_graphs_captured == 3
    assert summary.last_decode is not None and summary.last_decode.gen_throughput == 238.46
    assert [w.warning for w in summary.warnings] == [WarningKind.MIXED_CHUNK_DISABLED]


def test_v059_tp2_startup_sequence_roles_per_rank() -> None:
    events = parse_file("sglang_v059_tp2_startup.log")
    by_rank: dict[str | None, list[Role]] = {}
    for w in only(events, WeightsBegin):
        by_rank.setdefault(w.rank, []).append(w.role)
    assert by_rank == {"TP0": [Role.TARGET, Role.DRAFT], "TP1": [Role.TARGET, Role.DRAFT]}
    summary = summarize(events)
    assert summary.ready
    assert summary.weights_loaded == 2  # counted on the first rank only
    assert summary.cuda_graphs_captured == 3
    assert summary.capacity is not None and summary.capacity.max_running_requests == 48
    kinds = {w.warning for w in summary.warnings}
    assert {
        WarningKind.MAX_RUNNING_REQUESTS_RESET,
        WarningKind.DRAFT_TOKENS_ADJUSTED,
        WarningKind.MIXED_CHUNK_DISABLED,
        WarningKind.OVERLAP_DISABLED,
    } <= kinds
    stages = [(g.stage, g.role) for g in only(events, CudaGraphBegin) if g.rank == "TP0"]
    assert stages == [("", Role.TARGET), ("draft", Role.DRAFT), ("draft extend", Role.DRAFT)]


def test_old_and_hybrid_decode_formats() -> None:
    events = parse_file("sglang_v053_decode_old.log")
    decodes = only(events, DecodeStats)
    assert [d.iteration for d in decodes] == [None, 1200, 1240]
    hybrid = decodes[-1]
    assert hybrid.rank == "DP0 TP1"
    assert hybrid.timestamp == "2025-10-02 14:01:15.347"
    assert (hybrid.num_tokens, hybrid.token_usage, hybrid.accept_rate) == (2100, 0.03, 0.4)
    assert hybrid.cuda_graph is False
    prefill = only(events, PrefillStats)[0]
    assert (prefill.new_token, prefill.queue_req) == (128, 0)


# ---------------------------------------------------------------------------------------------
# Fatal causes
# ---------------------------------------------------------------------------------------------

FATAL_CASES: list[tuple[str, str, str]] = [
    ("fatal_kv_not_enough_memory.log", FatalCause.KV_CACHE_NO_MEMORY, "Not enough memory"),
    ("fatal_cuda_oom.log", FatalCause.CUDA_OOM, "torch.OutOfMemoryError: CUDA out of memory"),
    (
        "fatal_cuda_graph_capture.log",
        SGLangCause.CUDA_GRAPH_CAPTURE_FAILED,
        "Capture cuda graph failed",
    ),
    ("fatal_nccl.log", FatalCause.NCCL_ERROR, "NCCL error"),
    ("fatal_illegal_memory_access.log", FatalCause.ILLEGAL_MEMORY_ACCESS, "illegal memory access"),
    ("fatal_scheduler_exception.log", SGLangCause.SCHEDULER_EXCEPTION, "KeyError: 'rid-7f3a'"),
    ("fatal_bad_argument_value_error.log", FatalCause.BAD_ARGUMENT, "trtllm_mha backend only"),
    ("fatal_bad_argument_assert.log", FatalCause.BAD_ARGUMENT, "AssertionError"),
    ("fatal_bad_argument_argparse.log", FatalCause.BAD_ARGUMENT, "invalid int value"),
    ("fatal_scheduler_killed.log", FatalCause.SCHEDULER_KILLED, "exit code: -9"),
    ("fatal_unknown_traceback.log", FatalCause.UNKNOWN_TRACEBACK, "FileNotFoundError"),
    ("fatal_warmup_failed.log", SGLangCause.WARMUP_FAILED, "AssertionError: res="),
]


@pytest.mark.parametrize(("name", "cause", "proof"), FATAL_CASES, ids=[c[0] for c in FATAL_CASES])
def test_fatal_causes(name: str, cause: str, proof: str) -> None:
    events = parse_file(name)
    fatals = only(events, FatalError)
    assert len(fatals) == 1, fatals  # one event per traceback; "Received sigquit" is a consequence
    fatal = fatals[0]
    assert fatal.cause is cause
    assert proof in fatal.summary
    assert proof in fatal.excerpt
    assert fatal.fixes == FIXES[cause] and fatal.fixes
    assert summarize(events).fatal == fatal


def test_traceback_group_is_one_event_with_whole_excerpt() -> None:
    events = parse_file("fatal_cuda_graph_capture.log")
    fatal = only(events, FatalError)[0]
    assert fatal.excerpt.startswith("Scheduler hit an exception: Traceback")
    assert "During handling of the above exception" in fatal.excerpt
    assert "Possible solutions:" in fatal.excerpt
    assert fatal.timestamp == "2026-07-20 13:00:09"
    fields = {f.field for f in fatal.fixes}
    assert {"mem_fraction_static", "cuda_graph_max_bs"} <= fields


def test_fatal_emitted_on_exception_line_end_when_next_record_arrives() -> None:
    parser = LogParser()
    lines = (LOGS / "fatal_cuda_oom.log").read_text().splitlines()
    sigquit = next(i for i, line in enumerate(lines) if "Received sigquit" in line)
    before = parser.feed_lines(lines[:sigquit])
    assert not only(before, FatalError)  # the traceback may still continue
    assert parser.in_traceback
    settled = parser.settle()
    assert [type(e) for e in settled] == [FatalError]
    assert not parser.in_traceback
    assert parser.feed(lines[sigquit]) == []  # a consequence of the reported crash


def test_bad_argument_only_before_weights() -> None:
    text = [
        "[2026-07-20 10:00:00] Load weight begin. avail mem=78.54 GB",
        "Traceback (most recent call last):",
        '  File "/opt/x.py", line 1, in f',
        "ValueError: something odd",
    ]
    fatal = only(parse_lines(text), FatalError)[0]
    assert fatal.cause is FatalCause.UNKNOWN_TRACEBACK
    assert fatal.before_weights is False


def test_asgi_exception_is_not_fatal() -> None:
    text = [
        "[2026-07-20 10:00:00] ERROR:    Exception in ASGI application",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3/dist-packages/uvicorn/protocols/http/httptools_impl.py", '
        "line 409, in run_asgi",
        "ValueError: bad request body",
        "[2026-07-20 10:00:01] Decode batch, #running-req: 1, #token: 5",
    ]
    events = parse_lines(text)
    assert not only(events, FatalError)
    assert len(only(events, DecodeStats)) == 1


def test_systemd_exit_lines() -> None:
    parser = LogParser()
    out = parser.feed(
        "Jul 20 10:00:00 gpu-box systemd[1]: sglang.service: Main process exited, "
        "code=killed, status=9/KILL"
    )
    assert isinstance(out[0], ServiceExited) and out[0].status == "9/KILL"
    assert isinstance(out[1], FatalError) and out[1].cause is FatalCause.SCHEDULER_KILLED
    stopping = LogParser()
    stopping.feed("Stopping sglang.service - SGLang server...")
    out = stopping.feed("sglang.service: Main process exited, code=killed, status=15/TERM")
    assert out == [ServiceExited(code="killed", status="15/TERM", expected=True)]


def test_oom_killer_unit_message() -> None:
    out = LogParser().feed(
        "sglang.service: A process of this unit has been killed by the OOM killer."
    )
    assert len(out) == 1 and isinstance(out[0], FatalError)
    assert out[0].cause is FatalCause.SCHEDULER_KILLED


def test_classify_fatal_prefers_specific_signature() -> None:
    cause, line = classify_fatal(
        [
            "Scheduler hit an exception: Traceback (most recent call last):",
            "torch.OutOfMemoryError: CUDA out of memory.",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        ]
    )
    assert cause is FatalCause.ILLEGAL_MEMORY_ACCESS
    assert "illegal memory access" in line


def test_every_cause_has_fixes() -> None:
    for cause in [*FatalCause, *SGLangCause]:
        assert FIXES[cause], cause
    for grammar in registered_grammars():  # whichever engine's log it is read as
        rules = dialect_for((grammar,)).rules
        for cause in rules.precedence:
            assert rules.fixes_for(cause), (grammar.name, cause)


# ---------------------------------------------------------------------------------------------
# Journal output modes
# ---------------------------------------------------------------------------------------------

MODES = ("short", "short_iso", "cat", "json")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("stem", "plain"),
    [
        ("latest_startup", "sglang_latest_eagle3_startup.log"),
        ("v059_tp2_startup", "sglang_v059_tp2_startup.log"),
        ("cuda_graph_fatal", "fatal_cuda_graph_capture.log"),
        ("kv_fatal", "fatal_kv_not_enough_memory.log"),
    ],
)
def test_journal_modes_parse_like_plain(stem: str, plain: str, mode: str) -> None:
    expected = [e for e in parse_file(plain) if not isinstance(e, ServiceExited | FatalError)]
    events = parse_file(f"journal_{stem}.{mode}.log")
    got = [e for e in events if not isinstance(e, ServiceExited | FatalError)]
    assert got == expected
    plain_fatals = only(parse_file(plain), FatalError)
    fatals = only(events, FatalError)
    assert [(f.cause, f.summary) for f in fatals] == [(f.cause, f.summary) for f in plain_fatals]
    if plain_fatals:
        exits = only(events, ServiceExited)
        assert len(exits) == 1 and exits[0].status == "1/FAILURE" and not exits[0].expected


def test_journal_json_byte_array_message() -> None:
    rec = {"MESSAGE": list(b"[2026-07-20 10:25:48] The server is fired up and ready to roll!")}
    assert LogParser().feed(json.dumps(rec)) == [Ready(timestamp="2026-07-20 10:25:48")]


def test_journal_json_timestamp_used_without_server_prefix() -> None:
    rec = {
        "__REALTIME_TIMESTAMP": "1784542800000000",
        "MESSAGE": "Load weight begin. avail mem=1 GB",
    }
    (ev,) = LogParser().feed(json.dumps(rec))
    assert isinstance(ev, WeightsBegin) and ev.timestamp == "2026-07-20T10:20:00+00:00"


def test_short_iso_timestamp_when_no_server_prefix() -> None:
    (ev,) = LogParser().feed(
        "2026-07-20T10:25:48+0000 gpu-box python3[48211]: Load weight begin. avail mem=2.00 GB"
    )
    assert ev == WeightsBegin(timestamp="2026-07-20T10:25:48+0000", avail_mem_gb=2.0)


# ---------------------------------------------------------------------------------------------
# vLLM
# ---------------------------------------------------------------------------------------------


def test_vllm_startup_and_stats() -> None:
    events = parse_file("vllm_eagle3_startup.log")
    assert only(events, KVCacheAllocated)[0].num_tokens == 1234560
    cap = only(events, Capacity)[0]
    assert (cap.context_len, cap.max_concurrency) == (32768, 37.68)
    spec = only(events, SpecStats)
    assert spec[-1].accept_len == 2.53
    assert spec[-1].accept_rate == pytest.approx(0.564)
    assert spec[-1].per_position == (0.755, 0.512, 0.301)
    assert (spec[-1].accepted_tokens, spec[-1].drafted_tokens) == (452, 801)
    decode = only(events, DecodeStats)[-1]
    assert (decode.running_req, decode.queue_req, decode.gen_throughput) == (4, 0, 97.3)
    assert decode.token_usage == pytest.approx(0.001)
    summary = summarize(events)
    assert summary.ready and summary.fatal is None
    assert LoadStage.WEIGHTS in summary.phases and LoadStage.CUDA_GRAPH in summary.phases


@pytest.mark.parametrize(
    ("name", "cause"),
    [
        ("vllm_fatal_kv_cache.log", FatalCause.KV_CACHE_NO_MEMORY),
        ("vllm_fatal_oom.log", FatalCause.CUDA_OOM),
    ],
)
def test_vllm_fatal(name: str, cause: FatalCause) -> None:
    fatals = only(parse_file(name), FatalError)
    assert [f.cause for f in fatals] == [cause]  # the front end's re-raise is a consequence


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

_ALL_LINES = [line for path in sorted(LOGS.glob("*.log")) for line in path.read_text().splitlines()]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=200), st.sampled_from(_ALL_LINES)), max_size=30))
def test_parser_never_raises(lines: list[str]) -> None:
    parser = LogParser()
    for line in lines:
        parser.feed(line)
        parser.feed_chunk(line)
    parser.settle()
    parser.flush()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(_ALL_LINES), min_size=1, max_size=40),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_split_reads_parse_like_whole_lines(lines: list[str], cuts: list[int]) -> None:
    text = "\n".join(lines) + "\n"
    whole = LogParser()
    expected = whole.feed_lines(lines) + whole.flush()
    points = sorted({c % (len(text) + 1) for c in cuts})
    chunked = LogParser()
    got: list[LogEvent] = []
    prev = 0
    for p in [*points, len(text)]:
        got.extend(chunked.feed_chunk(text[prev:p]))
        prev = p
    got.extend(chunked.flush())
    assert got == expected


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_json_like_input(text: str) -> None:
    LogParser().feed("{" + text)
    LogParser().feed('{"MESSAGE": ' + json.dumps(text) + "}")


# ---------------------------------------------------------------------------------------------
# Edge cases
# ---------------------------------------------------------------------------------------------


def test_nccl_watchdog_cpp_line_is_fatal() -> None:
    out = LogParser().feed(
        "[rank1]:[E720 14:20:33.123456 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600000 ms"
    )
    assert len(out) == 1 and isinstance(out[0], FatalError)
    assert out[0].cause is FatalCause.NCCL_ERROR


def test_single_line_fatals_outside_tracebacks() -> None:
    (kv,) = LogParser().feed(
        "[2026-07-20 10:00:00] Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.80. Raise --mem-fraction-static above 0.86."
    )
    assert isinstance(kv, FatalError) and kv.cause is FatalCause.KV_CACHE_NO_MEMORY
    (graph,) = LogParser().feed("[2026-07-20 10:00:00] Capture cuda graph failed: boom")
    assert isinstance(graph, FatalError) and graph.cause is SGLangCause.CUDA_GRAPH_CAPTURE_FAILED
    (oom,) = LogParser().feed("sglang.service: Failed with result 'oom-kill'.")
    assert isinstance(oom, FatalError) and oom.cause is FatalCause.SCHEDULER_KILLED


def test_long_traceback_excerpt_is_bounded() -> None:
    lines = ["[2026-07-20 10:00:00] Scheduler hit an exception: Traceback (most recent call last):"]
    for i in range(2000):
        lines += [f'  File "/x/mod{i}.py", line {i}, in f{i}', f"    call_{i}()"]
    lines.append("RuntimeError: CUDA error: an illegal memory access was encountered")
    events = parse_lines(lines)
    (fatal,) = only(events, FatalError)
    assert fatal.cause is FatalCause.ILLEGAL_MEMORY_ACCESS
    excerpt = fatal.excerpt.splitlines()
    assert len(excerpt) <= 61
    assert excerpt[0].startswith("Scheduler hit an exception")
    assert excerpt[-1].startswith("RuntimeError: CUDA error")
    assert any("lines omitted" in line for line in excerpt)


def test_chained_traceback_is_one_event_with_most_specific_cause() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x.py", line 1, in f',
        "KeyError: 'x'",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/y.py", line 2, in g',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        "",
        "[2026-07-20 10:00:01] Received sigquit from a child process. It usually means the child "
        "failed.",
    ]
    (fatal,) = only(parse_lines(lines), FatalError)
    assert fatal.cause is FatalCause.CUDA_OOM
    assert "KeyError" in fatal.excerpt and "direct cause" in fatal.excerpt


def test_settle_keeps_partial_line() -> None:
    parser = LogParser()
    parser.feed_chunk('Traceback (most recent call last):\n  File "x", line 1\nValueError: x\n')
    parser.feed_chunk("[2026-07-20 10:00:00] Decode batch, #running-")
    assert [type(e) for e in parser.settle()] == [FatalError]
    events = parser.feed_chunk("req: 3, #token: 9\n")
    assert only(events, DecodeStats)[0].running_req == 3


def test_consequences_do_not_repeat_but_new_start_reports_again() -> None:
    parser = LogParser()
    first = parser.feed_lines(
        [
            "Traceback (most recent call last):",
            '  File "/x.py", line 1, in f',
            "RuntimeError: boom",
            "[2026-07-20 10:00:00] Rank 0 scheduler died during initialization (exit code: 1).",
            "[2026-07-20 10:00:00] Initialization failed. Please see the error messages above.",
            "sglang.service: Main process exited, code=exited, status=1/FAILURE",
        ]
    )
    assert len(only(first, FatalError)) == 1
    parser.feed("Started sglang.service - SGLang server.")
    second = parser.feed("sglang.service: Main process exited, code=exited, status=1/FAILURE")
    assert [type(e) for e in second] == [ServiceExited, FatalError]


def test_short_monotonic_prefix() -> None:
    (ev,) = LogParser().feed(
        "[  123.456789] gpu-box python3[48211]: [2026-07-20 10:25:48 TP0] Load weight begin. "
        "avail mem=2.00 GB"
    )
    assert ev == WeightsBegin(timestamp="2026-07-20 10:25:48", rank="TP0", avail_mem_gb=2.0)


def test_health_check_failed_warning() -> None:
    (ev,) = LogParser().feed(
        "[2026-07-20 10:25:48] Health check failed. Server couldn't get a response from "
        "detokenizer for last 20 seconds. tic start time: 10:25:28. last_heartbeat time: 10:25:27"
    )
    assert isinstance(ev, TuningWarning) and ev.warning is WarningKind.HEALTH_CHECK_FAILED


def test_short_precise_and_iso_precise_prefixes() -> None:
    parser = LogParser()
    (a,) = parser.feed(
        "Jul 20 10:25:48.123456 gpu-box python3[48211]: Load weight begin. avail mem=2.00 GB"
    )
    assert a.timestamp == "Jul 20 10:25:48.123456"
    (b,) = parser.feed(
        "2026-07-20T10:25:48.123456+00:00 gpu-box python3[48211]: "
        "[2026-07-20 10:25:48] The server is fired up and ready to roll!"
    )
    assert b == Ready(timestamp="2026-07-20 10:25:48")


@pytest.mark.parametrize(
    "record",
    [
        {"MESSAGE": None},
        {"MESSAGE": [256, -1, "x"]},
        {"MESSAGE": 5},
        [1, 2],
        {"__REALTIME_TIMESTAMP": "99999999999999999999999", "MESSAGE": "Load weight begin."},
    ],
)
def test_odd_json_records(record: object) -> None:
    LogParser().feed(json.dumps(record))


def test_json_multiline_message() -> None:
    rec = {
        "MESSAGE": 'Traceback (most recent call last):\n  File "x", line 1\nValueError: bad\n',
        "SYSLOG_IDENTIFIER": "python3",
    }
    events = parse_lines([json.dumps(rec)])
    assert only(events, FatalError)[0].cause is FatalCause.BAD_ARGUMENT


def test_vllm_ready_needs_vllm() -> None:
    line = "INFO:     Application startup complete."
    assert LogParser(engine="vllm").feed(line) == [Ready()]
    assert LogParser(engine="sglang").feed(line) == []
    auto = LogParser()
    assert auto.feed(line) == []  # no vLLM line seen yet
    auto.feed("INFO 07-20 10:30:01 [api_server.py:1885] vLLM API server version 0.11.0")
    assert auto.feed(line) == [Ready(timestamp=None)]


def test_signature_in_the_middle_of_a_huge_traceback_is_kept() -> None:
    lines = ["Traceback (most recent call last):"]
    lines += [f'  File "/x/a{i}.py", line {i}, in f' for i in range(500)]
    lines += [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.00 GiB.",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
    ]
    lines += [f'  File "/x/b{i}.py", line {i}, in g' for i in range(500)]
    lines.append("RuntimeError: something generic")
    (fatal,) = only(parse_lines(lines), FatalError)
    assert fatal.cause is FatalCause.CUDA_OOM
    assert "Tried to allocate 9.00 GiB" in fatal.excerpt
    assert fatal.excerpt.splitlines()[-1] == "RuntimeError: something generic"
    assert len(fatal.excerpt.splitlines()) <= 12 + 1 + 8 + 48


def test_decode_fast_path_matches_key_parsing() -> None:
    rests = [line.split("Decode batch, ", 1)[1] for line in _ALL_LINES if "Decode batch, " in line]
    rests += [
        "#running-req: 1, #token: 5, token usage: 0.00, cuda graph: False, "
        "gen throughput (token/s): 1.00, #queue-req: 0",  # no speculative decoding
        "#running-req: 1, #token: 5, token usage: 1.2.3, cuda graph: False, "
        "gen throughput (token/s): 1.00, #queue-req: 0",  # malformed: falls back
    ]
    fast_hits = 0
    for rest in rests:
        fast = _decode_fast(rest)
        if fast is not None:
            fast_hits += 1
            slow = {k: None for k in fast} | _key_values(rest, _DECODE_KEYS)
            assert fast == slow, rest
    assert fast_hits >= 5
    assert _decode_fast(rests[-1]) is None


def test_fix_changes_apply_with_replace_config() -> None:
    from specconsole.core.config.model import ServerConfig, replace_config
    from specconsole.engines.sglang.keys import SpecAlgorithm

    config = ServerConfig(
        model_path="m",
        speculative_algorithm=SpecAlgorithm.EAGLE3,
        speculative_num_steps=6,
        speculative_eagle_topk=8,
        speculative_num_draft_tokens=32,
        mem_fraction_static=0.85,
    )
    vllm = ServerConfig(
        model_path="m", engine="vllm", method="eagle3", num_speculative_tokens=6,
        gpu_memory_utilization=0.85, max_model_len=131072, max_num_seqs=1024,
    )  # fmt: skip
    for base, table in [(config, FIXES), (vllm, VLLM_FIXES), (config, GENERIC_FIXES)]:
        for cause, fixes in table.items():
            for fix in fixes:
                changed = replace_config(base, **dict(fix.changes))
                assert fix.text, cause
                assert fix.field is None or getattr(changed, fix.field) != getattr(base, fix.field)
    shrink = next(f for f in FIXES[FatalCause.CUDA_OOM] if len(f.changes) == 3)
    tree = replace_config(config, **dict(shrink.changes))
    assert (
        tree.speculative_num_steps,
        tree.speculative_eagle_topk,
        tree.speculative_num_draft_tokens,
    ) == (3, 1, 4)
