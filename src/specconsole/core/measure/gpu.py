"""GPU telemetry as data: ``nvidia-smi``'s CSV read into samples, and samples folded into the
figures a trial records.

Why pure and here: the question after a crash in load is "how close to the memory limit did
the last good configuration come?", and energy per token is a figure next to tok/s. Both are
arithmetic over what ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N``
prints on the box, so the reading (:func:`parse_sample`) and the folding (:class:`GpuStats`,
:class:`TrialGpu`) are plain data in, plain data out, tested without a GPU; the stream that
carries the lines is the controller's (``controller.telemetry``).

Definitions (per GPU, over the samples taken in a span: a trial's load, one ladder level):

* memory peak / mean: the largest and the mean ``memory.used`` (MiB);
* utilisation, power: the means of ``utilization.gpu`` (%) and ``power.draw`` (W) over the
  samples that report them (``[N/A]`` is left out, never read as 0);
* a span's power is the sum of its GPUs' mean power — known only when every GPU of the span
  reported power (a GPU printing ``[N/A]`` or gone from the list makes it unknown, never a
  partial sum) —, its utilisation their mean;
* a GPU whose mean power over the span is under :data:`MIN_WORKING_POWER_W` did not report
  its power (a sensor that reads nothing, or a figure like ``2.2e-309``): dividing by it would
  give an absurd or infinite energy, so the span's power is unknown, said as such;
* tokens per joule = output tokens per second / watts (a level's aggregate tok/s over the
  mean power of every GPU sampled during it), only where that power is known — a finite
  figure or none.

Nothing the box prints is taken on trust: a figure in another unit (``47.6 GiB`` where MiB
were asked for), a negative or impossible one (over 100 %, 5 kW, 16 TiB), memory used past
its total, ``[N/A]`` and ``[Not Supported]`` are not read as numbers; what the box printed
instead is kept with the sample (:attr:`GpuSample.unread`) and shown as such.

Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "QUERY_FIELDS",
    "GpuSample",
    "GpuSpan",
    "GpuStats",
    "TrialGpu",
    "fold",
    "parse_sample",
    "query_args",
    "read_figure",
]

QUERY_FIELDS: tuple[str, ...] = (
    "timestamp",
    "index",
    "memory.used",
    "memory.total",
    "utilization.gpu",
    "power.draw",
    "temperature.gpu",
)
"""What is sampled, in the order ``nvidia-smi`` prints it (one GPU a line)."""

MAX_LINE = 4096
"""A longer line is not a sample (a bounded read: the stream may carry anything)."""
MAX_MEMORY_MIB = 16 * 1024 * 1024
"""No GPU holds 16 TiB: a larger figure is not a memory size."""
MAX_POWER_W = 5000.0
"""No GPU draws 5 kW: a larger figure is not its power (a wrong unit, a lie)."""
MAX_TEMPERATURE_C = 200.0
MIN_WORKING_POWER_W = 1.0
"""A GPU drawing less over a span did not report its power: even an idle datacenter GPU draws
tens of watts and a small one several, so a mean under 1 W is a sensor that reads nothing (or
a lie), never a denominator for tokens per joule."""


def query_args(interval_ms: int) -> tuple[str, ...]:
    """``nvidia-smi``'s argv for a sample of every GPU each ``interval_ms`` milliseconds
    (memory in MiB, power in W, no units, no header), printed until it is stopped."""
    return (
        "nvidia-smi",
        f"--query-gpu={','.join(QUERY_FIELDS)}",
        "--format=csv,noheader,nounits",
        "-lms",
        str(int(interval_ms)),
    )


@dataclass(frozen=True, slots=True)
class GpuSample:
    """One GPU at one moment, as ``nvidia-smi`` printed it."""

    index: int
    memory_used_mib: float
    memory_total_mib: float
    utilization_pct: float | None = None
    power_w: float | None = None
    temperature_c: float | None = None
    stamp: str = ""
    """The box's own ``timestamp`` (``2026/12/06 02:32:06.123``, the box's local time)."""
    unread: tuple[tuple[str, str], ...] = ()
    """Figures the box did not give, and what it printed instead: ``(("power.draw",
    "[N/A]"),)``; shown as such, never as 0."""

    def said(self, field: str) -> str:
        """What the box printed for ``field`` when it is not a figure ('' when it is)."""
        return next((what for name, what in self.unread if name == field), "")

    @property
    def memory_share(self) -> float:
        """Used / total memory, in [0, 1]."""
        if self.memory_total_mib <= 0:
            return 0.0
        return min(1.0, max(0.0, self.memory_used_mib / self.memory_total_mib))

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "memory_used_mib": self.memory_used_mib,
            "memory_total_mib": self.memory_total_mib,
            "utilization_pct": self.utilization_pct,
            "power_w": self.power_w,
            "temperature_c": self.temperature_c,
            "stamp": self.stamp,
            **({"unread": [list(pair) for pair in self.unread]} if self.unread else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GpuSample:
        return cls(
            index=int(data["index"]),
            memory_used_mib=float(data["memory_used_mib"]),
            memory_total_mib=float(data["memory_total_mib"]),
            utilization_pct=_opt(data.get("utilization_pct")),
            power_w=_opt(data.get("power_w")),
            temperature_c=_opt(data.get("temperature_c")),
            stamp=str(data.get("stamp", "")),
            unread=tuple(
                (str(pair[0]), str(pair[1]))
                for pair in data.get("unread") or ()
                if isinstance(pair, list | tuple) and len(pair) == 2
            ),
        )


def _opt(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


UNITS: dict[str, tuple[str, float]] = {
    "memory.used": ("MiB", MAX_MEMORY_MIB),
    "memory.total": ("MiB", MAX_MEMORY_MIB),
    "utilization.gpu": ("%", 100.0),
    "power.draw": ("W", MAX_POWER_W),
    "temperature.gpu": ("C", MAX_TEMPERATURE_C),
}
"""Each figure's unit as ``nvidia-smi`` prints it (with ``nounits`` dropped; a number in
another unit — ``47.6 GiB``, ``287 mW`` — is not read as this one) and the most it can be."""


def read_figure(text: str, field: str) -> float | None:
    """``47600``, ``312.45`` or ``47600 MiB`` → the number; ``[N/A]``, ``[Not Supported]``,
    ``N/A``, a number in another unit, a negative one, one past what the figure can be, and
    anything else that is not a finite number → None (never 0)."""
    words = text.strip().split()
    if not words or len(words) > 2:
        return None
    unit, most = UNITS[field]
    if len(words) == 2 and words[1] != unit:
        return None
    try:
        value = float(words[0])
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0 or value > most:
        return None
    return value


def unreadable(text: str) -> str:
    """What ``nvidia-smi`` printed instead of a figure, as the box said it (``[N/A]``,
    ``[Not Supported]``), or why it is not read (``not a number``)."""
    word = text.strip()
    if word.startswith("[") and word.endswith("]") and len(word) <= 40:
        return word
    return "not a number" if word else "empty"


def parse_sample(line: str) -> GpuSample | None:
    """One line of the :data:`QUERY_FIELDS` query, or None when it is not one (a header, an
    error message, a GPU without memory figures, memory used past its total). A figure the
    box did not give (``[N/A]``) or gave in a form that cannot be trusted is None, with what
    it said in :attr:`GpuSample.unread`."""
    if len(line) > MAX_LINE:
        return None
    fields = [field.strip() for field in line.split(",")]
    if len(fields) != len(QUERY_FIELDS):
        return None
    stamp, index, used, total, util, power, temp = fields
    if not index.isdigit() or len(index) > 3:
        return None
    used_mib, total_mib = read_figure(used, "memory.used"), read_figure(total, "memory.total")
    if used_mib is None or total_mib is None or total_mib <= 0 or used_mib > total_mib:
        return None
    figures = {
        "utilization.gpu": (util, read_figure(util, "utilization.gpu")),
        "power.draw": (power, read_figure(power, "power.draw")),
        "temperature.gpu": (temp, read_figure(temp, "temperature.gpu")),
    }
    unread = tuple(
        (field, unreadable(text)) for field, (text, value) in figures.items() if value is None
    )
    return GpuSample(
        index=int(index),
        memory_used_mib=used_mib,
        memory_total_mib=total_mib,
        utilization_pct=figures["utilization.gpu"][1],
        power_w=figures["power.draw"][1],
        temperature_c=figures["temperature.gpu"][1],
        stamp=stamp[:40],
        unread=unread,
    )


@dataclass(frozen=True, slots=True)
class GpuStats:
    """One GPU's figures over a span (running sums: folding a sample is O(1))."""

    index: int
    samples: int = 0
    memory_total_mib: float = 0.0
    memory_peak_mib: float = 0.0
    memory_sum_mib: float = 0.0
    utilization_sum: float = 0.0
    utilization_samples: int = 0
    power_sum_w: float = 0.0
    power_samples: int = 0

    def add(self, sample: GpuSample) -> GpuStats:
        util, power = sample.utilization_pct, sample.power_w
        return replace(
            self,
            samples=self.samples + 1,
            memory_total_mib=sample.memory_total_mib,
            memory_peak_mib=max(self.memory_peak_mib, sample.memory_used_mib),
            memory_sum_mib=self.memory_sum_mib + sample.memory_used_mib,
            utilization_sum=self.utilization_sum + (util or 0.0),
            utilization_samples=self.utilization_samples + (util is not None),
            power_sum_w=self.power_sum_w + (power or 0.0),
            power_samples=self.power_samples + (power is not None),
        )

    @property
    def memory_mean_mib(self) -> float | None:
        return self.memory_sum_mib / self.samples if self.samples else None

    @property
    def utilization_pct(self) -> float | None:
        n = self.utilization_samples
        return self.utilization_sum / n if n else None

    @property
    def power_w(self) -> float | None:
        n = self.power_samples
        return self.power_sum_w / n if n else None

    def to_dict(self) -> dict[str, Any]:
        """The sums (read back) and the means (for readers)."""
        return {
            "index": self.index,
            "samples": self.samples,
            "memory_total_mib": self.memory_total_mib,
            "memory_peak_mib": self.memory_peak_mib,
            "memory_sum_mib": self.memory_sum_mib,
            "utilization_sum": self.utilization_sum,
            "utilization_samples": self.utilization_samples,
            "power_sum_w": self.power_sum_w,
            "power_samples": self.power_samples,
            "memory_mean_mib": self.memory_mean_mib,
            "utilization_mean_pct": self.utilization_pct,
            "power_mean_w": self.power_w,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GpuStats:
        return cls(
            index=int(data["index"]),
            samples=int(data.get("samples", 0)),
            memory_total_mib=float(data.get("memory_total_mib", 0.0)),
            memory_peak_mib=float(data.get("memory_peak_mib", 0.0)),
            memory_sum_mib=float(data.get("memory_sum_mib", 0.0)),
            utilization_sum=float(data.get("utilization_sum", 0.0)),
            utilization_samples=int(data.get("utilization_samples", 0)),
            power_sum_w=float(data.get("power_sum_w", 0.0)),
            power_samples=int(data.get("power_samples", 0)),
        )


def fold(stats: Sequence[GpuStats], samples: Iterable[GpuSample]) -> tuple[GpuStats, ...]:
    """``stats`` (one per GPU, by index) with ``samples`` added; a GPU seen first is added."""
    by_index = {s.index: s for s in stats}
    for sample in samples:
        by_index[sample.index] = by_index.get(sample.index, GpuStats(sample.index)).add(sample)
    return tuple(by_index[i] for i in sorted(by_index))


@dataclass(frozen=True, slots=True)
class GpuSpan:
    """Every GPU over one span (a ladder level): what a level's record carries."""

    gpus: tuple[GpuStats, ...] = ()

    @property
    def samples(self) -> int:
        return max((g.samples for g in self.gpus), default=0)

    @property
    def memory_peak_mib(self) -> float | None:
        """The fullest GPU's peak."""
        return max((g.memory_peak_mib for g in self.gpus if g.samples), default=None)

    @property
    def memory_total_mib(self) -> float | None:
        return max((g.memory_total_mib for g in self.gpus if g.samples), default=None)

    @property
    def memory_mean_mib(self) -> float | None:
        """The fullest GPU's mean (the GPUs of one server hold about the same)."""
        means = [g.memory_mean_mib for g in self.gpus if g.memory_mean_mib is not None]
        return max(means) if means else None

    @property
    def power_unknown(self) -> str:
        """Why this span's power is not known ('' when it is): a GPU that reported no power
        (``[N/A]``, ``[Not Supported]``) or under :data:`MIN_WORKING_POWER_W`, or one missing
        from most of the samples (a GPU gone from ``nvidia-smi``'s list) — a sum over the
        others would read low."""
        sampled = [g for g in self.gpus if g.samples]
        if not sampled:
            return "not sampled"
        silent = [str(g.index) for g in sampled if not g.power_samples]
        if silent:
            return f"no power from GPU {', '.join(silent)}"
        faint = [str(g.index) for g in sampled if (g.power_w or 0.0) < MIN_WORKING_POWER_W]
        if faint:
            return f"GPU {', '.join(faint)} reported under {MIN_WORKING_POWER_W:g} W"
        most = max(g.samples for g in sampled)
        missing = [str(g.index) for g in sampled if 2 * g.samples < most]
        if missing:
            return f"GPU {', '.join(missing)} missing from most samples"
        return ""

    @property
    def power_w(self) -> float | None:
        """Every sampled GPU's mean power, summed; None unless every GPU of the span
        reported it (:attr:`power_unknown`)."""
        if self.power_unknown:
            return None
        return sum(g.power_w or 0.0 for g in self.gpus if g.samples)

    @property
    def utilization_pct(self) -> float | None:
        """The sampled GPUs' mean utilisation."""
        utils = [g.utilization_pct for g in self.gpus if g.utilization_pct is not None]
        return sum(utils) / len(utils) if utils else None

    def tokens_per_joule(self, tok_s: float) -> float | None:
        """``tok_s`` output tokens per second over this span's power (None unless the power
        of every GPU of the span is known)."""
        power = self.power_w
        if power is None or not math.isfinite(tok_s) or tok_s < 0:
            return None
        ratio = tok_s / power  # power >= MIN_WORKING_POWER_W here: never a division by ~0
        return ratio if math.isfinite(ratio) else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "memory_peak_mib": self.memory_peak_mib,
            "memory_mean_mib": self.memory_mean_mib,
            "memory_total_mib": self.memory_total_mib,
            "power_w": self.power_w,
            "utilization_pct": self.utilization_pct,
            "gpus": [g.to_dict() for g in self.gpus],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GpuSpan:
        return cls(tuple(GpuStats.from_dict(g) for g in data.get("gpus", ())))


@dataclass(frozen=True, slots=True)
class TrialGpu:
    """What the GPUs did during one trial: memory while it loaded (peak), at ready, and per
    ladder level (by concurrency, every run of a repeated ladder together)."""

    load: tuple[GpuStats, ...] = ()
    """Samples taken before the server was ready (restart and load)."""
    ready: tuple[GpuSample, ...] = ()
    """The first sample of each GPU once the server was ready."""
    levels: tuple[tuple[int, GpuSpan], ...] = ()
    """(concurrency, its span) for every level sampled while it was measured."""
    lost: str = ""
    """Why the samples stopped during the trial ('' when they did not): ``nvidia-smi``
    silent or gone; the figures above cover only what was sampled before."""

    def level(self, concurrency: int) -> GpuSpan | None:
        return next((span for c, span in self.levels if c == concurrency), None)

    def with_level(self, concurrency: int, samples: Sequence[GpuSample]) -> TrialGpu:
        span = self.level(concurrency) or GpuSpan()
        grown = GpuSpan(fold(span.gpus, samples))
        levels = tuple(sorted({**dict(self.levels), concurrency: grown}.items()))
        return replace(self, levels=levels)

    def with_load(self, samples: Sequence[GpuSample]) -> TrialGpu:
        return replace(self, load=fold(self.load, samples))

    def with_ready(self, samples: Sequence[GpuSample]) -> TrialGpu:
        """The ready memory: each GPU's first sample once ready (later ones do not change
        it)."""
        known = {s.index for s in self.ready}
        fresh = [s for s in samples if s.index not in known]
        if not fresh:
            return self
        return replace(self, ready=tuple(sorted((*self.ready, *fresh), key=lambda s: s.index)))

    @property
    def load_peak_mib(self) -> float | None:
        """The fullest GPU's peak while loading: what was sampled before ready, or at ready
        (whatever the load allocated is still held then; a short load may fall between
        two samples)."""
        peaks = [g.memory_peak_mib for g in self.load if g.samples]
        peaks += [s.memory_used_mib for s in self.ready]
        return max(peaks) if peaks else None

    @property
    def ready_mib(self) -> float | None:
        """The fullest GPU's memory once ready."""
        return max((s.memory_used_mib for s in self.ready), default=None)

    @property
    def memory_total_mib(self) -> float | None:
        totals = [s.memory_total_mib for s in self.ready] + [
            g.memory_total_mib for g in self.load if g.samples
        ]
        return max(totals) if totals else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "load": [g.to_dict() for g in self.load],
            "load_peak_mib": self.load_peak_mib,
            "ready": [s.to_dict() for s in self.ready],
            "ready_mib": self.ready_mib,
            "memory_total_mib": self.memory_total_mib,
            "levels": [{"concurrency": c, **span.to_dict()} for c, span in self.levels],
            **({"lost": self.lost} if self.lost else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrialGpu:
        return cls(
            load=tuple(GpuStats.from_dict(g) for g in data.get("load", ())),
            ready=tuple(GpuSample.from_dict(s) for s in data.get("ready", ())),
            levels=tuple(
                (int(lv["concurrency"]), GpuSpan.from_dict(lv)) for lv in data.get("levels", ())
            ),
            lost=str(data.get("lost") or ""),
        )
