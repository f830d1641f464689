"""Parity with bench_serving's published metric definitions on recorded, real-shaped streams.

The fixture (tests/core/data/parity_streams.json) holds per-request timings that
``specconsole bench`` recorded against the simulator: EAGLE-3 streams whose chunks carry
several tokens each, for /generate and chat. Each expected value below is computed here,
independently of specconsole.core.measure.metrics (``statistics`` instead of its percentile code),
from the formula quoted beside it — bench_serving's ``calculate_metrics`` (SGLang 0.5.x,
``python/sglang/benchmark/serving.py``) and vLLM's goodput, which it follows.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from specconsole.core.measure.metrics import RequestTimeline, compute_level_metrics
from specconsole.core.measure.slo import Slo

DATA = json.loads((Path(__file__).parent / "data" / "parity_streams.json").read_text())


def _np_percentile(values: list[float], q: float) -> float:
    """numpy.percentile(values, q) (linear): statistics' "inclusive" quantiles at 0.1 steps."""
    if len(values) == 1:
        return values[0]
    cuts = statistics.quantiles(values, n=1000, method="inclusive")
    k = round(q * 10)
    return cuts[k - 1]


def _timelines(api: str) -> tuple[list[RequestTimeline], float]:
    level = DATA[api]
    reqs = [
        RequestTimeline(
            start=r["start"],
            latency=r["latency"],
            prompt_len=r["prompt_len"],
            output_len=r["output_len"],
            chunk_times=tuple(r["chunk_times"]),
            chunk_tokens=tuple(r["chunk_tokens"]),
        )
        for r in level["requests"]
    ]
    # Edge cases bench_serving handles explicitly: a one-token request (no TPOT) and a
    # failed request (counted in neither latencies nor tokens).
    reqs.append(
        RequestTimeline(
            start=0.01,
            latency=0.02,
            prompt_len=7,
            output_len=1,
            chunk_times=(0.015,),
            chunk_tokens=(1,),
        )
    )
    reqs.append(RequestTimeline(start=0.02, latency=0.1, prompt_len=9, error_kind="http_500"))
    return reqs, level["duration"]


@pytest.mark.parametrize("api", ["generate", "chat"])
def test_every_metric_is_bench_servings_definition(api: str) -> None:
    reqs, dur = _timelines(api)
    ok = [r for r in reqs if r.success]
    assert any(k > 1 for r in ok for k in r.chunk_tokens), "fixture must have multi-token chunks"
    slo = Slo(ttft_ms=40.0, tpot_ms=4.6, e2e_ms=300.0)
    m = compute_level_metrics(
        reqs, duration=dur, max_concurrency=4, percentiles=(50, 90, 95, 99, 99.9), slo=slo
    )
    lat = m.latency_ms

    # "ttfts.append(outputs[i].ttft)": send -> first chunk that carries text.
    ttfts = [r["chunk_times"][0] for r in DATA[api]["requests"]] + [0.015]
    # "tpot = (outputs[i].latency - outputs[i].ttft) / (output_len - 1)" if output_len > 1.
    tpots = [
        (r["latency"] - r["chunk_times"][0]) / (r["output_len"] - 1)
        for r in DATA[api]["requests"]
        if r["output_len"] > 1
    ]
    # sglang backend: "itl = chunk_gap / num_new_tokens", appended num_new_tokens times.
    itls: list[float] = []
    for r in DATA[api]["requests"]:
        for i in range(1, len(r["chunk_times"])):
            k = r["chunk_tokens"][i]
            itls += [(r["chunk_times"][i] - r["chunk_times"][i - 1]) / k] * k
    # "e2e_latencies.append(outputs[i].latency)".
    e2es = [r["latency"] for r in DATA[api]["requests"]] + [0.02]
    output_lens = [r["output_len"] for r in DATA[api]["requests"]] + [1]
    input_lens = [r["prompt_len"] for r in DATA[api]["requests"]] + [7]

    # "completed += 1" per successful request; "request_throughput = completed / dur_s".
    assert m.completed == len(ok) and m.failed == 1 and m.errors == {"http_500": 1}
    assert m.request_throughput == pytest.approx(len(ok) / dur)
    # "output_throughput = sum(output_lens) / dur_s"; "input_throughput = total_input / dur_s".
    assert m.total_output_tokens == sum(output_lens)
    assert m.output_throughput == pytest.approx(sum(output_lens) / dur)
    assert m.input_throughput == pytest.approx(sum(input_lens) / dur)
    # "concurrency = np.sum(e2e_latencies) / dur_s".
    assert m.concurrency == pytest.approx(math.fsum(e2es) / dur)
    # "mean_ttft_ms = np.mean(ttfts or 0) * 1000", median, std (np.std: ddof 0), percentiles.
    for name, values in (("ttft", ttfts), ("tpot", tpots), ("itl", itls), ("e2e_latency", e2es)):
        assert lat[f"mean_{name}_ms"] == pytest.approx(statistics.fmean(values) * 1000)
        assert lat[f"median_{name}_ms"] == pytest.approx(statistics.median(values) * 1000)
        assert lat[f"std_{name}_ms"] == pytest.approx(statistics.pstdev(values) * 1000)
        for q, label in ((50, "p50"), (90, "p90"), (95, "p95"), (99, "p99"), (99.9, "p99.9")):
            assert lat[f"{label}_{name}_ms"] == pytest.approx(_np_percentile(values, q) * 1000)
    # "max_itl_ms = np.max(itls) * 1000".
    assert lat["max_itl_ms"] == pytest.approx(max(itls) * 1000)
    # ITL is per token: each request's ITL entries number output_len - (first chunk's tokens).
    assert len(itls) == sum(sum(r["chunk_tokens"][1:]) for r in DATA[api]["requests"])
    # Goodput (vLLM's, which bench_serving follows): a request is good when it meets *every*
    # SLO — "ttft <= slo_ttft and tpot <= slo_tpot and e2el <= slo_e2el" (tpot 0 for n = 1);
    # "request_goodput = good_completed / dur_s".
    good = 0
    for r in DATA[api]["requests"]:
        ttft = r["chunk_times"][0]
        tpot = (r["latency"] - ttft) / (r["output_len"] - 1)
        good += ttft * 1000 <= 40.0 and tpot * 1000 <= 4.6 and r["latency"] * 1000 <= 300.0
    good += 1  # the one-token request: ttft 15 ms, tpot 0, e2e 20 ms
    assert 0 < good < len(ok), "the SLO must split the fixture to test anything"
    assert m.good_requests == good
    assert m.request_goodput == pytest.approx(good / dur)
    # TTST (AIPerf): first token-carrying chunk -> the next one.
    ttsts = [r["chunk_times"][1] - r["chunk_times"][0] for r in DATA[api]["requests"]]
    assert lat["median_ttst_ms"] == pytest.approx(statistics.median(ttsts) * 1000)
