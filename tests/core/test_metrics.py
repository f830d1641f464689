"""Every metric on hand-made timelines, against values computed by hand (see comments)."""

from __future__ import annotations

import json
import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specconsole.core.measure.metrics import (
    LATENCY_KEYS,
    LevelMetrics,
    RequestTimeline,
    compute_level_metrics,
    percentile,
    std,
)
from specconsole.core.measure.result import BenchResult

# A: sent at 0, 10 prompt tokens, 4 output tokens in chunks of 1, 1, 2 arriving at 0.5, 0.625,
#    0.875; done at 1.0. ttft 0.5; ITL 0.125, then the 0.25 gap split over 2 tokens: 0.125 x2.
A = RequestTimeline(
    start=0.0,
    latency=1.0,
    prompt_len=10,
    output_len=4,
    chunk_times=(0.5, 0.625, 0.875),
    chunk_tokens=(1, 1, 2),
    spec_verify_ct=2,
)
# B: sent at 0.25, 20 prompt tokens, 3 output tokens: a first chunk of 2 at +0.25, then 1 at
#    +1.0; done at +1.5. ttft 0.25; ITL 0.75.
B = RequestTimeline(
    start=0.25,
    latency=1.5,
    prompt_len=20,
    output_len=3,
    chunk_times=(0.25, 1.0),
    chunk_tokens=(2, 1),
)
C = RequestTimeline(start=0.5, latency=0.125, prompt_len=5, error_kind="http_500", error="boom")
D = RequestTimeline(start=0.0, latency=2.0, prompt_len=5, error_kind="timeout", error="slow")


@pytest.fixture
def level() -> LevelMetrics:
    return compute_level_metrics(
        [A, B, C, D], duration=2.0, max_concurrency=4, accept_length=2.5, warmup_requests=4
    )


def test_itl_splits_multi_token_chunks() -> None:
    assert A.itl() == [0.125, 0.125, 0.125]
    assert B.itl() == [0.75]
    assert A.ttft == 0.5 and B.ttft == 0.25 and C.ttft == 0.0


def test_counts_and_throughputs(level: LevelMetrics) -> None:
    assert level.completed == 2
    assert level.failed == 2
    assert level.errors == {"http_500": 1, "timeout": 1}
    assert level.total_input_tokens == 30  # failed requests' prompts are not counted
    assert level.total_output_tokens == 7
    assert level.duration == 2.0
    assert level.request_throughput == pytest.approx(1.0)
    assert level.input_throughput == pytest.approx(15.0)
    assert level.output_throughput == pytest.approx(3.5)
    assert level.total_throughput == pytest.approx(18.5)
    assert level.concurrency == pytest.approx((1.0 + 1.5) / 2.0)


def test_peak_buckets(level: LevelMetrics) -> None:
    # Token times: A at 0.5, 0.625, 0.75, 0.875 (second 0); B at 0.5 (its 2-token first chunk
    # counts once, as in bench_serving) and 1.25 (second 1). Second 0 holds 5 tokens.
    assert level.max_output_tokens_per_s == 5.0
    assert level.max_concurrent_requests == 2


