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
its ``Endpoints``); this module turns two snapshots of its Prometheus text (read strictly by
:mod:`specconsole.core.measure.prometheus`) into one level's figures (:func:`counter_deltas`
-> :class:`CounterAcceptance`), with nothing engine-specific. Snapshots taken during the
level give the acceptance over time (``CounterAcceptance.series``: each interval's deltas,
or the engine's own acceptance gauge where an interval's counters moved too little), so
drift within a level shows.

Definitions (per level, from the deltas):

* acceptance length = 1 + accepted / drafts (tokens per verify step, the bonus token included);
* acceptance rate = accepted / draft tokens;
* per position k: accepted at position k (and / drafts, the rate a k-th draft token is kept).

Nothing the box says is taken on trust: a counter that went backwards or vanished (the server
restarted mid-level), one whose ``*_created`` time moved (``prometheus_client`` writes when
each series was created: a registry restarted, even where the count grew back past where it
was), a per-position series that appears after the engine had drafted, a
value that is not a count (``NaN``, ``+Inf``, negative, past any count) or counts that do not
fit together (more accepted than drafted, positions that do not sum to the accepted total)
make the level's counters ``unknown`` with the reason (:attr:`CounterAcceptance.unknown`;
``unknown (counter reset)`` for the first two), never a negative or huge figure. The server's
output-token count is kept beside the load generator's (:attr:`CounterAcceptance.output_gap`,
flagged beyond :data:`OUTPUT_BAND`).

Standard library only (Python 3.10+) but for ``prometheus_client``'s parser, which the
remote benchmark runner bundles with this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specconsole.core.measure.prometheus import Samples, read_prometheus

__all__ = [
    "COUNTER_RESET",
    "OUTPUT_BAND",
    "CategoryCounts",
    "CounterAcceptance",
    "Samples",
    "SpecCounters",
    "counter_deltas",
    "created_name",
    "gauge_value",
    "is_reset",
    "parse_prometheus",
    "steps_value",
]


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
    steps_gauge: str | None = None
    """A gauge of the draft length the engine runs now (SGLang's ``sglang:spec_num_steps``,
    0.5.14+): what is in force, read during each level."""

    @property
    def names(self) -> tuple[str, ...]:
        """Every metric named here, and each counter's creation time (:func:`created_name`)."""
        named = (self.drafts, self.draft_tokens, self.accepted, self.per_position)
        counters = tuple(n for n in (*named, self.output_tokens) if n)
        gauges = tuple(g for g in (self.gauge, self.steps_gauge) if g)
        return (*counters, *(created_name(n) for n in counters), *gauges)

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
            "steps_gauge": self.steps_gauge,
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
            steps_gauge=name("steps_gauge"),
        )


@dataclass(frozen=True, slots=True)
class CategoryCounts:
    """What the engine counted over one category's turns of shifting traffic in a level
    (``alternating:coding,prose``: the counters read at each phase's end)."""

    category: str
    drafts: int
    accepted: int
    requests: int
    """Requests of the category that finished in the level."""

    @property
    def acceptance_length(self) -> float | None:
        """1 + accepted / drafts (None: it never drafted)."""
        return 1.0 + self.accepted / self.drafts if self.drafts > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "drafts": self.drafts,
            "accepted": self.accepted,
            "requests": self.requests,
            "acceptance_length": self.acceptance_length,
        }

    @classmethod
    def from_dict(cls, data: Any) -> CategoryCounts | None:
        """The category's counts, or None when they are not counts."""
        if not isinstance(data, Mapping):
            return None
        counts = [_count(data.get(k, 0)) for k in ("drafts", "accepted", "requests")]
        if None in counts:
            return None
        name = str(data.get("category", ""))[:100]
        return cls(name, counts[0] or 0, counts[1] or 0, counts[2] or 0)


