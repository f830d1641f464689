"""The report's GPU section: memory and power per trial, next to the throughput charts, and
what each trial's draft costs in KV tokens.

Why a module of its own: the question after a crash in load is "how close to the limit did
the configurations that loaded come?", and the cost of a throughput figure is its energy.
The section answers both from ``trials.jsonl`` alone — per trial the memory at ready, the
peak while loading and, for a crash, each GPU's memory at the fatal line; per level the
GPUs' mean power, utilisation, memory peak and tokens per joule next to its tok/s — as
rows the Markdown and the HTML report lay out alike (the JSON report carries the same
figures in each trial and level).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from specconsole.core.config.model import ServerConfig
from specconsole.core.machine.state import TrialRecord
from specconsole.core.search.draftcost import draft_cost
from specconsole.present.figures.draftcost import draft_cost_text
from specconsole.present.figures.gpu import crash_memory, gib, whole_watts
from specconsole.present.formats import DASH, format_rate
from specconsole.present.labels import record_label

__all__ = [
    "LEVEL_HEADERS",
    "MEMORY_HEADERS",
    "draft_cost_lines",
    "gpu_markdown",
    "level_rows",
    "memory_rows",
    "sampled",
]

MEMORY_HEADERS: tuple[str, ...] = (
    "trial",
    "config",
    "GPU memory at ready (GiB)",
    "peak while loading (GiB)",
    "of (GiB)",
    "at the fatal line",
)
LEVEL_HEADERS: tuple[str, ...] = (
    "trial",
    "c",
    "aggregate tok/s",
    "power (W)",
    "utilisation",
    "memory peak (GiB)",
    "tok/J",
)


def sampled(trials: Sequence[TrialRecord]) -> list[TrialRecord]:
    """The trials whose GPUs were sampled (or whose crash recorded their memory)."""
    return [t for t in trials if t.gpu is not None or (t.crash and t.crash.gpu_memory)]


def memory_rows(
    trials: Sequence[TrialRecord], label: Callable[[TrialRecord], str]
) -> list[tuple[str, ...]]:
    """One row per sampled trial: memory at ready, the load's peak, the total, at a crash."""
    rows = []
    for t in sampled(trials):
        gpu = t.gpu
        total = None if gpu is None else gpu.memory_total_mib
        at_crash = crash_memory(t.crash.gpu_memory) if t.crash and t.crash.gpu_memory else ""
        if total is None and t.crash and t.crash.gpu_memory:
            total = max(s.memory_total_mib for s in t.crash.gpu_memory)
        rows.append(
            (
                str(t.index + 1),
                label(t),
                gib(None if gpu is None else gpu.ready_mib),
                gib(None if gpu is None else gpu.load_peak_mib),
                gib(total),
                at_crash.removesuffix(" at the fatal line") or DASH,
            )
        )
    return rows


def level_rows(trials: Sequence[TrialRecord]) -> list[tuple[str, ...]]:
    """One row per sampled level: power, utilisation, memory peak and tokens per joule."""
    rows = []
    for t in sampled(trials):
        for lv in sorted(t.levels, key=lambda lv: lv.concurrency):
            span = lv.gpu
            if span is None or not span.samples:
                continue
            util = span.utilization_pct
            tpj = lv.tokens_per_joule
            why = span.power_unknown  # said, never a partial sum or 0 W
            rows.append(
                (
                    str(t.index + 1),
                    str(lv.concurrency),
                    format_rate(lv.output_tok_s, 1),
                    f"unknown ({why})" if why else whole_watts(span.power_w),
                    DASH if util is None else f"{util:.0f}%",
                    gib(span.memory_peak_mib),
                    "unknown" if why else DASH if tpj is None else f"{tpj:.2f}",
                )
            )
    return rows


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |"]
    out.append("|" + "|".join("---" if h == "config" else "---:" for h in headers) + "|")
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def draft_cost_lines(trials: Sequence[TrialRecord], base: ServerConfig | None) -> list[str]:
    """``trial 3 steps=3 draft=4: capacity 349,078; the draft costs …`` per speculative
    trial that loaded (nothing when none can say)."""
    out = []
    for t in trials:
        text = draft_cost_text(draft_cost(t, trials))
        if text and t.capacity is not None:
            label = record_label(t, base)
            out.append(f"trial {t.index + 1} {label}: capacity {t.capacity:,}; {text}")
    return out


def gpu_markdown(trials: Sequence[TrialRecord], base: ServerConfig | None) -> list[str]:
    """The Markdown section (nothing when no trial was sampled), and the draft's KV cost."""
    costs = draft_cost_lines(trials, base)
    cost = ["", "## KV cache: what the draft costs", "", *(f"- {c}" for c in costs)]
    return _gpu_markdown(trials, base) + (cost if costs else [])


def _gpu_markdown(trials: Sequence[TrialRecord], base: ServerConfig | None) -> list[str]:
    memory = memory_rows(trials, lambda t: record_label(t, base))
    if not memory:
        return []
    out = ["", "## GPU memory and power per trial", ""]
    out += _md_table(MEMORY_HEADERS, memory)
    levels = level_rows(trials)
    if levels:
        out += ["", "Per level (the GPUs' means while the level was measured):", ""]
        out += _md_table(LEVEL_HEADERS, levels)
    return out