def test_latency_statistics(level: LevelMetrics) -> None:
    lat = level.latency_ms
    assert set(lat) == set(LATENCY_KEYS)
    # TTFT [0.5, 0.25]
    assert lat["mean_ttft_ms"] == pytest.approx(375.0)
    assert lat["median_ttft_ms"] == pytest.approx(375.0)
    assert lat["std_ttft_ms"] == pytest.approx(125.0)
    assert lat["p90_ttft_ms"] == pytest.approx(475.0)
    assert lat["p95_ttft_ms"] == pytest.approx(487.5)
    assert lat["p99_ttft_ms"] == pytest.approx(497.5)
    # ITL [0.125, 0.125, 0.125, 0.75]
    assert lat["mean_itl_ms"] == pytest.approx(281.25)
    assert lat["median_itl_ms"] == pytest.approx(125.0)
    assert lat["std_itl_ms"] == pytest.approx(270.632939, rel=1e-6)
    assert lat["p90_itl_ms"] == pytest.approx(562.5)
    assert lat["p95_itl_ms"] == pytest.approx(656.25)
    assert lat["p99_itl_ms"] == pytest.approx(731.25)
    assert lat["max_itl_ms"] == pytest.approx(750.0)
    # TPOT [(1.0-0.5)/3, (1.5-0.25)/2] = [1/6, 0.625]
    assert lat["mean_tpot_ms"] == pytest.approx(395.833333, rel=1e-6)
    assert lat["median_tpot_ms"] == pytest.approx(395.833333, rel=1e-6)
    assert lat["std_tpot_ms"] == pytest.approx(229.166667, rel=1e-6)
    # E2E [1.0, 1.5]
    assert lat["mean_e2e_latency_ms"] == pytest.approx(1250.0)
    assert lat["std_e2e_latency_ms"] == pytest.approx(250.0)
    assert lat["p99_e2e_latency_ms"] == pytest.approx(1495.0)


def test_per_request_speed_and_accept_length(level: LevelMetrics) -> None:
    # decode (n-1)/(e2e-ttft): A 3/0.5 = 6, B 2/1.25 = 1.6; n/e2e: A 4, B 2.
    assert level.mean_decode_tok_s == pytest.approx(3.8)
    assert level.median_decode_tok_s == pytest.approx(3.8)
    assert level.mean_request_tok_s == pytest.approx(3.0)
    assert level.accept_length == 2.5
    assert level.request_accept_length == pytest.approx(4 / 2)  # only A reported verify ct


def test_record_uses_bench_serving_keys_and_round_trips(level: LevelMetrics) -> None:
    record = level.to_record()
    for key in (
        "completed",
        "duration",
        "request_throughput",
        "input_throughput",
        "output_throughput",
        "total_throughput",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
        "concurrency",
        "accept_length",
        "total_input_tokens",
        "total_output_tokens",
        "median_ttft_ms",
        "p99_itl_ms",
        "std_e2e_latency_ms",
        "max_concurrency",
    ):
        assert key in record
    assert level["median_ttft_ms"] == pytest.approx(375.0)
    again = LevelMetrics.from_record(json.loads(json.dumps(record)))
    assert again == level


def test_empty_and_all_failed_levels_give_zeros() -> None:
    empty = compute_level_metrics([], duration=0.0, max_concurrency=1)
    assert empty.completed == 0 and empty.output_throughput == 0.0
    assert empty.latency_ms["p99_itl_ms"] == 0.0
    failed = compute_level_metrics([C, D], duration=1.0, max_concurrency=2)
    assert failed.failed == 2 and failed.completed == 0
    assert failed.max_output_tokens_per_s == 0.0 and failed.concurrency == 0.0


def test_single_token_requests_have_no_tpot() -> None:
    one = RequestTimeline(
        start=0, latency=0.5, prompt_len=3, output_len=1, chunk_times=(0.5,), chunk_tokens=(1,)
    )
    m = compute_level_metrics([one], duration=0.5, max_concurrency=1)
    assert m.latency_ms["mean_tpot_ms"] == 0.0 and m.mean_decode_tok_s == 0.0
    assert m.mean_request_tok_s == pytest.approx(2.0)


def _level(c: int, decode: float, out_thr: float, *, partial: bool = False) -> LevelMetrics:
    base = compute_level_metrics([A], duration=1.0, max_concurrency=c, partial=partial)
    record = base.to_record() | {"mean_decode_tok_s": decode, "output_throughput": out_thr}
    return LevelMetrics.from_record(record)


