"""How the GPUs read to a person: the console's live line, the memory at a crash, a trial's
GPU figures and a level's energy.

Why one module: the same figures appear in the console (a line per width under the header),
the crash banner ("GPU 0-3: 42.5 / 48.0 GiB at the fatal line"), the trial details, the
headless summary and the reports, and each must read the same everywhere — memory in GiB to
one decimal, power in whole watts (halves up: 0.5 W reads 1 W — a power the box gave as more
than nothing never reads 0 W), tokens per joule to two decimals; a figure the box did not
give reads as what it printed (``[N/A]``), and an energy whose power is not known for every GPU
reads "tok/J unknown (no power from GPU 2)" — never 0 W or 0 %. The live line picks the
richest form that fits the width, from a bar, used/total, utilisation, power and temperature
per GPU at 120 columns down to one line for all of them at 80 (a tiny bar per GPU). The form
is chosen for the widest figures the GPUs can show (full memory, 100 %, three-digit watts), so
it does not switch as the figures move; and between trials, while the server still holds its
memory, the line keeps that form with the last reading's memory, marked ``last reading`` and
its time (issue 42 #8), instead of vanishing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING

from specconsole.present.formats import DASH

if TYPE_CHECKING:
    from specconsole.core.machine.state import LevelSummary, TrialRecord
    from specconsole.core.measure.gpu import GpuSample, GpuSpan, TrialGpu

__all__ = [
    "brief",
    "crash_memory",
    "gib",
    "gpu_line",
    "hot",
    "level_energy",
    "memory_groups",
    "telemetry_lost",
    "tok_per_joule",
    "trial_gpu_lines",
    "whole_watts",
]

HOT_SHARE = 0.95
"""A GPU this full is shown as close to its limit."""
_EIGHTHS = " ▏▎▍▌▋▊▉█"
_HEIGHTS = "▁▂▃▄▅▆▇█"


def gib(mib: float | None) -> str:
    """``42.1`` (GiB, one decimal) from MiB; a dash when unknown."""
    return DASH if mib is None else f"{mib / 1024:.1f}"


def tok_per_joule(value: float | None) -> str:
    """``1.70 tok/J``; a dash when unknown."""
    return DASH if value is None else f"{value:.2f} tok/J"


def whole_watts(value: float | None) -> str:
    """``1,148`` (watts, halves rounded up); a dash when unknown. Not Python's rounding
    (halves to even: 0.5 → 0, 2.5 → 2): 0.5 W would read as 0 W, the figure a power the box
    could not read must never look like. The float's exact value is rounded (``Decimal``)."""
    if value is None or value != value or value in (float("inf"), float("-inf")):
        return DASH
    return f"{Decimal(value).quantize(Decimal(1), rounding=ROUND_HALF_UP):,}"


def _watts(value: float | None) -> str:
    return DASH if value is None else f"{whole_watts(value)} W"


def _pct(value: float | None) -> str:
    return DASH if value is None else f"{value:.0f}%"


