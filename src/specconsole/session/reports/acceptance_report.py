"""The report's acceptance sections: per level, what the engine's own counters counted, and
the trials whose server ran without the speculation they asked for.

Why a module of its own: acceptance read from the engine's counters (drafts, draft tokens,
accepted, per position; ``core.measure.acceptance``) is the figure users trust, and it has
more columns than the trials table can hold; the "speculation off" trials are results that
must not be read as ordinary successes. The markdown report adds both sections when there is
something to show (the JSON report carries the same figures per level).
"""

from __future__ import annotations

from collections.abc import Sequence

from specconsole.core.config.model import ServerConfig
from specconsole.core.machine.state import TrialRecord
from specconsole.present.figures.acceptance import (
    agreement,
    chunk_per_step,
    output_check,
    per_position_bars,
    sparkline,
    unknown_acceptance,
)
from specconsole.present.labels import record_label

__all__ = ["acceptance_lines"]


def acceptance_lines(trials: Sequence[TrialRecord], base: ServerConfig | None) -> list[str]:
    """Markdown lines: the counters per level (when any level has them), then the trials
    marked "speculation off" with their reasons (when any is)."""
    out: list[str] = []
    counted = [t for t in trials if any(lv.counters is not None for lv in t.levels)]
    if counted:
        out += [
            "",
            "## Acceptance per level (the engine's own counters)",
            "",
            "| trial | config | c | drafts | drafted | accepted | accept length | accept rate "
            "| per position | over time | client tokens/chunk | server output tokens |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---|---|---|---:|",
        ]
        for t in counted:
            label = record_label(t, base)
            per_step = chunk_per_step(t.effective)
            for lv in sorted(t.levels, key=lambda lv: lv.concurrency):
                c = lv.counters
                if c is None:
                    continue
                if unknown := unknown_acceptance(c):
                    out.append(
                        f"| {t.index + 1} | {label} | {lv.concurrency} | — | — | — | {unknown} "
                        f"| — | — | — | {output_check(c) or '—'} | — |"
                    )
                    continue
                length = "—" if c.acceptance_length is None else f"{c.acceptance_length:.3f}"
                rate = "—" if c.acceptance_rate is None else f"{c.acceptance_rate:.1%}"
                output = "—" if c.output_tokens is None else str(c.output_tokens)
                drafted = str(c.draft_tokens) if c.draft_tokens else "—"
                over = sparkline(c.series) or "—"
                checks = (agreement(lv, per_step), output_check(c))
                client = " · ".join(x for x in checks if x) or "—"
                out.append(
                    f"| {t.index + 1} | {label} | {lv.concurrency} | {c.drafts} | "
                    f"{drafted} | {c.accepted} | {length} | {rate} | "
                    f"{per_position_bars(c.per_position_rate) or '—'} | {over} | {client} | "
                    f"{output} |"
                )
    off = [t for t in trials if t.speculation_off]
    if off:
        out += ["", "## Speculation off (never the best of a sweep)", ""]
        out += [
            f"- trial {t.index + 1} `{record_label(t, base)}`: {t.speculation_off}" for t in off
        ]
    return out
