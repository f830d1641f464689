"""Statistics, capacity, speculative and fatal lines in their historical shapes, by key.

Real-shaped lines written for this project (SGLang 0.2 → today, vLLM V0 and V1), and the
fatal-cause precedence over whole excerpts.
"""

from __future__ import annotations

import pytest

from specconsole.core.logs.dialect import classify_fatal
from specconsole.core.logs.events import (
    Capacity,
    DecodeStats,
    FatalCause,
    FatalError,
    KVCacheAllocated,
    PrefillStats,
    SpecStats,
)
from specconsole.core.logs.parser import LogParser, parse_lines
from specconsole.engines.sglang.fatal import SGLangCause


def one(lines: list[str], cls: type):
    found = [e for e in parse_lines(lines) if isinstance(e, cls)]
    assert len(found) == 1, parse_lines(lines)
    return found[0]


@pytest.mark.parametrize(
    ("line", "fields"),
    [
        (  # SGLang 0.3: time-only header, "Decode batch." with a period
            "[10:27:57 TP0] Decode batch. #running-req: 4, #token: 2210, token usage: 0.01, "
            "gen throughput (token/s): 301.22, #queue-req: 0",
            {"running_req": 4, "num_tokens": 2210, "gen_throughput": 301.22},
        ),
        (  # hybrid (SWA / mamba) pools: "#full token" and "full token usage"
            "[2026-07-20 10:27:57 TP0] Decode batch, #running-req: 8, #full token: 5120, "
            "full token usage: 0.03, #swa token: 900, swa token usage: 0.01, accept len: 3.10, "
            "cuda graph: True, gen throughput (token/s): 880.00, #queue-req: 2",
            {"num_tokens": 5120, "token_usage": 0.03, "accept_len": 3.10, "queue_req": 2},
        ),
        (  # fields reordered / new keys between
            "[2026-07-20 10:27:57 DP0 TP0 EP0] Decode batch, #running-req: 2, #token: 10, "
            "pre-allocated usage: 0.00, token usage: 0.00, accept rate: 0.71, accept len: 2.90, "
            "cuda graph: False, #queue-req: 1, gen throughput (token/s): 55.50",
            {"accept_rate": 0.71, "accept_len": 2.90, "gen_throughput": 55.5, "queue_req": 1},
        ),
        (  # 0.4 with the iteration counter
            "[2025-01-10 10:27:57 TP0] Decode batch [1240], #running-req: 1, #token: 99, "
            "token usage: 0.00, gen throughput (token/s): 40.00, #queue-req: 0",
            {"iteration": 1240, "num_tokens": 99},
        ),
        (  # vLLM V1 (percent usage, Waiting)
            "INFO 07-20 10:27:57 [loggers.py:123] Engine 000: Avg prompt throughput: 120.5 "
            "tokens/s, Avg generation throughput: 843.2 tokens/s, Running: 12 reqs, Waiting: 3 "
            "reqs, GPU KV cache usage: 4.5%, Prefix cache hit rate: 0.0%",
            {"running_req": 12, "queue_req": 3, "token_usage": 0.045, "gen_throughput": 843.2},
        ),
        (  # vLLM V0 (Swapped, Pending)
            "INFO 07-20 10:27:57 metrics.py:455] Avg prompt throughput: 0.0 tokens/s, Avg "
            "generation throughput: 77.1 tokens/s, Running: 5 reqs, Swapped: 0 reqs, Pending: 2 "
            "reqs, GPU KV cache usage: 1.2%, CPU KV cache usage: 0.0%.",
            {"running_req": 5, "queue_req": 2, "gen_throughput": 77.1},
        ),
    ],
)
def test_decode_shapes(line: str, fields: dict) -> None:
    ev = one([line], DecodeStats)
    for key, value in fields.items():
        assert getattr(ev, key) == pytest.approx(value), key


def test_prefill_old_shape_with_cache_hit_rate() -> None:
    ev = one(
        [
            "[gpu_id=0] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, cache hit "
            "rate: 0.00%, #running-req: 0, #queue-req: 0"
        ],
        PrefillStats,
    )
    assert ev.new_token == 7 and ev.running_req == 0


