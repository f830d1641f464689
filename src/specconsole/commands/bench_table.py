"""The human-readable table ``specconsole bench`` prints: one row per level, the two headline
numbers, goodput, errors, repeats' statistics and why a run is partial.

Why apart from the command (:mod:`specconsole.commands.bench`): the command parses and bounds
its options and runs the ladder; how the result reads is a concern of its own.
"""

from __future__ import annotations

from specconsole.core.measure.metrics import LevelMetrics
from specconsole.core.measure.result import BenchResult

__all__ = ["HEADERS", "format_repeat_stats", "format_table"]


def _row(level: LevelMetrics) -> list[str]:
    lat = level.latency_ms
    counted = level.counters  # the engine's own counters (--engine) win over /server_info
    length = counted.acceptance_length if counted is not None else level.accept_length
    accept = f"{length:.2f}" if length is not None else "-"
    return [
        f"{level.max_concurrency}{'*' if level.partial else ''}",
        f"{level.completed}/{level.failed}",
        f"{level.output_throughput:.1f}",
        f"{level.request_throughput:.2f}",
        f"{level.mean_decode_tok_s:.1f}",
        f"{level.mean_request_tok_s:.1f}",
        f"{lat['median_ttft_ms']:.1f}",
        f"{lat['p99_ttft_ms']:.1f}",
        f"{lat['median_tpot_ms']:.2f}",
        f"{lat['p99_itl_ms']:.2f}",
        f"{level.concurrency:.2f}",
        accept,
    ]


HEADERS = [
    "c",
    "ok/fail",
    "out tok/s",
    "req/s",
    "decode/req",
    "tok/s/req",
    "TTFT med",
    "TTFT p99",
    "TPOT med",
    "ITL p99",
    "conc",
    "accept",
]


def format_table(result: BenchResult) -> str:
    """The human-readable results table with the two headline numbers."""
    rows = [HEADERS] + [_row(level) for level in result.levels]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    single = result.single_request_level
    peak = result.peak_level
    lines.append("")
    lines.append(
        f"single-request decode tok/s: {result.single_request_tok_s:.1f}"
        + (f" (c={single.max_concurrency})" if single else "")
    )
    lines.append(
        f"peak aggregate output tok/s: {result.peak_aggregate_tok_s:.1f}"
        + (f" (c={peak.max_concurrency})" if peak else "")
    )
    lines.append("latencies in ms; decode/req = (n-1)/(e2e-ttft); tok/s/req = n/e2e")
    lines.extend(_extra_percentiles(result))
    for level in result.levels:
        if level.good_requests is not None:
            lines.append(
                f"c={level.max_concurrency} goodput: {level.request_goodput or 0.0:.2f} req/s "
                f"({level.good_requests}/{level.completed} requests met "
                + " ".join(f"{k}<={v:g}" for k, v in (level.slo or {}).items())
                + ")"
            )
    for level in result.levels:
        if level.errors:
            kinds = ", ".join(f"{k} x{n}" for k, n in sorted(level.errors.items()))
            lines.append(f"c={level.max_concurrency} errors: {kinds}")
    lines.extend(format_repeat_stats(result))
    if result.partial:
        why = "cancelled" if result.cancelled else (result.error or "not every level ran")
        cut = any(level.partial for level in result.levels)  # the rows shown (run 1's)
        lines.append(f"PARTIAL: {why}" + (" (* marks a level cut short)" if cut else ""))
    return "\n".join(lines)


def _extra_percentiles(result: BenchResult) -> list[str]:
    """Percentiles asked for beyond the table's (``--percentiles``), one line per level."""
    lines: list[str] = []
    for level in result.levels:
        lat = level.latency_ms
        extra = sorted(
            {k.split("_", 1)[0] for k in lat if k.startswith("p")} - {"p90", "p95", "p99"},
            key=lambda label: float(label[1:]),
        )
        if not extra:
            continue
        parts = [
            f"{label} TTFT {lat[f'{label}_ttft_ms']:.1f} TPOT {lat[f'{label}_tpot_ms']:.2f} "
            f"ITL {lat[f'{label}_itl_ms']:.2f}"
            for label in extra
            if f"{label}_ttft_ms" in lat
        ]
        lines.append(f"c={level.max_concurrency} " + "; ".join(parts))
    return lines


def format_repeat_stats(result: BenchResult) -> list[str]:
    """``name: mean ± CI half-width (std s, n runs)`` for every headline number, when the
    ladder ran more than once."""
    if len(result.repeats) < 2:
        return []
    lines = [
        f"over {len(result.repeats)} runs (the table above is run 1; --json prints every run): "
        "mean ± 95% CI half-width (sample std)"
    ]
    for name, sp in result.repeat_stats().items():
        lines.append(f"  {name:<28} {sp.mean:10.2f} ± {sp.ci_half_width:8.2f} (std {sp.std:.2f})")
    return lines
