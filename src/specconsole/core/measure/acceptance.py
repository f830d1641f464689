"""Acceptance from an engine's own counters: what its ``/metrics`` counted around one level.

Why: an acceptance figure a user can trust is the engine's own counters snapshotted right
before and right after the measured requests, never a since-start average and never the
client's guess from tokens per chunk. Every engine with speculative decoding counts the same
things under its own names — drafts (verify steps), draft tokens, accepted tokens and accepted
tokens per draft position (llama.cpp's ``llamacpp:spec_decode_*``, vLLM's
``vllm:spec_decode_*``) — and the output tokens it generated, which cross-checks the load
generator's own count. Some count less: SGLang (0.5.14 on) counts verify steps
(``sglang:spec_verify_calls_total``) and generated tokens as each request finishes, so its
accepted tokens are the output less one bonus token per verify step, and it has no draft-token
counter (no acceptance rate). An engine declares the names as data (:class:`SpecCounters`, in
its ``Endpoints``); this module reads Prometheus text (:func:`parse_prometheus`) and turns two
snapshots into one level's figures (:func:`counter_deltas` -> :class:`CounterAcceptance`),
with nothing engine-specific. Snapshots taken during the level give the acceptance over time
(``CounterAcceptance.series``: each interval's deltas, or the engine's own acceptance gauge
where an interval's counters moved too little), so drift within a level shows.

Definitions (per level, from the deltas):

* acceptance length = 1 + accepted / drafts (tokens per verify step, the bonus token included);
* acceptance rate = accepted / draft tokens;
* per position k: accepted at position k (and / drafts, the rate a k-th draft token is kept).

Standard library only (Python 3.10+): the remote benchmark runner ships this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CounterAcceptance",
    "Samples",
    "SpecCounters",
    "counter_deltas",
    "gauge_value",
    "parse_prometheus",
]

Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]
"""Prometheus samples: metric name -> {sorted label pairs: value}."""


@dataclass(frozen=True, slots=True)
class SpecCounters:
    """Where an engine counts speculative decoding in its Prometheus text: the counters' names
    (each summed over its series, whatever other labels it carries), the per-position counter
    and the label that names the position, and its output-token counter."""

    drafts: str
    """Draft proposals (verify steps that had a draft)."""
    draft_tokens: str | None = None
    """Tokens drafted (None: not counted; no acceptance rate then)."""
    accepted: str | None = None
    """Drafted tokens the target accepted (None: the output tokens less one bonus token per
    draft, from :attr:`output_tokens`)."""
    per_position: str | None = None
    """Accepted tokens per draft position (one series per position)."""
    position_label: str = "position"
    """The label of :attr:`per_position` that holds the position (0-based)."""
    output_tokens: str | None = None
    """Tokens generated (the cross-check of the load generator's count)."""
    path: str = "/metrics"
    """Where the Prometheus text is served."""
    gauge: str | None = None
    """An acceptance-length gauge the engine keeps up to date as it decodes (SGLang's
    ``sglang:spec_accept_length``): the acceptance over time where the counters say too
    little (counted only as requests finish)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "drafts": self.drafts,
            "draft_tokens": self.draft_tokens,
            "accepted": self.accepted,
            "per_position": self.per_position,
            "position_label": self.position_label,
            "output_tokens": self.output_tokens,
            "path": self.path,
            "gauge": self.gauge,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SpecCounters:
        def name(key: str) -> str | None:
            return None if data.get(key) is None else str(data[key])

        return cls(
            drafts=str(data["drafts"]),
            draft_tokens=name("draft_tokens"),
            accepted=name("accepted"),
            per_position=name("per_position"),
            position_label=str(data.get("position_label") or "position"),
            output_tokens=name("output_tokens"),
            path=str(data.get("path") or "/metrics"),
            gauge=name("gauge"),
        )


@dataclass(frozen=True, slots=True)
class CounterAcceptance:
    """One level's speculative-decoding counts, as the engine counted them (deltas)."""

    drafts: int
    draft_tokens: int
    accepted: int
    per_position: tuple[int, ...] = ()
    """Accepted tokens at draft positions 0, 1, ... (empty: the engine reports none)."""
    output_tokens: int | None = None
    """Tokens the server says it generated during the level (None: no such counter)."""
    series: tuple[float, ...] = ()
    """The acceptance length over time within the level, one figure per interval."""
    series_interval_s: float | None = None
    """How long each figure of :attr:`series` covers."""

    @property
    def speculated(self) -> bool:
        """Whether the engine drafted at all during the level."""
        return self.drafts > 0

    @property
    def acceptance_length(self) -> float | None:
        """1 + accepted / drafts: tokens per verify step, the bonus token included."""
        return 1.0 + self.accepted / self.drafts if self.drafts > 0 else None

    @property
    def acceptance_rate(self) -> float | None:
        """accepted / draft tokens."""
        return self.accepted / self.draft_tokens if self.draft_tokens > 0 else None

    @property
    def per_position_rate(self) -> tuple[float, ...]:
        """The share of drafts whose k-th token was accepted, per position k."""
        if self.drafts <= 0:
            return ()
        return tuple(n / self.drafts for n in self.per_position)

    def to_dict(self) -> dict[str, Any]:
        """The counts, plus the derived figures for readers (never read back)."""
        return {
            "drafts": self.drafts,
            "draft_tokens": self.draft_tokens,
            "accepted": self.accepted,
            "per_position": list(self.per_position),
            "output_tokens": self.output_tokens,
            "acceptance_length": self.acceptance_length,
            "acceptance_rate": self.acceptance_rate,
            "per_position_rate": list(self.per_position_rate),
            "series": list(self.series),
            "series_interval_s": self.series_interval_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CounterAcceptance:
        output, every = data.get("output_tokens"), data.get("series_interval_s")
        return cls(
            drafts=int(data.get("drafts", 0)),
            draft_tokens=int(data.get("draft_tokens", 0)),
            accepted=int(data.get("accepted", 0)),
            per_position=tuple(int(n) for n in data.get("per_position") or ()),
            output_tokens=None if output is None else int(output),
            series=tuple(float(x) for x in data.get("series") or ()),
            series_interval_s=None if every is None else float(every),
        )


def _labels(text: str) -> tuple[tuple[str, str], ...]:
    """``a="x",b="y"`` -> sorted pairs (values unescaped: ``\\"``, ``\\\\``, ``\\n``)."""
    pairs: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        eq = text.find("=", i)
        if eq < 0:
            break
        name = text[i:eq].strip().lstrip(",").strip()
        j = text.find('"', eq) + 1
        if j <= 0:
            break
        value: list[str] = []
        while j < n and text[j] != '"':
            if text[j] == "\\" and j + 1 < n:
                j += 1
                value.append("\n" if text[j] == "n" else text[j])
            else:
                value.append(text[j])
            j += 1
        pairs.append((name, "".join(value)))
        i = j + 1
    return tuple(sorted(pairs))


def parse_prometheus(text: str) -> Samples:
    """Every sample of a Prometheus text exposition (comments and bad lines skipped; a
    trailing timestamp ignored)."""
    samples: Samples = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] == "#":
            continue
        brace = line.find("{")
        if brace >= 0:
            close = line.rfind("}")
            if close < brace:
                continue
            name, labels, rest = line[:brace], _labels(line[brace + 1 : close]), line[close + 1 :]
        else:
            name, _, rest = line.partition(" ")
            labels = ()
        words = rest.split()
        if not name or not words:
            continue
        try:
            value = float(words[0])
        except ValueError:
            continue
        samples.setdefault(name, {})[labels] = value
    return samples


def _total(samples: Samples, name: str) -> float:
    return sum(samples.get(name, {}).values())


def _by_position(samples: Samples, name: str, label: str) -> dict[int, float]:
    out: dict[int, float] = {}
    for labels, value in samples.get(name, {}).items():
        position = dict(labels).get(label)
        if position is None or not position.isdigit():
            continue
        out[int(position)] = out.get(int(position), 0.0) + value
    return out


def _delta(after: float, before: float) -> int:
    """A counter's increase as a count (a reset — the server restarted — counts from 0)."""
    grown = after - before if after >= before else after
    return round(grown)


def gauge_value(samples: Samples, counters: SpecCounters) -> float | None:
    """The engine's acceptance gauge now (its series' mean: one per rank), if it keeps one
    and it has a value (0 means "no verify step yet")."""
    values = list(samples.get(counters.gauge, {}).values()) if counters.gauge else []
    mean = sum(values) / len(values) if values else 0.0
    return mean if mean > 0 else None


def counter_deltas(before: Samples, after: Samples, counters: SpecCounters) -> CounterAcceptance:
    """What the engine counted between two snapshots. A series missing from ``before`` (the
    per-position series appear with the first draft) counts from 0; an engine that does not
    count accepted tokens has them as its output less one bonus token per draft."""
    per_position: tuple[int, ...] = ()
    if counters.per_position is not None:
        old = _by_position(before, counters.per_position, counters.position_label)
        new = _by_position(after, counters.per_position, counters.position_label)
        if new:
            per_position = tuple(
                _delta(new.get(k, 0.0), old.get(k, 0.0)) for k in range(max(new) + 1)
            )
    output: int | None = None
    if counters.output_tokens is not None and counters.output_tokens in after:
        output = _delta(
            _total(after, counters.output_tokens), _total(before, counters.output_tokens)
        )
    drafts = _delta(_total(after, counters.drafts), _total(before, counters.drafts))
    if counters.accepted is not None:
        accepted = _delta(_total(after, counters.accepted), _total(before, counters.accepted))
    else:
        accepted = max(0, (output or 0) - drafts) if drafts else 0
    drafted = 0
    if counters.draft_tokens is not None:
        drafted = _delta(
            _total(after, counters.draft_tokens), _total(before, counters.draft_tokens)
        )
    return CounterAcceptance(
        drafts=drafts,
        draft_tokens=drafted,
        accepted=accepted,
        per_position=per_position,
        output_tokens=output,
    )
