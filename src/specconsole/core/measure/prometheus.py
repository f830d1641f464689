"""Prometheus text from the box, read strictly: samples, or the reason they are not trusted.

Why its own module: an engine's ``/metrics`` is the one source of the acceptance figures a
user trusts, and a real box lies by accident — a proxy answers HTML, a scrape is cut short, an
exporter writes a series twice, a line is megabytes long. The text is parsed by
``prometheus_client``'s own parser (the reference implementation of the exposition format,
the one vLLM's 374 series and SGLang's collectors are written by), never by a hand-written
one; on top of it this module adds what that parser leaves lax: bounds on the text's size and
on one line's length (so a hostile answer cannot hold the reader), and a series written twice
(which sample would be the counter?). The whole answer is trusted or none of it: a scrape
with one bad line has :attr:`Scrape.problem` set and no samples, and the level that needed it
says "unknown" with that reason.

Values are kept as the text says them (``NaN``, ``+Inf`` and negative numbers are legal
Prometheus values); whether a *counter* may be that is the reader of counters' question
(:mod:`specconsole.core.measure.acceptance`).

Standard library plus four modules of ``prometheus_client`` (``parser``, ``metrics_core``,
``samples``, ``validation``), themselves standard-library only: the remote benchmark runner
bundles them with this module (``bench.remote_runner``), so the box needs nothing installed
and both sides read the same text the same way. Imported when the first scrape is read:
``prometheus_client``'s package loads its HTTP exposition too (~0.1 s), which the console's
start-up must not pay.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

__all__ = ["MAX_LINE_CHARS", "MAX_TEXT_CHARS", "Samples", "Scrape", "read_prometheus"]

Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]
"""Prometheus samples: metric name -> {sorted label pairs: value}."""

MAX_TEXT_CHARS = 16 * 1024 * 1024
"""A longer answer is not read (vLLM's full registry is about 60 KiB)."""
MAX_LINE_CHARS = 64 * 1024
"""A longer line is not a sample line (the parser's escapes are scanned per character)."""


@dataclass(frozen=True, slots=True)
class Scrape:
    """One ``/metrics`` answer as read: its samples, or why none of them is trusted."""

    samples: Samples = field(default_factory=dict)
    problem: str = ""
    """Why the answer is not trusted ('' when it is); :attr:`samples` is then empty."""

    @property
    def trusted(self) -> bool:
        return not self.problem


def _refused(reason: str) -> Scrape:
    return Scrape({}, reason)


def _only(text: str, names: Collection[str]) -> str:
    """The lines of ``text`` that sample one of ``names`` (a name, then ``{``, a space or a
    tab): what the parser then reads."""
    starts = tuple(f"{name}{end}" for name in names for end in ("{", " ", "\t"))
    return "\n".join(line for line in text.split("\n") if line.lstrip().startswith(starts))


def read_prometheus(text: str, names: Collection[str] | None = None) -> Scrape:
    """Every sample of a Prometheus text exposition, or the reason it is not trusted (too
    large, a line too long, a line the format does not allow, a series written twice).
    With ``names``, only those metrics' sample lines are parsed (the reads during a level:
    a quarter of the CPU on vLLM's 374 series, ``benchmarks/prometheus_parse.py``); the
    bounds still hold for the whole text. Never raises: any failure of the parser is a
    reason."""
    if not isinstance(text, str):
        return _refused(f"not text ({type(text).__name__})")
    if len(text) > MAX_TEXT_CHARS:
        return _refused(f"the answer is {len(text):,} characters, past {MAX_TEXT_CHARS:,}")
    longest = max((len(line) for line in text.split("\n")), default=0)
    if longest > MAX_LINE_CHARS:
        return _refused(f"a line of {longest:,} characters, past {MAX_LINE_CHARS:,}")
    if "\x00" in text:
        return _refused("a NUL character in the text")
    if names is not None:
        text = _only(text, names)
    try:
        from prometheus_client.parser import text_string_to_metric_families

        samples: Samples = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                series = samples.setdefault(str(sample.name), {})
                labels = tuple(sorted((str(k), str(v)) for k, v in sample.labels.items()))
                if labels in series:
                    shown = ",".join(f'{k}="{v[:40]}"' for k, v in labels)
                    return _refused(f"series {sample.name[:80]}{{{shown}}} appears twice")
                series[labels] = float(sample.value)
    except RecursionError:
        return _refused("not Prometheus text: nested too deep")
    except Exception as exc:  # the parser's ValueError, and anything else it may raise
        reason = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ""
        return _refused(f"not Prometheus text ({type(exc).__name__}: {reason or 'a bad line'})")
    return Scrape(samples)