def bar(share: float, width: int) -> str:
    """A bar of exactly ``width`` cells filled to ``share`` in eighths of a cell."""
    share = min(1.0, max(0.0, share))
    eighths = round(share * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (_EIGHTHS[part] if part and full < width else "")
    return text.ljust(width, "░" if share < 1 else "█")


def hot(samples: Sequence[GpuSample]) -> bool:
    """Whether some GPU is close to its memory limit."""
    return any(s.memory_share >= HOT_SHARE for s in samples)


def _power(s: GpuSample) -> str:
    """A GPU's power, or what the box printed instead (``[N/A]``): never 0 W."""
    return _watts(s.power_w) if s.power_w is not None else s.said("power.draw") or DASH


def _util(s: GpuSample) -> str:
    return (
        _pct(s.utilization_pct)
        if s.utilization_pct is not None
        else (s.said("utilization.gpu") or DASH)
    )


def _widest(s: GpuSample) -> GpuSample:
    """``s`` with the widest figures it could show: the form chosen for it holds them all."""
    return replace(
        s,
        memory_used_mib=max(s.memory_used_mib, s.memory_total_mib),
        utilization_pct=None if s.utilization_pct is None else 100.0,
        power_w=None if s.power_w is None else max(s.power_w, 999.0),
        temperature_c=None if s.temperature_c is None else max(s.temperature_c, 99.0),
    )


def _memory_only(s: GpuSample, form: int) -> str:
    used, total = gib(s.memory_used_mib), gib(s.memory_total_mib)
    if form == 0:
        return f"GPU{s.index} ▕{bar(s.memory_share, 10)}▏ {used}/{total} GiB"
    if form == 1:
        return f"GPU{s.index} ▕{bar(s.memory_share, 6)}▏{used}/{total} GiB"
    return f"{s.index}▕{bar(s.memory_share, 4)}▏{used}/{total}"


def _per_gpu(s: GpuSample, form: int) -> str:
    used, total = gib(s.memory_used_mib), gib(s.memory_total_mib)
    if form == 0:
        temp = "" if s.temperature_c is None else f" {s.temperature_c:.0f}°C"
        return (
            f"GPU{s.index} ▕{bar(s.memory_share, 10)}▏ {used}/{total} GiB "
            f"{_util(s):>4} {_power(s):>5}{temp}"
        )
    if form == 1:
        return (
            f"GPU{s.index} ▕{bar(s.memory_share, 6)}▏{used}/{total} GiB "
            f"{_util(s):>4} {_power(s).replace(' ', '')}"
        )
    return (
        f"{s.index}▕{bar(s.memory_share, 4)}▏{used}/{total} "
        f"{_util(s):>4} {_power(s).replace(' ', '')}"
    )


def _all_memory(samples: Sequence[GpuSample], form: int) -> str:
    total = max(s.memory_total_mib for s in samples)
    if form == 0:
        each = " ".join(f"▕{bar(s.memory_share, 3)}▏{gib(s.memory_used_mib)}" for s in samples)
        return f"GPUs {each} /{gib(total)} GiB"
    heights = "".join(_HEIGHTS[min(7, int(s.memory_share * 8))] for s in samples)
    used = max(s.memory_used_mib for s in samples)
    return f"GPUs {heights} {gib(used)}/{gib(total)} GiB"


def _all_gpus(samples: Sequence[GpuSample], form: int) -> str:
    """Every GPU in one: its own memory (a bar and GiB, or a bar's height), then the mean
    utilisation and the total power (and the hottest temperature, when it fits)."""
    utils = [s.utilization_pct for s in samples if s.utilization_pct is not None]
    powers = [s.power_w for s in samples if s.power_w is not None]
    temps = [s.temperature_c for s in samples if s.temperature_c is not None]
    util = sum(utils) / len(utils) if utils else None
    power = sum(powers) if powers and len(powers) == len(samples) else None  # all or none
    unsaid = next((s.said("power.draw") for s in samples if s.power_w is None), "")
    watts = _watts(power) if power is not None else f"power {unsaid or DASH}"
    text = f"{_all_memory(samples, form)} · {_pct(util)} · {watts}"
    if form < 2 and temps:
        text += f" · {max(temps):.0f}°C"
    return text


LAST_READING = "last reading"
"""The mark of a line that shows the GPUs as last sampled, not live."""


def _form(samples: Sequence[GpuSample], width: int) -> tuple[bool, int]:
    """``(per GPU, form)``: the richest form whose widest figures fit ``width``."""
    widest = [_widest(s) for s in samples]
    for form in (0, 1, 2):
        if len("  ".join(_per_gpu(s, form) for s in widest)) <= width:
            return True, form
    for form in (0, 1):
        if len(_all_gpus(widest, form)) <= width:
            return False, form
    return False, 2


def gpu_line(samples: Sequence[GpuSample], width: int, *, last: bool = False) -> str:
    """The line for ``width`` cells: per GPU when that fits, else every GPU in one (a bar per
    GPU, the fullest one's memory, mean utilisation, total power). ``last``: the samples are
    the last reading of a server that still holds its memory — the same form, its memory
    alone (utilisation and power were the trial's), marked with :data:`LAST_READING` and the
    box's time of it."""
    if not samples:
        return ""
    per_gpu, form = _form(samples, width)
    if not last:
        if per_gpu:
            text = "  ".join(_per_gpu(s, form) for s in samples)
        else:
            text = _all_gpus(samples, form)
        return text[:width]
    if per_gpu:
        memory = "  ".join(_memory_only(s, form) for s in samples)
    else:
        memory = _all_memory(samples, min(form, 1))
    at = max((s.stamp for s in samples), default="").rpartition(" ")[2].split(".")[0]
    for mark in (f"{LAST_READING} {at}" if at else LAST_READING, LAST_READING, "last"):
        if len(text := f"{memory} · {mark}") <= width:
            return text
    return memory[:width]


def memory_groups(samples: Sequence[GpuSample]) -> str:
    """``GPU 0-3: 42.5 / 48.0 GiB`` (GPUs holding the same, together), or one entry per GPU
    (``GPU 0: 42.5 / 48.0 GiB · GPU 1: 40.1 / 48.0 GiB``)."""
    groups: list[tuple[list[int], str]] = []
    for s in sorted(samples, key=lambda x: x.index):
        text = f"{gib(s.memory_used_mib)} / {gib(s.memory_total_mib)} GiB"
        if groups and groups[-1][1] == text and groups[-1][0][-1] == s.index - 1:
            groups[-1][0].append(s.index)
        else:
            groups.append(([s.index], text))
    parts = []
    for indices, text in groups:
        name = f"{indices[0]}-{indices[-1]}" if len(indices) > 1 else str(indices[0])
        parts.append(f"GPU {name}: {text}")
    return " · ".join(parts)


def crash_memory(samples: Sequence[GpuSample]) -> str:
    """The memory at the fatal line, for the banner and the report ('' when not sampled)."""
    return f"{memory_groups(samples)} at the fatal line" if samples else ""


def level_energy(level: LevelSummary) -> str:
    """``1.70 tok/J · 1,148 W · 100% · peak 43.1 GiB`` for a sampled level ('' when not)."""
    span: GpuSpan | None = level.gpu
    if span is None or not span.samples:
        return ""
    if why := span.power_unknown:
        energy = f"tok/J unknown ({why})"
    else:
        energy = f"{tok_per_joule(level.tokens_per_joule)} · {_watts(span.power_w)}"
    return f"{energy} · {_pct(span.utilization_pct)} · peak {gib(span.memory_peak_mib)} GiB"


def _load_line(gpu: TrialGpu) -> str | None:
    total = gpu.memory_total_mib
    if total is None:
        return None
    parts = []
    if gpu.ready_mib is not None:
        parts.append(f"{gib(gpu.ready_mib)} at ready")
    if gpu.load_peak_mib is not None:
        parts.append(f"peak {gib(gpu.load_peak_mib)} while loading")
    return f"GPU memory: {', '.join(parts)} (of {gib(total)} GiB)" if parts else None


def brief(record: TrialRecord) -> str:
    """A trial's GPU figures in a few words, for the headless summary: ``GPU memory 43.1 of
    48.0 GiB at ready, 1.74 tok/J at c=64`` (the peak level's energy); '' when not sampled."""
    gpu = record.gpu
    parts = []
    if gpu is not None and gpu.ready_mib is not None:
        parts.append(f"GPU memory {gib(gpu.ready_mib)} of {gib(gpu.memory_total_mib)} GiB at ready")
    peak = record.peak_level
    if peak is not None and peak.tokens_per_joule is not None:
        parts.append(f"{tok_per_joule(peak.tokens_per_joule)} at c={peak.concurrency}")
    if record.crash is not None and record.crash.gpu_memory:
        parts.append(crash_memory(record.crash.gpu_memory))
    return ", ".join(parts)


def trial_gpu_lines(record: TrialRecord) -> list[str]:
    """A trial's GPU figures for its details: memory while loading and at ready, each
    level's energy, the memory at a crash's fatal line."""
    lines: list[str] = []
    if record.gpu is not None and (load := _load_line(record.gpu)) is not None:
        lines.append(load)
    for level in sorted(record.levels, key=lambda lv: lv.concurrency):
        energy = level_energy(level)
        if energy:
            lines.append(f"c={level.concurrency} GPUs: {energy}")
    if record.crash is not None and record.crash.gpu_memory:
        lines.append(f"GPU memory: {crash_memory(record.crash.gpu_memory)}")
    if lost := telemetry_lost(record):
        lines.append(lost)
    return lines


def telemetry_lost(record: TrialRecord) -> str:
    """``GPU telemetry lost: nvidia-smi printed nothing for 5 s (the GPU figures end there)``
    for a trial whose samples stopped ('' when they did not): the details and the report."""
    if record.gpu is None or not record.gpu.lost:
        return ""
    return f"GPU telemetry lost: {record.gpu.lost} (the GPU figures end there, they are not 0)"
