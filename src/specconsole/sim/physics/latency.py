"""The server's own view of request latency, as the engines' ``/metrics`` histograms export it.

Why: a client's TTFT is the server's TTFT plus the client's own path (connect, send, receive,
parse). SGLang (``--enable-metrics``) and vLLM export the time to first token and the
end-to-end latency as Prometheus histograms measured from the moment the server received the
request (``sglang:time_to_first_token_seconds``, ``vllm:e2e_request_latency_seconds``...); the
box keeps the same two and each face exposes them under its engine's names, so a benchmark
can read the server-side figure for exactly the requests it sent (the ``_sum`` / ``_count``
difference across a run) and tell a client's overhead from the server's behaviour
(``benchmarks/fidelity.py`` does). Pure: no I/O, no clock of its own.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

TTFT_BUCKETS: tuple[float, ...] = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
    0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 15.0, 20.0, 25.0, 30.0,
)  # fmt: skip
"""Upper bounds in seconds, as SGLang's production-metrics example lists them."""

E2E_BUCKETS: tuple[float, ...] = (
    0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0,
    20.0, 40.0, 60.0, 80.0, 100.0, 200.0, 400.0, 800.0,
)  # fmt: skip


@dataclass(slots=True)
class LatencyHistogram:
    """Cumulative observations in seconds: per-bucket counts, the sum and the count."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, seconds)] += 1
        self.total += seconds
        self.count += 1

    def exposition(self, name: str, help_text: str, labels: str) -> list[str]:
        """Prometheus text lines: HELP, TYPE, cumulative ``_bucket`` rows, ``_sum``, ``_count``."""
        lines = [f"# HELP {name} {help_text}", f"# TYPE {name} histogram"]
        running = 0
        for bound, n in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += n
            le = "+Inf" if bound == float("inf") else repr(bound)
            lines.append(f'{name}_bucket{{le="{le}",{labels}}} {float(running)}')
        lines.append(f"{name}_sum{{{labels}}} {self.total!r}")
        lines.append(f"{name}_count{{{labels}}} {float(self.count)}")
        return lines
