"""Number formats: one rule for how each kind of figure is written, on every surface.

The console, the headless printer and the reports all show tok/s, milliseconds, token counts
and ratios; writing each once keeps a figure identical wherever it appears (the console's
``1,730`` is the report's ``1,730.4`` rounded the same way, never ``1730.0`` elsewhere).
"""

from __future__ import annotations

import math

DASH = "—"
"""What an unknown figure shows as."""


def _unknown(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def format_rate(value: float | None, digits: int = 0) -> str:
    """tok/s with thousands separators (``digits`` decimals; none on screen); a dash when
    unknown."""
    if _unknown(value):
        return DASH
    assert value is not None
    return f"{value:,.{digits}f}"


def format_tok_s(value: float | None, digits: int = 0) -> str:
    """``1,730 tok/s``; a dash when unknown."""
    return DASH if _unknown(value) else f"{format_rate(value, digits)} tok/s"


def format_rate_ci(
    value: float | None, half_width: float | None, digits: int = 0, *, sep: str = " ± "
) -> str:
    """``1,979 ± 12``: a mean over repeated runs and its 95 % CI half-width (the figure
    alone when it was measured once); a dash when unknown."""
    text = format_rate(value, digits)
    if half_width is None or _unknown(value) or _unknown(half_width):
        return text
    return f"{text}{sep}{format_rate(half_width, digits)}"


def format_ms(value: float | None) -> str:
    """``1,234 ms``; a dash when unknown."""
    if _unknown(value):
        return DASH
    assert value is not None
    return f"{value:,.0f} ms"


def format_int(value: int | None) -> str:
    """A count with thousands separators; a dash when unknown."""
    return DASH if value is None else f"{value:,}"


def format_ratio(value: float | None, digits: int = 2) -> str:
    """A ratio such as an accept length (``3.67``); a dash when unknown."""
    if _unknown(value):
        return DASH
    assert value is not None
    return f"{value:.{digits}f}"


def format_elapsed(seconds: float | None) -> str:
    """``m:ss`` (or ``h:mm:ss``) for a non-negative duration; empty for ``None``."""
    if seconds is None or math.isnan(seconds):
        return ""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def format_peak(
    value: float | None,
    concurrency: int | None,
    digits: int = 0,
    half_width: float | None = None,
) -> str:
    """``1,730 (c=32)``: a peak aggregate and where it was reached (``1,730 ± 12 (c=32)``
    with its 95 % CI half-width over repeated runs); a dash when unknown."""
    if _unknown(value):
        return DASH
    where = f" (c={concurrency})" if concurrency is not None else ""
    return f"{format_rate_ci(value, half_width, digits)}{where}"