@dataclass(frozen=True, slots=True)
class CounterAcceptance:
    """One level's speculative-decoding counts, as the engine counted them (deltas), or
    why they cannot be trusted (:attr:`unknown`: every figure is then None)."""

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
    unknown: str = ""
    """Why the level's counters are not trusted (``counter reset``: a counter went
    backwards, the server restarted; a scrape that was not Prometheus text; a counter that
    is not a count); '' when they are. The counts are then 0 and no figure is derived."""
    client_output_tokens: int | None = None
    """The output tokens the load generator received during the level (None: not counted,
    as in a steady window): the cross-check of :attr:`output_tokens`."""
    drafted_length: float | None = None
    """The draft length the engine ran during the level, as it says: its draft-length gauge
    averaged over the level (SGLang's ``spec_num_steps``), else draft tokens per draft
    (0 when it generated tokens without drafting); None when it does not say."""
    categories: tuple[CategoryCounts, ...] = ()
    """Shifting traffic: the counts of each category's turns (empty otherwise)."""

    @classmethod
    def untrusted(cls, reason: str, **kept: Any) -> CounterAcceptance:
        """A level whose counters cannot be trusted, for ``reason``."""
        return cls(0, 0, 0, unknown=reason or "unknown", **kept)

    @property
    def trusted(self) -> bool:
        return not self.unknown

    @property
    def speculated(self) -> bool:
        """Whether the engine drafted at all during the level (False when not known)."""
        return self.trusted and self.drafts > 0

    @property
    def acceptance_length(self) -> float | None:
        """1 + accepted / drafts: tokens per verify step, the bonus token included."""
        return 1.0 + self.accepted / self.drafts if self.speculated else None

    @property
    def acceptance_rate(self) -> float | None:
        """accepted / draft tokens."""
        return self.accepted / self.draft_tokens if self.trusted and self.draft_tokens > 0 else None

    @property
    def per_position_rate(self) -> tuple[float, ...]:
        """The share of drafts whose k-th token was accepted, per position k."""
        if not self.speculated:
            return ()
        return tuple(n / self.drafts for n in self.per_position)

    @property
    def output_gap(self) -> float | None:
        """How far the server's output-token count is from the load generator's, as a share
        of the load generator's (None when either is unknown)."""
        server, client = self.output_tokens, self.client_output_tokens
        if server is None or client is None or client <= 0:
            return None
        return abs(server - client) / client

    def to_dict(self) -> dict[str, Any]:
        """The counts, plus the derived figures for readers (never read back)."""
        return {
            "drafts": self.drafts,
            "draft_tokens": self.draft_tokens,
            "accepted": self.accepted,
            "per_position": list(self.per_position),
            "output_tokens": self.output_tokens,
            "client_output_tokens": self.client_output_tokens,
            "unknown": self.unknown,
            "acceptance_length": self.acceptance_length,
            "acceptance_rate": self.acceptance_rate,
            "per_position_rate": list(self.per_position_rate),
            "series": list(self.series),
            "series_interval_s": self.series_interval_s,
            "drafted_length": self.drafted_length,
            "categories": [c.to_dict() for c in self.categories],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CounterAcceptance:
        """Read back a record (the remote runner's JSON from the box, a session's line):
        never raises; a count that is not a count makes the level ``unknown``."""
        if not isinstance(data, Mapping):
            return cls.untrusted("the counters' record is not a table")
        unknown = data.get("unknown")
        reason = unknown[:300] if isinstance(unknown, str) else ""
        counts = [_count(data.get(key, 0)) for key in ("drafts", "draft_tokens", "accepted")]
        raw_positions = data.get("per_position") or ()
        positions = (
            [_count(n) for n in raw_positions[:MAX_POSITIONS]]
            if isinstance(raw_positions, list | tuple)
            else [None]
        )
        output = _optional_count(data.get("output_tokens"))
        client = _optional_count(data.get("client_output_tokens"))
        raw_series = data.get("series") or ()
        series = (
            [_finite(x) for x in raw_series[:MAX_SERIES]]
            if isinstance(raw_series, list | tuple)
            else []
        )
        every = _finite(data.get("series_interval_s"))
        drafted = _finite(data.get("drafted_length"))
        raw = data.get("categories")
        turns = raw[:MAX_POSITIONS] if isinstance(raw, list) else []
        categories = tuple(c for c in map(CategoryCounts.from_dict, turns) if c is not None)
        bad = None in counts or None in positions or output is False or client is False
        if bad:
            return cls.untrusted("the recorded counts are not counts")
        if reason:  # as recorded: the reason, and the output counts beside it
            return cls.untrusted(
                reason,
                output_tokens=output if isinstance(output, int) else None,
                client_output_tokens=client if isinstance(client, int) else None,
            )
        return cls(
            drafts=counts[0] or 0,
            draft_tokens=counts[1] or 0,
            accepted=counts[2] or 0,
            per_position=tuple(n or 0 for n in positions),
            output_tokens=output if isinstance(output, int) else None,
            series=tuple(x for x in series if x is not None and 0 < x <= MAX_LENGTH),
            series_interval_s=every if every is not None and every > 0 else None,
            client_output_tokens=client if isinstance(client, int) else None,
            drafted_length=drafted
            if drafted is not None and 0 <= drafted <= MAX_POSITIONS
            else None,
            categories=categories,
        )


MAX_COUNT = 10**15
"""A count past this is not a count of one level (a quadrillion tokens)."""
MAX_POSITIONS = 64
"""Draft positions read (no engine drafts more than a few dozen tokens a step)."""
MAX_SERIES = 4096
MAX_LENGTH = 1.0 + MAX_POSITIONS
"""The longest acceptance length there can be: every position accepted, plus the bonus."""
OUTPUT_BAND = 0.05
"""The server's output-token count and the load generator's agree within this share."""


def _count(value: Any) -> int | None:
    """A recorded count: a whole, finite, non-negative number below :data:`MAX_COUNT`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    if value < 0 or value > MAX_COUNT or value != int(value):
        return None
    return int(value)


def _optional_count(value: Any) -> int | bool | None:
    """A count, None when absent, False when present and not a count."""
    if value is None:
        return None
    count = _count(value)
    return False if count is None else count


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if value == value and abs(value) != float("inf") else None


def parse_prometheus(text: str) -> Samples:
    """Every sample of a Prometheus text exposition, read strictly
    (:func:`~specconsole.core.measure.prometheus.read_prometheus`); none when the text is
    not trusted (its reason is :func:`read_prometheus`'s ``problem``)."""
    return read_prometheus(text).samples


COUNTER_RESET = "counter reset"
"""The reason a level's counters are not trusted when one went backwards (the server
restarted, a counter was reset) or a position series appeared mid-level."""


class _Untrusted(Exception):
    """A snapshot pair whose deltas cannot be trusted (internal: caught below)."""

    def __init__(self, reason: str, *, reset: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.reset = reset


def _series(samples: Samples, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """A counter's series, each checked to be a count (finite, not negative)."""
    series = samples.get(name, {})
    for value in series.values():
        if value != value or value in (float("inf"), float("-inf")) or value < 0:
            raise _Untrusted(f"{name} is {value!r}, not a count")
        if value > MAX_COUNT:
            raise _Untrusted(f"{name} is {value:.3g}, past any count")
    return series


def created_name(name: str) -> str:
    """The gauge ``prometheus_client`` writes beside counter ``name``: when each of its series
    was created (``vllm:generation_tokens_total`` -> ``vllm:generation_tokens_created``)."""
    return name.removesuffix("_total") + "_created"


def _reborn(before: Samples, after: Samples, name: str) -> None:
    """A reset the counts may hide: a series of ``name`` created again between the two
    snapshots (its ``*_created`` time moved), though it counted back past where it was."""
    born, again = before.get(created_name(name), {}), after.get(created_name(name), {})
    for labels, at in born.items():
        if labels in again and again[labels] != at:
            raise _Untrusted(f"{COUNTER_RESET} ({name} was created again)", reset=True)


def _grown(before: Samples, after: Samples, name: str) -> int:
    """A counter's increase over the level, summed over its series (whatever other labels
    they carry). A series that went backwards, vanished or was created again is a reset;
    one that appears counts from 0."""
    _reborn(before, after, name)
    old, new = _series(before, name), _series(after, name)
    total = 0.0
    for labels, value in old.items():
        if labels not in new:
            raise _Untrusted(f"{COUNTER_RESET} ({name}: a series vanished)", reset=True)
        if new[labels] < value:
            raise _Untrusted(
                f"{COUNTER_RESET} ({name} went from {value:g} to {new[labels]:g})", reset=True
            )
    for labels, value in new.items():
        total += value - old.get(labels, 0.0)
    return round(total)


def _by_position(samples: Samples, name: str, label: str) -> dict[int, float]:
    out: dict[int, float] = {}
    for labels, value in _series(samples, name).items():
        position = dict(labels).get(label)
        if position is None or not position.isdigit():
            continue
        if len(position) > 3 or int(position) >= MAX_POSITIONS:
            raise _Untrusted(f"{name}: position {position[:20]} is not a draft position")
        out[int(position)] = out.get(int(position), 0.0) + value
    return out


def _positions(before: Samples, after: Samples, counters: SpecCounters, drafts_before: float):
    """Accepted tokens per position over the level. The position series appear with the
    engine's first draft: one appearing after the engine had drafted is a reset."""
    if counters.per_position is None:
        return ()
    _reborn(before, after, counters.per_position)
    old = _by_position(before, counters.per_position, counters.position_label)
    new = _by_position(after, counters.per_position, counters.position_label)
    for k, value in old.items():
        if k not in new or new[k] < value:
            shown = "vanished" if k not in new else f"went from {value:g} to {new[k]:g}"
            raise _Untrusted(f"{COUNTER_RESET} (position {k} {shown})", reset=True)
    if drafts_before > 0 and any(k not in old for k in new):
        appeared = min(k for k in new if k not in old)
        raise _Untrusted(f"{COUNTER_RESET} (position {appeared} appeared mid-level)", reset=True)
    if not new:
        return ()
    return tuple(round(new.get(k, 0.0) - old.get(k, 0.0)) for k in range(max(new) + 1))


def _consistent(figures: CounterAcceptance, *, accepted_counted: bool) -> None:
    """The counts must fit together as every engine increments them (drafts first, then the
    draft tokens, the accepted total, the positions): no more accepted than drafted, no
    position accepted more often than there were drafts, no more than one token a position
    per draft, and the positions summing to the accepted total — at most one step's worth
    below it (a read that raced the positions' increments)."""
    drafts, accepted = figures.drafts, figures.accepted
    positions, drafted = figures.per_position, figures.draft_tokens
    most = drafts * MAX_POSITIONS
    if accepted > most or drafted > most:
        raise _Untrusted(f"{max(accepted, drafted)} tokens in {drafts} drafts")
    if drafted and accepted > drafted:
        raise _Untrusted(f"{accepted} accepted of {drafted} drafted tokens")
    if positions and max(positions) > drafts:
        raise _Untrusted(f"a position accepted {max(positions)} times in {drafts} drafts")
    if positions and accepted_counted:  # (SGLang's accepted is its output less the bonus)
        slack = len(positions) + round(OUTPUT_BAND * accepted)
        if not 0 <= accepted - sum(positions) <= slack:
            raise _Untrusted(
                f"the positions sum to {sum(positions)}, the accepted total is {accepted}"
            )


def gauge_value(samples: Samples, counters: SpecCounters) -> float | None:
    """The engine's acceptance gauge now (its series' mean: one per rank), if it keeps one
    and it has a value (0 means "no verify step yet")."""
    values = list(samples.get(counters.gauge, {}).values()) if counters.gauge else []
    mean = sum(values) / len(values) if values else 0.0
    return mean if 0 < mean <= MAX_LENGTH else None  # NaN, ±Inf and absurd values too


def steps_value(samples: Samples, counters: SpecCounters) -> float | None:
    """The engine's draft-length gauge now (its series' mean: one per rank), if it keeps one."""
    values = list(samples.get(counters.steps_gauge, {}).values()) if counters.steps_gauge else []
    mean = sum(values) / len(values) if values else None
    return mean if mean is not None and 0 <= mean <= MAX_POSITIONS else None


def counter_deltas(before: Samples, after: Samples, counters: SpecCounters) -> CounterAcceptance:
    """What the engine counted between two snapshots, or why it cannot be trusted (a
    counter that went backwards or vanished, a position series that appeared after the
    engine had drafted: ``counter reset``; a value that is not a count; counts that do not
    fit together). A series missing from ``before`` counts from 0 (llama.cpp's per-position
    series appear with its first draft); an engine that does not count accepted tokens has
    them as its output less one bonus token per draft. Never raises."""
    try:
        output: int | None = None
        named = counters.output_tokens
        if named is not None and (named in after or named in before):
            output = _grown(before, after, named)
        drafts = _grown(before, after, counters.drafts)
        drafts_before = sum(_series(before, counters.drafts).values())
        per_position = _positions(before, after, counters, drafts_before)
        if counters.accepted is not None:
            accepted = _grown(before, after, counters.accepted or "")
        elif drafts and output is not None and output < drafts:
            raise _Untrusted(f"{output} output tokens in {drafts} verify steps")
        else:
            accepted = max(0, (output or 0) - drafts) if drafts else 0
        drafted = 0
        if counters.draft_tokens is not None:
            drafted = _grown(before, after, counters.draft_tokens)
        length: float | None = None
        if counters.draft_tokens is not None:  # counted per draft: K = tokens per draft
            length = drafted / drafts if drafts else (0.0 if output else None)
        figures = CounterAcceptance(
            drafts=drafts,
            draft_tokens=drafted,
            accepted=accepted,
            per_position=per_position,
            output_tokens=output,
            drafted_length=length,
        )
        _consistent(figures, accepted_counted=counters.accepted is not None)
    except _Untrusted as why:
        return CounterAcceptance.untrusted(why.reason)
    return figures


def is_reset(figures: CounterAcceptance) -> bool:
    """Whether a level's counters were untrusted because one went backwards."""
    return figures.unknown.startswith(COUNTER_RESET)
