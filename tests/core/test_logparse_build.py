"""The parser's fast paths give exactly what the general ones give.

``logparse.build.positional_builder`` builds the hottest events without the dataclass
``__init__``; the short-iso prefix is split by a remembered tail instead of a regex after the
first line of a process. Both are speed-only: these tests compare them with the slow way."""

from __future__ import annotations

import dataclasses

import pytest

from specconsole.core.logs.build import positional_builder
from specconsole.core.logs.events import (
    DecodeStats,
    PrefillStats,
    SuggestedFix,
)
from specconsole.core.logs.parser import LogParser
from specconsole.core.logs.prefixes import strip_outer

DECODE = (
    "[2026-07-20 10:27:57 TP0] Decode batch, #running-req: 7, #token: 1234, token usage: 0.05, "
    "accept len: 2.41, accept rate: 0.71, cuda graph: True, gen throughput (token/s): 812.37, "
    "#queue-req: 0"
)
PREFILL = (
    "[2026-07-20 10:27:58] Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, "
    "token usage: 0.06, #running-req: 7, #queue-req: 2, #pending-token: 0, cuda graph: False, "
    "input throughput (token/s): 4021.11"
)


def test_the_builder_makes_the_same_frozen_event_as_the_constructor() -> None:
    build = positional_builder(DecodeStats, ("timestamp", "rank", "running_req", "accept_len"))
    fast = build("2026-07-20 10:27:57", "TP0", 7, 2.5)
    slow = DecodeStats(timestamp="2026-07-20 10:27:57", rank="TP0", running_req=7, accept_len=2.5)
    assert fast == slow and hash(fast) == hash(slow) and type(fast) is DecodeStats
    for f in dataclasses.fields(DecodeStats):
        assert getattr(fast, f.name) == getattr(slow, f.name), f.name  # defaults filled in
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.running_req = 8  # type: ignore[misc]
    assert fast.to_dict() == slow.to_dict()


def test_the_builder_refuses_what_it_cannot_build_faithfully() -> None:
    with pytest.raises(TypeError, match="bad field names"):
        positional_builder(PrefillStats, ("timestamp", "no_such_field"))
    with pytest.raises(TypeError, match="bad field names"):
        positional_builder(PrefillStats, ("rank", "rank"))
    with pytest.raises(TypeError, match="no plain default"):
        positional_builder(SuggestedFix, ())  # text has no default

    @dataclasses.dataclass(frozen=True, slots=True)
    class Listed:
        items: list[int] = dataclasses.field(default_factory=list)

    with pytest.raises(TypeError, match="no plain default"):
        positional_builder(Listed, ())  # a default_factory would be shared, not called

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        n: int = 0

        def __post_init__(self) -> None:
            raise AssertionError("never skipped")

    with pytest.raises(TypeError, match="__post_init__"):
        positional_builder(Checked, ("n",))
    with pytest.raises(TypeError, match="slotted"):
        positional_builder(dataclasses.make_dataclass("Plain", [("n", int, 0)]), ("n",))


def test_fast_statistics_events_equal_the_general_parse() -> None:
    """The keyword parse (``key_values``) is the general path: the canonical lines' fast
    events must be identical to it."""
    fast = LogParser().feed_lines([DECODE, PREFILL])
    assert [type(e) for e in fast] == [DecodeStats, PrefillStats]
    # a trailing key the canonical regex does not know sends the line down the general path
    general = LogParser().feed_lines([DECODE + ", x: 1", PREFILL + ", x: 1"])
    assert fast == general


def _iso(ts: str, ident: str, msg: str) -> str:
    return f"2026-07-20T10:27:{ts}+0000 gpu-box {ident}: {msg}"


@pytest.mark.parametrize(
    "lines",
    [
        # the same process: the second line takes the remembered tail
        [_iso("57", "python3[48211]", DECODE), _iso("58", "python3[48211]", PREFILL)],
        # another process, then systemd (never the fast path), then back
        [
            _iso("57", "python3[48211]", DECODE),
            _iso("58", "python3[50000]", PREFILL),
            _iso("59", "systemd[1]", "Started sglang.service - SGLang."),
            _iso("59", "python3[50000]", DECODE),
        ],
        # the tail followed by something that is not SGLang's header
        [
            _iso("57", "python3[48211]", DECODE),
            _iso("58", "python3[48211]", "max_total_num_tokens=123456, chunked_prefill_size=8192"),
            _iso("59", "python3[48211]", "[gpu_id=0] max_total_num_tokens=123456"),
        ],
        # a fractional timestamp changes where the tail starts
        [
            _iso("57", "python3[48211]", DECODE),
            _iso("58.123456", "python3[48211]", PREFILL),
        ],
    ],
)
def test_short_iso_lines_parse_as_the_general_prefix_layer_parses_them(
    lines: list[str],
) -> None:
    """The fast path (remembered tail, then the regex) gives the events the general path
    (``strip_outer``, the table-driven prefix layer) gives for the same lines."""
    parser = LogParser()
    fast = parser.feed_lines(lines)
    assert parser._iso_tail.startswith(" gpu-box python3[")  # the tail was taken
    general = LogParser()
    expected = [e for line in lines for e in general._feed_line(line)]
    assert fast == expected
    assert fast, "the examples hold events"
    for line in lines:
        msg, jts, ident = strip_outer(line)
        assert ident is not None and jts is not None and line.endswith(msg)
