"""Descriptive statistics and repeat statistics, without numpy.

Why a module of its own: the benchmark's per-level numbers follow numpy's definitions
(``bench_serving`` computes them with numpy), and the repeat statistics (mean, standard
deviation and a 95 % confidence interval over ``[bench] repeats`` runs) are used by the
metrics, the console's bench panel, the reports and the search strategy alike. Pure and
standard library only (Python 3.10), because it also runs on the GPU box inside the
self-contained remote runner.

* :func:`mean`, :func:`median`, :func:`std` (population, numpy's ``ddof=0``) and
  :func:`percentile` (linear interpolation, numpy's default); an empty list gives 0.
* :func:`spread`: ``n`` values → :class:`Spread` with the mean, the *sample* standard
  deviation (``ddof=1``) and the two-sided 95 % confidence interval of the mean,
  ``mean ± t(0.975, n − 1) · s / √n`` (Student's t; one value has no interval).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_T_975: tuple[float, ...] = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)
"""Student's t 0.975 quantile for 1..30 degrees of freedom (two-sided 95 %)."""


def t_975(dof: int) -> float:
    """Student's t 0.975 quantile; beyond 30 degrees of freedom the table's tail is
    interpolated in 1/dof towards the normal 1.960 (error < 0.001)."""
    if dof < 1:
        raise ValueError("t_975 needs at least 1 degree of freedom")
    if dof <= len(_T_975):
        return _T_975[dof - 1]
    return 1.960 + (2.042 - 1.960) * 30.0 / dof


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


def median(values: Sequence[float]) -> float:
    return percentile(values, 50.0)


def std(values: Sequence[float]) -> float:
    """Population standard deviation (numpy's default ``ddof=0``)."""
    if not values:
        return 0.0
    m = mean(values)
    return math.sqrt(math.fsum([(v - m) ** 2 for v in values]) / len(values))


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile with linear interpolation (numpy's default method)."""
    return percentile_of_sorted(sorted(values), q)


def percentile_of_sorted(ordered: Sequence[float], q: float) -> float:
    """:func:`percentile` of values already in ascending order (a level's summary sorts
    each metric once for all its percentiles)."""
    if not ordered:
        return 0.0
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    frac = pos - lo
    return ordered[lo] + (ordered[hi] - ordered[lo]) * frac


def percentile_label(q: float) -> str:
    """``p99``, ``p99.9``: the key prefix bench_serving / vLLM use for a percentile."""
    return f"p{int(q)}" if float(q).is_integer() else f"p{q:g}"


@dataclass(frozen=True, slots=True)
class Spread:
    """One headline number over repeated runs: mean, sample std and a 95 % CI of the mean."""

    n: int
    mean: float
    std: float
    """Sample standard deviation (``ddof=1``); 0 for one value."""
    ci_low: float
    ci_high: float
    """The 95 % confidence interval of the mean (``mean`` itself for one value)."""
    values: tuple[float, ...] = ()

    @property
    def ci_half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "mean": self.mean,
            "std": self.std,
            "ci95_low": self.ci_low,
            "ci95_high": self.ci_high,
            "values": list(self.values),
        }

    @classmethod
    def from_interval(cls, n: int, mean: float, ci_low: float, ci_high: float) -> Spread:
        """The spread a recorded mean and 95 % CI over ``n`` runs imply: the interval is
        ``mean ± t(0.975, n − 1) · s / √n``, so the sample std ``s`` follows exactly (records
        keep the interval, not the std)."""
        std = 0.0
        if n >= 2:
            std = (ci_high - ci_low) / 2.0 * math.sqrt(n) / t_975(n - 1)
        return cls(n, mean, std, ci_low, ci_high)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Spread:
        return cls(
            n=int(data["n"]),
            mean=float(data["mean"]),
            std=float(data["std"]),
            ci_low=float(data["ci95_low"]),
            ci_high=float(data["ci95_high"]),
            values=tuple(float(v) for v in data.get("values", ())),
        )


def half_width(spread: Spread | None) -> float | None:
    """The 95 % CI's half-width of a repeated figure (the ``±`` every surface prints), or
    None for a figure measured once."""
    return None if spread is None else spread.ci_half_width


def spread(values: Sequence[float]) -> Spread:
    """Mean, sample standard deviation and Student-t 95 % CI of ``values`` (n ≥ 1)."""
    n = len(values)
    if n == 0:
        raise ValueError("spread needs at least one value")
    m = mean(values)
    if n == 1:
        return Spread(1, m, 0.0, m, m, tuple(values))
    s = math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1))
    half = t_975(n - 1) * s / math.sqrt(n)
    return Spread(n, m, s, m - half, m + half, tuple(values))
