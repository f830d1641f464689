"""How acceptance reads: where a level's figure came from, its drift within the level, the
share of drafts kept at each position, and whether the client's own count agrees.

Why: acceptance is the figure users distrust most (stuck at 1 after an upgrade, drifting over
hours, defined differently by each tool). So every place that shows it — the trial details,
the headless lines, the reports — says the same four things the same way: the engine's own
figure (its counters' deltas around the level), a sparkline of it during the level (drift
shows), a small bar per draft position (where the engine counts them), and the load
generator's tokens per chunk beside it, flagged when the two disagree by more than
``ACCEPT_TOLERANCE`` — where the engine streams one chunk per decode step
(``Endpoints.chunk_per_step``; llama-server sends a chunk per token, so its figure is shown
and never flagged). Counters that cannot be trusted (a reset mid-level, an answer that was
not Prometheus text) read ``accept unknown (counter reset (…))`` everywhere, never a figure,
and the server's output-token count is flagged when it strays from the load generator's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from specconsole.core.engine.registry import EngineNotFound, engine_for
from specconsole.core.measure.acceptance import OUTPUT_BAND, CounterAcceptance
from specconsole.core.measure.trials import ACCEPT_TOLERANCE

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig
    from specconsole.core.machine.state import LevelSummary

__all__ = [
    "agreement",
    "chunk_per_step",
    "level_acceptance",
    "output_check",
    "per_position_bars",
    "sparkline",
    "unknown_acceptance",
]

_BLOCKS = "▁▂▃▄▅▆▇█"
MIN_SPAN = 0.2
"""A sparkline's scale spans at least this many tokens per step (noise stays flat)."""


def sparkline(values: Sequence[float]) -> str:
    """One block per value, its height the value on a scale from the lowest to the highest
    (at least :data:`MIN_SPAN` apart)."""
    if not values:
        return ""
    low, high = min(values), max(values)
    if high - low < MIN_SPAN:
        middle = (high + low) / 2
        low, high = middle - MIN_SPAN / 2, middle + MIN_SPAN / 2
    top = len(_BLOCKS) - 1
    return "".join(_BLOCKS[round((v - low) / (high - low) * top)] for v in values)


def per_position_bars(rates: Sequence[float]) -> str:
    """``▇▆▄▂ 0.92 0.81 0.55 0.27``: the share of drafts whose k-th token was kept."""
    if not rates:
        return ""
    top = len(_BLOCKS) - 1
    bars = "".join(_BLOCKS[round(min(1.0, max(0.0, r)) * top)] for r in rates)
    return f"{bars} {' '.join(f'{r:.2f}' for r in rates)}"


def chunk_per_step(config: ServerConfig) -> bool:
    """Whether ``config``'s engine streams one chunk per decode step (``Endpoints.chunk_per_step``:
    only then is the client's tokens per chunk an acceptance length)."""
    try:
        return engine_for(config).endpoints.chunk_per_step
    except EngineNotFound:
        return True


def agreement(level: LevelSummary, per_step: bool = True) -> str:
    """The cross-check in words: ``client 3.66 tokens/chunk: agrees`` or, beyond the
    tolerance, ``⚠ client 3.10 tokens/chunk, 16% off the engine's 3.69``; '' when either is
    unknown. When the engine's stream is not one chunk per step (``per_step`` False) the
    figure is shown as what it is, never as a disagreement."""
    off = level.accept_disagreement
    client = level.client_accept_length
    if off is None or client is None or level.accept_length is None:
        return ""
    if not per_step:
        return f"client {client:.2f} tokens/chunk (not one chunk per step: no cross-check)"
    if off <= ACCEPT_TOLERANCE:
        return f"client {client:.2f} tokens/chunk: agrees"
    return (
        f"⚠ client {client:.2f} tokens/chunk, {off:.0%} off the engine's {level.accept_length:.2f}"
    )


def unknown_acceptance(counters: CounterAcceptance | None) -> str:
    """``unknown (counter reset (…))`` for counters that cannot be trusted ('' otherwise)."""
    return "" if counters is None or counters.trusted else f"unknown ({counters.unknown})"


def output_check(counters: CounterAcceptance | None) -> str:
    """The server's output-token count against the load generator's, flagged beyond
    :data:`OUTPUT_BAND`: ``⚠ the server counted 1,200 output tokens, the client 1,000 (20%
    apart)``; '' when they agree or either is unknown."""
    gap = None if counters is None else counters.output_gap
    if counters is None or gap is None or gap <= OUTPUT_BAND:
        return ""
    return (
        f"⚠ the server counted {counters.output_tokens:,} output tokens, the client "
        f"{counters.client_output_tokens:,} ({gap:.0%} apart)"
    )


def level_acceptance(level: LevelSummary, per_step: bool = True) -> list[str]:
    """A level's acceptance lines for the trial details (nothing without a figure; counters
    that cannot be trusted say so, with the reason); ``per_step``: :func:`chunk_per_step`."""
    counters = level.counters
    check = output_check(counters)
    if unknown := unknown_acceptance(counters):
        return [f"c={level.concurrency} accept {unknown}" + (f" · {check}" if check else "")]
    if level.accept_length is None:
        return []
    source = "the engine's counters" if counters is not None and counters.speculated else None
    head = f"c={level.concurrency} accept {level.accept_length:.2f}"
    head += f" ({source})" if source else ""
    for flag in (agreement(level, per_step), check):
        head += f" · {flag}" if flag else ""
    lines = [head]
    if counters is not None and counters.series:
        every = counters.series_interval_s
        span = f"{min(counters.series):.2f}–{max(counters.series):.2f}"
        lines.append(
            f"  over time {sparkline(counters.series)} {span}"
            + (f", every {every:g} s" if every else "")
        )
    if counters is not None and counters.per_position_rate:
        lines.append(f"  per position {per_position_bars(counters.per_position_rate)}")
    return lines