@pytest.mark.parametrize(
    ("line", "tokens"),
    [
        (
            "INFO 07-20 10:27:57 [kv_cache_utils.py:716] GPU KV cache size: 1,823,372 tokens",
            1823372,
        ),
        (
            "(EngineCore_DP0 pid=311) INFO 07-20 10:27:57 [kv_cache_utils.py:716] GPU KV cache "
            "size: 96,880 tokens",
            96880,
        ),
    ],
)
def test_vllm_capacity_with_thousands_separators(line: str, tokens: int) -> None:
    assert one([line], KVCacheAllocated).num_tokens == tokens


def test_sglang_capacity_line_every_release() -> None:
    for prefix in ("[gpu_id=0] ", "[10:27:57 TP0] ", "[2026-07-20 10:27:57 TP0] "):
        ev = one(
            [
                prefix + "max_total_num_tokens=412386, max_prefill_tokens=16384, "
                "max_running_requests=2047, context_len=8192"
            ],
            Capacity,
        )
        assert ev.max_total_num_tokens == 412386 and ev.context_len == 8192


@pytest.mark.parametrize(
    ("line", "rate", "length"),
    [
        (  # vLLM V0
            "INFO 07-20 10:27:57 metrics.py:477] Speculative metrics: Draft acceptance rate: "
            "0.651, System efficiency: 0.564, Number of speculative tokens: 4, Number of "
            "accepted tokens: 1234, Number of draft tokens: 1896, Number of emitted tokens: 1500.",
            0.651,
            2.82,
        ),
        (  # vLLM V1, newest
            "INFO 07-20 10:27:57 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: "
            "2.45, Accepted throughput: 12.30 tokens/s, Drafted throughput: 20.00 tokens/s, "
            "Accepted: 123 tokens, Drafted: 200 tokens, Per-position acceptance rate: 0.800, "
            "0.500, 0.300, Avg Draft acceptance rate: 61.5%",
            0.615,
            2.45,
        ),
    ],
)
def test_vllm_speculative_shapes(line: str, rate: float, length: float) -> None:
    ev = one([line], SpecStats)
    assert ev.accept_rate == pytest.approx(rate) and ev.accept_len == pytest.approx(length)


# ---------------------------------------------------------------------------------------------
# Fatal classification
# ---------------------------------------------------------------------------------------------


def test_precedence_is_explicit_and_complete() -> None:
    precedence = LogParser().dialect.rules.precedence  # every registered engine's grammar
    assert set(FatalCause) | set(SGLangCause) <= set(precedence)
    assert len(set(precedence)) == len(precedence)
    assert precedence.index(FatalCause.ILLEGAL_MEMORY_ACCESS) < precedence.index(
        SGLangCause.SCHEDULER_EXCEPTION
    )


def test_specific_cause_before_the_scheduler_wrapper_wins() -> None:
    lines = [
        "[2026-07-20 10:27:57 TP0] CUDA error: an illegal memory access was encountered",
        "[2026-07-20 10:27:57 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 2600, in run_scheduler_process',
        "RuntimeError: Worker failed",
        "",
    ]
    (fatal,) = [e for e in parse_lines(lines) if isinstance(e, FatalError)]
    assert fatal.cause is FatalCause.ILLEGAL_MEMORY_ACCESS


