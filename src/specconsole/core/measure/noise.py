"""The measured noise band: how far two measurements of one configuration fall apart.

Why a module of its own: on a real engine the same configuration benchmarked twice gives two
figures a few percent apart (the test bed's llama-server on a shared 2-core machine: see
docs/performance.md), and a search that compares single figures as exact picks winners of the
noise and prunes candidates that were as good as the best. Every decision between two trials
— which is best, whether the search improved, whether a candidate is pruned — must first ask
whether their difference exceeds that noise. The noise is *measured*, from the session's own
records, in two ways:

* **repeats** — a level benchmarked ``n`` times in one trial (``[bench] repeats``) keeps its
  mean and 95 % interval, from which its sample standard deviation follows exactly
  (``core.measure.stats.Spread.from_interval``): ``n − 1`` degrees of freedom;
* **re-measurements** — one configuration recorded by several trials (a contender measured
  again, a resumed or repeated sweep): the spread of its figures between loads, which also
  holds what repeats inside one load cannot see (a restart, another process on the box),
  ``k − 1`` degrees of freedom for ``k`` trials.

Each source gives a relative standard deviation (standard deviation over mean: the noise
scales with the figure); they are pooled (variances weighted by their degrees of freedom) into
a :class:`NoiseBand`. Two figures measured ``n_a`` and ``n_b`` times *differ* when
``|a − b| > t(0.975, dof) · σ · √(1/n_a + 1/n_b) · mean(a, b)`` — Student's two-sample test
at 95 % with the pooled relative σ. Otherwise they are a tie.

Pure and standard-library only: the figures come in as numbers, the caller picks which.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from specconsole.core.measure.stats import t_975

__all__ = ["NoiseBand", "Sample", "pool"]


@dataclass(frozen=True, slots=True)
class Sample:
    """One source of noise: a figure measured ``n`` times with this mean and sample std."""

    n: int
    mean: float
    std: float
    what: str = ""
    """Where it was measured, for the band's ``source`` (``trial 3 (3 repeats)``)."""

    @classmethod
    def of(cls, values: Sequence[float], what: str = "") -> Sample:
        n = len(values)
        m = math.fsum(values) / n if n else 0.0
        s = math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
        return cls(n, m, s, what)


@dataclass(frozen=True, slots=True)
class NoiseBand:
    """The pooled relative noise of one figure, with where it was measured."""

    rel_std: float
    """The standard deviation of one measurement, as a share of the figure."""
    dof: int
    """Degrees of freedom of the estimate (measurements less one per source)."""
    source: str
    """What measured it, in words (``repeats of trials 2, 5; trials 3 and 7 measured the
    same configuration``)."""

    def half_width(self, n_a: int = 1, n_b: int = 1) -> float:
        """The largest relative difference between two figures (measured ``n_a`` and ``n_b``
        times) that is still inside the noise (a share, 0.042 = 4.2 %)."""
        return t_975(max(1, self.dof)) * self.rel_std * math.sqrt(1.0 / n_a + 1.0 / n_b)

    def differ(self, a: float, b: float, n_a: int = 1, n_b: int = 1) -> bool:
        """Whether ``a`` and ``b`` differ beyond the noise."""
        scale = (abs(a) + abs(b)) / 2.0
        return abs(a - b) > self.half_width(n_a, n_b) * scale

    @property
    def pct(self) -> float:
        """:meth:`half_width` of two single measurements, in percent (the band a report
        quotes: ``±4.2 %``)."""
        return self.half_width() * 100.0

    def to_dict(self) -> dict[str, object]:
        return {"rel_std": self.rel_std, "dof": self.dof, "source": self.source, "pct": self.pct}


def pool(samples: Iterable[Sample]) -> NoiseBand | None:
    """The pooled relative noise of the samples that measured something twice or more
    (None: nothing was measured twice)."""
    used = [s for s in samples if s.n >= 2 and s.mean > 0 and math.isfinite(s.std)]
    if not used:
        return None
    dof = sum(s.n - 1 for s in used)
    variance = math.fsum((s.n - 1) * (s.std / s.mean) ** 2 for s in used) / dof
    return NoiseBand(math.sqrt(variance), dof, _source(used))


def _source(used: Sequence[Sample]) -> str:
    named = [s.what for s in used if s.what]
    runs = sum(s.n for s in used)
    if not named:
        return f"{len(used)} repeated figures ({runs} measurements)"
    shown = "; ".join(named[:4]) + (f"; {len(named) - 4} more" if len(named) > 4 else "")
    return f"{shown} ({runs} measurements)"
