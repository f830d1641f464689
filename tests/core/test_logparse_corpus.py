"""The project's own corpus of real-shaped excerpts (tests/data/logs/corpus, written for this
project): each file's summary — fatal cause, readiness, capacity — and its telling events."""

from __future__ import annotations

from pathlib import Path

import pytest

from specconsole.core.logs.events import (
    Capacity,
    CudaGraphBegin,
    CudaGraphEnd,
    DecodeStats,
    FatalCause,
    KVCacheAllocated,
    PrefillStats,
    SpecStats,
    WeightsBegin,
    WeightsEnd,
)
from specconsole.core.logs.load_summary import summarize
from specconsole.core.logs.parser import parse_lines
from specconsole.engines.sglang.fatal import SGLangCause

CORPUS = Path(__file__).resolve().parent.parent / "data" / "logs" / "corpus"

EXPECTED: dict[str, tuple[str | None, bool, dict[type, int]]] = {
    # file: (fatal cause, ready, {event type: at least this many})
    "compose_container_name_cuda_graph.log": (
        SGLangCause.CUDA_GRAPH_CAPTURE_FAILED,
        False,
        {WeightsEnd: 1, KVCacheAllocated: 1, CudaGraphBegin: 1},
    ),
    "compose_cuda_graph_fatal.log": (SGLangCause.CUDA_GRAPH_CAPTURE_FAILED, False, {}),
    "cri_vllm_no_cache_blocks.log": (FatalCause.KV_CACHE_NO_MEMORY, False, {}),
    "illegal_memory_then_scheduler.log": (
        FatalCause.ILLEGAL_MEMORY_ACCESS,
        False,
        {DecodeStats: 1},
    ),
    "journal_short_full_ready.log": (None, True, {}),
    "podman_compose_vllm_no_memory.log": (FatalCause.KV_CACHE_NO_MEMORY, False, {WeightsEnd: 1}),
    "recoverable_only.log": (None, False, {}),
    "scheduler_sigkill.log": (FatalCause.SCHEDULER_KILLED, False, {}),
    "sglang02_gpu_id.log": (None, False, {PrefillStats: 1, DecodeStats: 1}),
    "sglang03_time_only.log": (None, True, {DecodeStats: 2}),
    "sglang_dp_ep_ranks.log": (None, False, {DecodeStats: 1}),
    "sglang_scheduler_died_sigkill.log": (FatalCause.SCHEDULER_KILLED, False, {}),
    "supervisor_kill.log": (FatalCause.SCHEDULER_KILLED, False, {}),
    "vllm_034_kv_capacity_line.log": (
        None,
        True,
        {WeightsEnd: 1, KVCacheAllocated: 1, Capacity: 1, CudaGraphEnd: 1},
    ),
    "vllm_engine_core_sigkill.log": (FatalCause.SCHEDULER_KILLED, False, {WeightsBegin: 1}),
    "vllm_max_seq_len_kv.log": (FatalCause.KV_CACHE_NO_MEMORY, False, {}),
    "vllm_startup_oom.log": (FatalCause.CUDA_OOM, False, {}),
    "vllm_v0_stats_spec.log": (None, False, {DecodeStats: 1, SpecStats: 1}),
    "vllm_v1_capacity_ray.log": (None, True, {KVCacheAllocated: 1}),
    "warmup_failed.log": (SGLangCause.WARMUP_FAILED, False, {}),
}


def test_every_corpus_file_has_an_expectation() -> None:
    assert sorted(p.name for p in CORPUS.glob("*.log")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file(name: str) -> None:
    cause, ready, counts = EXPECTED[name]
    events = parse_lines((CORPUS / name).read_text().splitlines())
    summary = summarize(events)
    assert (summary.fatal.cause if summary.fatal else None) is cause
    assert summary.ready is ready
    fatals = [e for e in events if e.kind == "fatal"]
    assert len(fatals) == (1 if cause else 0), fatals  # one death, one event
    for cls, n in counts.items():
        assert sum(isinstance(e, cls) for e in events) >= n, cls


def test_numbers_with_thousands_separators_are_read_whole() -> None:
    """vLLM prints its KV cache and context sizes with separators (``f"{n:,}"``)."""
    summary = summarize(
        parse_lines((CORPUS / "vllm_034_kv_capacity_line.log").read_text().splitlines())
    )
    assert summary.kv_tokens == 422_864
    assert summary.capacity is not None
    assert (summary.capacity.max_total_num_tokens, summary.capacity.context_len) == (
        422_864,
        131_072,
    )
