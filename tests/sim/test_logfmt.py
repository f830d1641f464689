"""Every log text the simulator can print, in both dialects, read back by the console's parser
(``specconsole.core.logs``) and, where SGLang's reference gives one, its regex."""

from __future__ import annotations

import re

import pytest

from specconsole.core.logs.events import (
    Capacity,
    CudaGraphBegin,
    CudaGraphEnd,
    DecodeStats,
    FatalCause,
    FatalError,
    KVCacheAllocated,
    PrefillStats,
    Ready,
    WeightsBegin,
    WeightsEnd,
)
from specconsole.core.logs.parser import parse_lines
from specconsole.engines.sglang.fatal import SGLangCause
from specconsole.sim.faces.sglang import log as logfmt

DIALECTS = (logfmt.LATEST, logfmt.V059)
CAPACITY_RE = re.compile(
    r"max_total_num_tokens=(\d+), chunked_prefill_size=(-?\d+), max_prefill_tokens=(\d+), "
    r"max_running_requests=(\d+), context_len=(\d+), available_gpu_mem=([\d.]+) GB"
)


def lines(*messages: str, rank: int | None = 0) -> list[str]:
    return [logfmt.prefix(1_800_000_000.0, rank) + m for m in messages]


def only(events: list, kind: type) -> list:
    return [e for e in events if isinstance(e, kind)]


def test_dialect_for_version() -> None:
    assert logfmt.dialect_for_version("0.5.9") == logfmt.V059
    assert logfmt.dialect_for_version("0.4.10") == logfmt.V059
    assert logfmt.dialect_for_version("0.5.14") == logfmt.LATEST
    assert logfmt.dialect_for_version("main") == logfmt.LATEST


def test_prefix_formats() -> None:
    assert re.fullmatch(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] ", logfmt.prefix(0.0))
    assert re.fullmatch(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d TP3\] ", logfmt.prefix(0.0, 3))


def test_capacity_line_matches_sglangs_regex_and_parser() -> None:
    text = logfmt.capacity_line(455_357, 4096, 16384, 64, 262144, 4.91)
    m = CAPACITY_RE.fullmatch(text)
    assert m and m.group(1) == "455357" and m.group(6) == "4.91"
    (cap,) = only(parse_lines(lines(text)), Capacity)
    assert (cap.max_total_num_tokens, cap.max_running_requests, cap.context_len) == (
        455_357,
        64,
        262144,
    )


@pytest.mark.parametrize("dialect", DIALECTS)
def test_load_sequence_lines_parse(dialect: str) -> None:
    capture = logfmt.GraphCapture("target verify", 4)
    text = lines(
        logfmt.load_weight_begin(47.45),
        logfmt.load_weight_end(
            dialect, 55.0, "Qwen3_5MoeForCausalLM", "fp8", "torch.bfloat16", 14.21, 33.24
        ),
        logfmt.kv_cache_allocated(dialect, "torch.bfloat16", 349_078, 2.0, 2.0),
        capture.begin(dialect, [1, 2, 4], 5.76),
        capture.end(dialect, 18.0, 0.59, 5.17),
    ) + lines(logfmt.READY, rank=None)
    events = parse_lines(text)
    assert only(events, WeightsBegin)[0].avail_mem_gb == 47.45
    end = only(events, WeightsEnd)[0]
    assert end.model_type == "Qwen3_5MoeForCausalLM" and end.mem_usage_gb == 33.24
    assert only(events, KVCacheAllocated)[0].num_tokens == 349_078
    assert only(events, CudaGraphBegin)[0].avail_mem_gb == 5.76
    assert only(events, CudaGraphEnd)[0].avail_mem_gb == 5.17
    assert only(events, Ready)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_statistics_lines_parse_by_key(dialect: str) -> None:
    decode = logfmt.decode_batch(12, 20_000, 0.05, 3.61, 0.87, True, 1500.5, 3)
    prefill = logfmt.prefill_batch(dialect, 2, 2048, 0, 0.01, 10, 1, 1024, False, 30000.0)
    assert decode.startswith("Decode batch, #running-req: 12, ") and not decode.endswith(",")
    events = parse_lines(lines(decode, prefill))
    (d,) = only(events, DecodeStats)
    assert (d.running_req, d.num_tokens, d.accept_len, d.cuda_graph, d.queue_req) == (
        12,
        20_000,
        3.61,
        True,
        3,
    )
    assert d.gen_throughput == pytest.approx(1500.5)
    (p,) = only(events, PrefillStats)
    assert (p.new_seq, p.new_token, p.running_req, p.queue_req) == (2, 2048, 10, 1)
    assert p.input_throughput == pytest.approx(30000.0)
    no_spec = logfmt.decode_batch(1, 10, 0.0, None, None, False, 80.0, 0)
    assert "accept len" not in no_spec
    assert only(parse_lines(lines(no_spec)), DecodeStats)[0].accept_len is None


@pytest.mark.parametrize("dialect", DIALECTS)
def test_fatal_texts_are_classified(dialect: str) -> None:
    cases = {
        logfmt.not_enough_memory_traceback(dialect, 0.88): FatalCause.KV_CACHE_NO_MEMORY,
        logfmt.capture_failed_traceback(
            dialect, "target", 0.5, 48.0, 0.1
        ): SGLangCause.CUDA_GRAPH_CAPTURE_FAILED,
        logfmt.capture_failed_traceback(
            dialect, "draft", 0.5, 48.0, 0.1
        ): SGLangCause.CUDA_GRAPH_CAPTURE_FAILED,
        logfmt.weights_oom_traceback(1.25, 48.0, 0.2): FatalCause.CUDA_OOM,
        logfmt.serving_crash_traceback(): FatalCause.ILLEGAL_MEMORY_ACCESS,
    }
    for text, cause in cases.items():
        events = parse_lines(lines(text) + lines(logfmt.SIGQUIT, rank=None))
        fatals = only(events, FatalError)
        assert fatals and fatals[0].cause is cause, (cause, fatals)
        assert text.startswith("Scheduler hit an exception: Traceback (most recent call last):")
    nem = logfmt.not_enough_memory_traceback(dialect, 0.88)
    assert "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static." in nem
    cap = logfmt.capture_failed_traceback(dialect, "target", 0.5, 48.0, 0.1)
    assert "Capture cuda graph failed: " in cap and "\nPossible solutions:\n1. set " in cap


def test_argument_error_is_a_bad_argument() -> None:
    text = logfmt.argument_error_traceback("AssertionError", "set all three or none")
    (fatal,) = only(parse_lines(text.splitlines()), FatalError)
    assert fatal.cause is FatalCause.BAD_ARGUMENT