def test_cuda_error_inside_the_wrapper_wins() -> None:
    cause, proof = classify_fatal(
        [
            "Scheduler hit an exception: Traceback (most recent call last):",
            "  File x",
            "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        ]
    )
    assert cause is FatalCause.ILLEGAL_MEMORY_ACCESS and "illegal" in proof


@pytest.mark.parametrize(
    "lines",
    [
        [
            "[2026-07-20 10:27:57] Rank 0 scheduler is dead. Please check if there are relevant "
            "logs in the previous lines.",
            "[2026-07-20 10:27:57] Exit code: -9",
        ],
        ["[2026-07-20 10:27:57] Rank 1 scheduler died during initialization (Exit code: -9)."],
    ],
)
def test_signal_9_is_scheduler_killed(lines: list[str]) -> None:
    (fatal,) = [e for e in parse_lines(lines) if isinstance(e, FatalError)]
    assert fatal.cause is FatalCause.SCHEDULER_KILLED


@pytest.mark.parametrize(
    ("lines", "cause"),
    [
        (
            [
                "ERROR 07-20 10:27:57 [core.py:700] Traceback (most recent call last):",
                '  File "/vllm/v1/worker/gpu_worker.py", line 240, in determine_available_memory',
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 0 "
                "has a total capacity of 79.19 GiB of which 1.02 GiB is free.",
            ],
            FatalCause.CUDA_OOM,
        ),
        (
            [
                "ERROR 07-20 10:27:57 [core.py:700] Traceback (most recent call last):",
                '  File "/vllm/v1/core/kv_cache_utils.py", line 700, in check_enough_kv_cache',
                "ValueError: The model's max_seq_len (131072) is larger than the maximum number of "
                "tokens that can be stored in KV cache (65536). Try increasing "
                "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
                "engine.",
            ],
            FatalCause.KV_CACHE_NO_MEMORY,
        ),
        (
            [
                "Traceback (most recent call last):",
                '  File "/vllm/worker/worker.py", line 1, in x',
                "RuntimeError: CUDA error: out of memory",
            ],
            FatalCause.CUDA_OOM,
        ),
    ],
)
def test_vllm_fatal_causes(lines: list[str], cause: FatalCause) -> None:
    (fatal,) = [e for e in parse_lines(lines) if isinstance(e, FatalError)]
    assert fatal.cause is cause


@pytest.mark.parametrize(
    "lines",
    [
        [
            "[2026-07-20 10:27:57 TP0] Decode out of memory happened. #retracted_reqs: 1, "
            "#new_token_ratio: 0.7000 -> 1.0000"
        ],
        ["[2026-07-20 10:27:57] Rank 0 scheduler is dead.", "[2026-07-20 10:27:57] Exit code: -15"],
        [  # uvicorn without any header, then the request's traceback (a client went away)
            "ERROR:    Exception in ASGI application",
            "Traceback (most recent call last):",
            '  File "/starlette/requests.py", line 1, in receive',
            "starlette.requests.ClientDisconnect",
        ],
        [  # the same from another ASGI server, with an SGLang header
            "[2026-07-20 10:27:57] Error in ASGI Framework",
            "Traceback (most recent call last):",
            '  File "/hypercorn/asyncio/task_group.py", line 1, in x',
            "RuntimeError: boom",
        ],
        [  # a traceback ending in ClientDisconnect with no request-error line before it
            "Traceback (most recent call last):",
            '  File "/sglang/srt/entrypoints/http_server.py", line 1, in stream',
            "starlette.requests.ClientDisconnect",
        ],
        [  # vLLM's per-request error (a 400 to one client)
            "ERROR 07-20 10:27:57 [serving_chat.py:222] Error in preprocessing prompt inputs",
            "Traceback (most recent call last):",
            '  File "/vllm/entrypoints/openai/serving_chat.py", line 200, in create',
            "ValueError: This model's maximum context length is 8192 tokens.",
        ],
    ],
)
def test_recoverable_lines_are_never_fatal(lines: list[str]) -> None:
    assert not [e for e in parse_lines(lines) if isinstance(e, FatalError)]


def test_warmup_failure_cause() -> None:
    lines = [
        "[2026-07-20 20:00:05] Initialization failed. warmup error: Traceback (most recent call "
        "last):",
        '  File "/sglang/srt/entrypoints/http_server.py", line 1400, in _wait_and_warmup',
        "AssertionError: res=<Response [500 Internal Server Error]>",
    ]
    (fatal,) = [e for e in parse_lines(lines) if isinstance(e, FatalError)]
    assert fatal.cause is SGLangCause.WARMUP_FAILED and "AssertionError" in fatal.summary
