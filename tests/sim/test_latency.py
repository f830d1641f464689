"""The simulator's server-side latency histograms follow Prometheus's bucket rule."""

from __future__ import annotations

from specconsole.sim.physics.latency import TTFT_BUCKETS, LatencyHistogram


def test_observations_land_in_the_first_bucket_at_or_above_them() -> None:
    h = LatencyHistogram((0.01, 0.1))
    for seconds in (0.005, 0.01, 0.0100001, 0.1, 3.0):
        h.observe(seconds)
    lines = h.exposition("x", "help", 'model_name="m"')
    assert lines[:2] == ["# HELP x help", "# TYPE x histogram"]
    # Cumulative: le="0.01" holds 0.005 and 0.01 (a bound is inclusive), le="0.1" two more.
    assert lines[2:5] == [
        'x_bucket{le="0.01",model_name="m"} 2.0',
        'x_bucket{le="0.1",model_name="m"} 4.0',
        'x_bucket{le="+Inf",model_name="m"} 5.0',
    ]
    assert lines[5].startswith('x_sum{model_name="m"} 3.125')
    assert lines[6] == 'x_count{model_name="m"} 5.0'


def test_bounds_are_increasing() -> None:
    assert list(TTFT_BUCKETS) == sorted(set(TTFT_BUCKETS))
