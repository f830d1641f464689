"""Service-level objectives and goodput, as bench_serving / vLLM's benchmark define them.

Why: raw throughput rewards a configuration that streams fast while making some users wait;
goodput counts only the requests a user would call good. The definition is vLLM's
``benchmark_serving`` (which SGLang's bench_serving follows): a completed request is *good*
when it meets **every** configured objective — ``ttft <= ttft_ms``, ``tpot <= tpot_ms`` (a
request with one output token has TPOT 0) and ``e2e <= e2e_ms`` — and
``request_goodput = good requests / duration`` (req/s).

Written on the command line as ``--slo ttft_ms=500 tpot_ms=50 e2e_ms=20000`` and in a plan's
``[bench]`` table as ``slo = { ttft_ms = 500, tpot_ms = 50 }``. Pure, standard library only
(it runs on the GPU box inside the remote runner too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

SLO_KEYS: tuple[str, ...] = ("ttft_ms", "tpot_ms", "e2e_ms")


@dataclass(frozen=True, slots=True)
class Slo:
    """Upper bounds in milliseconds; None means that objective is not set."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None

    @property
    def empty(self) -> bool:
        return self.ttft_ms is None and self.tpot_ms is None and self.e2e_ms is None

    def is_good(self, ttft_s: float, tpot_s: float, e2e_s: float) -> bool:
        """Whether one completed request meets every configured objective."""
        if self.ttft_ms is not None and ttft_s * 1000.0 > self.ttft_ms:
            return False
        if self.tpot_ms is not None and tpot_s * 1000.0 > self.tpot_ms:
            return False
        return self.e2e_ms is None or e2e_s * 1000.0 <= self.e2e_ms

    def to_dict(self) -> dict[str, float]:
        return {k: v for k, v in zip(SLO_KEYS, self._values(), strict=True) if v is not None}

    def _values(self) -> tuple[float | None, ...]:
        return (self.ttft_ms, self.tpot_ms, self.e2e_ms)

    def describe(self) -> str:
        return " ".join(f"{k}={v:g}" for k, v in self.to_dict().items())

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str = "slo") -> Slo:
        """From ``{"ttft_ms": 500, ...}``; raises ValueError naming the key and the fix."""
        values: dict[str, float] = {}
        for key, raw in data.items():
            if key not in SLO_KEYS:
                raise ValueError(
                    f"{where}: unknown objective {key!r}; use {', '.join(SLO_KEYS)} "
                    "(milliseconds), e.g. ttft_ms=500"
                )
            try:  # a number, or its text (``--slo ttft_ms=500``); never true/false
                value = float("nan") if isinstance(raw, bool) else float(raw)
            except (TypeError, ValueError):
                value = float("nan")
            if not value > 0 or value == float("inf"):
                raise ValueError(f"{where}: {key} must be a positive number of ms, got {raw!r}")
            values[key] = value
        return cls(**values)


def parse_slo(items: Iterable[str]) -> Slo:
    """``["ttft_ms=500", "tpot_ms=50"]`` (or one space-separated string) → :class:`Slo`."""
    pairs: dict[str, str] = {}
    for item in items:
        for part in item.split():
            key, sep, value = part.partition("=")
            if not sep or not key or not value:
                raise ValueError(
                    f"--slo: {part!r} is not KEY=MS; give e.g. --slo ttft_ms=500 tpot_ms=50"
                )
            pairs[key.strip()] = value.strip()
    return Slo.from_mapping(pairs, where="--slo")