def test_trial_headlines_partial_and_round_trip() -> None:
    result = BenchResult(
        levels=(_level(1, 50.0, 48.0), _level(4, 40.0, 150.0), _level(16, 20.0, 120.0)),
        settings={"backend": "sglang"},
        planned_levels=(1, 4, 16),
    )
    assert result.single_request_tok_s == 50.0
    assert result.peak_aggregate_tok_s == 150.0
    assert result.peak_level is not None and result.peak_level.max_concurrency == 4
    assert not result.partial
    data = json.loads(json.dumps(result.to_dict()))
    assert data["single_request_tok_s"] == 50.0 and data["peak_concurrency"] == 4
    assert BenchResult.from_dict(data) == result
    assert [r["backend"] for r in result.records()] == ["sglang"] * 3

    cut = BenchResult(
        levels=(_level(1, 50.0, 48.0, partial=True),), cancelled=True, planned_levels=(1, 4)
    )
    assert cut.partial and cut.to_dict()["partial"] is True
    missing = BenchResult(levels=(_level(1, 50.0, 48.0),), planned_levels=(1, 4))
    assert missing.partial


def test_headlines_present_without_level_one_or_data() -> None:
    no_one = BenchResult(levels=(_level(4, 40.0, 150.0), _level(8, 30.0, 200.0)))
    assert no_one.single_request_tok_s == 40.0
    assert no_one.peak_aggregate_tok_s == 200.0
    nothing = BenchResult(levels=())
    assert nothing.single_request_tok_s == 0.0 and nothing.peak_aggregate_tok_s == 0.0
    assert nothing.to_dict()["peak_concurrency"] is None


@given(st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), min_size=1, max_size=50))
def test_statistics_match_the_standard_library(values: list[float]) -> None:
    assert percentile(values, 50) == pytest.approx(statistics.median(values), abs=1e-9)
    assert std(values) == pytest.approx(statistics.pstdev(values), abs=1e-6)
    assert min(values) <= percentile(values, 90) <= percentile(values, 99) <= max(values)


@st.composite
def timelines(draw: st.DrawFn) -> RequestTimeline:
    start = draw(st.floats(min_value=0, max_value=5))
    sizes = draw(st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=12))
    gaps = draw(
        st.lists(
            st.floats(min_value=0.001, max_value=0.5), min_size=len(sizes), max_size=len(sizes)
        )
    )
    times: list[float] = []
    t = 0.0
    for gap in gaps:
        t += gap
        times.append(t)
    tail = draw(st.floats(min_value=0, max_value=0.1))
    return RequestTimeline(
        start=start,
        latency=t + tail,
        prompt_len=draw(st.integers(1, 99)),
        output_len=sum(sizes),
        chunk_times=tuple(times),
        chunk_tokens=tuple(sizes),
    )


@given(st.lists(timelines(), min_size=1, max_size=20))
def test_invariants_on_random_timelines(reqs: list[RequestTimeline]) -> None:
    for r in reqs:
        itl = r.itl()
        # one ITL entry per token after the first chunk, summing to the first-to-last gap
        assert len(itl) == sum(r.chunk_tokens[1:])
        assert math.fsum(itl) == pytest.approx(r.chunk_times[-1] - r.chunk_times[0], abs=1e-9)
    duration = max(r.start + r.latency for r in reqs) - min(r.start for r in reqs)
    m = compute_level_metrics(reqs, duration=duration, max_concurrency=len(reqs))
    assert m.total_output_tokens == sum(r.output_len for r in reqs)
    assert m.output_throughput == pytest.approx(m.total_output_tokens / duration)
    assert m.concurrency == pytest.approx(sum(r.latency for r in reqs) / duration)
    assert 1 <= m.max_concurrent_requests <= len(reqs)
    # bench_serving's buckets count the first token once plus one per ITL entry
    counted = sum(1 + len(r.itl()) for r in reqs)
    assert 1 <= m.max_output_tokens_per_s <= counted
    lat = m.latency_ms
    for name in ("ttft", "tpot", "itl", "e2e_latency"):
        assert lat[f"median_{name}_ms"] <= lat[f"p90_{name}_ms"] + 1e-9
        assert lat[f"p90_{name}_ms"] <= lat[f"p95_{name}_ms"] + 1e-9
        assert lat[f"p95_{name}_ms"] <= lat[f"p99_{name}_ms"] + 1e-9
