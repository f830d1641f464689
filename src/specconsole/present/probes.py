"""A rate search's probes as a person reads them (``objective = "max_rate_under_slo"``).

Why here: the Markdown and HTML reports, the JSON report's text fields and the console's
trial details name each probe the same way — the rate offered, whether every SLO held, and
the figures that broke them — and the answer (``TrialRecord.slo_rate``) with its bracket.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from specconsole.present.formats import format_rate

if TYPE_CHECKING:
    from specconsole.core.machine.state import TrialRecord
    from specconsole.core.measure.trials import RateProbe


def probe_text(probe: RateProbe) -> str:
    """``4.00 req/s: held`` or ``8.00 req/s: missed ttft_p99_ms_at_64 2,310.0 (needs <= 2000)``."""
    rate = f"{format_rate(probe.rate, 2)} req/s"
    return f"{rate}: held" if probe.met else f"{rate}: missed {probe.missed}"


def rate_answer(record: TrialRecord) -> str:
    """``3.95 req/s (4.15 fails; 7 probes)``, ``none holds (7 probes)`` or '' without probes."""
    probes = record.rate_probes
    if not probes:
        return ""
    n = f"{len(probes)} probe{'s' if len(probes) != 1 else ''}"
    lo = record.slo_rate
    if lo is None:
        return f"no rate holds the SLOs ({n})"
    above = [p.rate for p in probes if not p.met and p.rate > lo]
    fails = f"{format_rate(min(above), 2)} fails; " if above else "the search's maximum; "
    return f"{format_rate(lo, 2)} req/s ({fails}{n})"


__all__ = ["probe_text", "rate_answer"]
