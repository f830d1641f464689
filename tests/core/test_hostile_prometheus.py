"""``/metrics`` from a broken or lying box (issue 44): the Prometheus reader and the counters'
deltas are total over generated hostile text — no exception, and nothing out of its range
reaching a record: a level's counts are whole and non-negative, its acceptance length at
least 1 and at most one token per position plus the bonus, its rate in [0, 1]; what cannot be
trusted is ``unknown`` with the reason.

Each property runs :data:`tests.fixtures.hostile.EXAMPLES` generated inputs (the issue's bar: at
least 1,000)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from specconsole.core.engine.registry import engine_names, get_engine
from specconsole.core.machine.results import level_summary
from specconsole.core.measure.acceptance import (
    MAX_LENGTH,
    CounterAcceptance,
    counter_deltas,
    gauge_value,
)
from specconsole.core.measure.metrics import RequestTimeline, compute_level_metrics
from specconsole.core.measure.prometheus import MAX_LINE_CHARS, read_prometheus
from tests.fixtures.hostile import PROPERTY

COUNTERS = [c for n in engine_names() if (c := get_engine(n).endpoints.spec_counters)]
NAMES = sorted(
    {
        name
        for c in COUNTERS
        for name in (c.drafts, c.draft_tokens, c.accepted, c.per_position, c.output_tokens, c.gauge)
        if name
    }
)

values = st.one_of(
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["NaN", "+Inf", "-Inf", "1e308", "-0", "0x10", "1_000", "", "one", "1 2 3"]),
)
label_values = st.text(alphabet=st.characters(codec="utf-8"), max_size=12).map(
    lambda s: s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
)
label_sets = st.dictionaries(
    st.sampled_from(["position", "engine", "model_name", "tp_rank", "is_streaming", "le"]),
    st.one_of(label_values, st.integers(-3, 99).map(str)),
    max_size=3,
)


@st.composite
def sample_lines(draw: st.DrawFn) -> str:
    name = draw(
        st.one_of(st.sampled_from(NAMES), st.from_regex(r"[a-z_:][a-z0-9_:]{0,20}", fullmatch=True))
    )
    labels = draw(label_sets)
    body = ",".join(f'{k}="{v}"' for k, v in labels.items())
    text = f"{name}{{{body}}}" if labels or draw(st.booleans()) else name
    stamp = draw(st.sampled_from(["", " 1700000000000"]))
    return f"{text} {draw(values)}{stamp}"


comment_lines = st.sampled_from(
    [
        "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.",
        "# TYPE vllm:spec_decode_num_drafts_total counter",
        "# TYPE llamacpp:spec_decode_num_drafts_total counter",
        "# TYPE sglang:spec_accept_length gauge",
        "# TYPE x histogram",
        "# TYPE",
        "# just a comment",
        "",
    ]
)
garbage_lines = st.one_of(
    st.text(max_size=60),
    st.sampled_from(["<html><body>502 Bad Gateway</body></html>", "{", "}", "\x00", "a{b=c} 1"]),
)
expositions = st.lists(st.one_of(sample_lines(), comment_lines, garbage_lines), max_size=30).map(
    "\n".join
)


numbers = st.one_of(
    st.integers(min_value=-5, max_value=10**16).map(str),
    st.floats(min_value=-1.0, max_value=1e16).map(repr),
    st.sampled_from(["NaN", "+Inf", "-Inf", "0"]),
)


@st.composite
def counter_lines(draw: st.DrawFn) -> str:
    """A line of a spec counter the format allows (the values may still lie)."""
    name = draw(st.sampled_from(NAMES))
    labels = draw(st.sampled_from(['engine="0"', 'engine="1"', 'model_name="m"', ""]))
    position = draw(st.one_of(st.none(), st.integers(0, 9), st.just(10**6)))
    if position is not None:
        labels = ",".join(x for x in (labels, f'position="{position}"') if x)
    return f"{name}{{{labels}}} {draw(numbers)}"


clean_expositions = st.lists(counter_lines(), max_size=20, unique=True).map("\n".join)
"""Text the reader trusts (mostly: a series may still come twice), so the counters' own
checks — resets, non-counts, counts that do not fit together — are what is exercised."""


def _in_range(figures: CounterAcceptance) -> None:
    """Every figure a record keeps is in its type's range."""
    if not figures.trusted:
        assert figures.unknown and figures.acceptance_length is None
        assert figures.acceptance_rate is None and figures.per_position_rate == ()
        return
    for count in (figures.drafts, figures.draft_tokens, figures.accepted, *figures.per_position):
        assert isinstance(count, int) and count >= 0
    if figures.output_tokens is not None:
        assert figures.output_tokens >= 0
    if (length := figures.acceptance_length) is not None:
        assert math.isfinite(length) and 1.0 <= length <= MAX_LENGTH
    if (rate := figures.acceptance_rate) is not None:
        assert 0.0 <= rate <= 1.0
    assert all(0.0 <= r <= 1.0 for r in figures.per_position_rate)


@PROPERTY
@given(expositions)
def test_the_reader_is_total_over_hostile_text(text: str) -> None:
    scrape = read_prometheus(text)
    assert scrape.trusted != bool(scrape.problem)
    if not scrape.trusted:
        assert scrape.samples == {}
    for name, series in scrape.samples.items():
        assert isinstance(name, str)
        for labels, value in series.items():
            assert all(isinstance(k, str) and isinstance(v, str) for k, v in labels)
            assert isinstance(value, float)


@PROPERTY
@given(
    st.one_of(expositions, clean_expositions),
    st.one_of(expositions, clean_expositions),
    st.sampled_from(COUNTERS),
    st.integers(0, 10**6),
)
def test_no_out_of_range_figure_reaches_a_record(
    before: str, after: str, counters, client: int
) -> None:
    a, b = read_prometheus(before).samples, read_prometheus(after).samples
    figures = counter_deltas(a, b, counters)
    _in_range(figures)
    gauge = gauge_value(b, counters)
    assert gauge is None or 0 < gauge <= MAX_LENGTH
    # through a level's record and back, and into its summary
    request = RequestTimeline(start=0.0, latency=1.0, prompt_len=8, output_len=client % 50 + 1)
    level = compute_level_metrics([request], duration=1.0, max_concurrency=1, counters=figures)
    summary = level_summary(level)
    if summary.accept_length is not None:
        assert math.isfinite(summary.accept_length) and summary.accept_length >= 1.0
    if not figures.trusted:
        assert summary.accept_length is None


@PROPERTY
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "drafts",
                "draft_tokens",
                "accepted",
                "per_position",
                "output_tokens",
                "client_output_tokens",
                "series",
                "series_interval_s",
                "unknown",
            ]
        ),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(min_value=-(10**20), max_value=10**20),
            st.floats(allow_nan=True, allow_infinity=True),
            st.text(max_size=5),
            st.lists(
                st.one_of(st.integers(-5, 10**18), st.floats(), st.text(max_size=2)), max_size=5
            ),
        ),
    )
)
def test_a_record_from_the_box_reads_back_without_exception(data: dict) -> None:
    """The remote runner's JSON (from the box) and a session's lines are read back total."""
    figures = CounterAcceptance.from_dict(data)
    if figures.trusted:
        for count in (figures.drafts, figures.draft_tokens, figures.accepted):
            assert isinstance(count, int) and count >= 0
        assert all(0 < x <= MAX_LENGTH for x in figures.series)


def test_a_line_past_the_bound_is_refused_without_being_parsed() -> None:
    scrape = read_prometheus("vllm:spec_decode_num_drafts_total " + "9" * (MAX_LINE_CHARS + 1))
    assert not scrape.trusted and "past" in scrape.problem


def test_a_series_written_twice_is_not_trusted() -> None:
    scrape = read_prometheus("a_total 1\na_total 2\n")
    assert scrape.problem == "series a_total{} appears twice"


LLAMA = get_engine("llamacpp").endpoints.spec_counters
DRAFTS = "llamacpp:spec_decode_num_drafts_total"
ACCEPTED = "llamacpp:spec_decode_num_accepted_tokens_total"
DRAFTED = "llamacpp:spec_decode_num_draft_tokens_total"
PER_POS = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"


def _text(drafts: float, drafted: float, accepted: float, positions: dict[int, float]) -> str:
    lines = [f"{DRAFTS} {drafts}", f"{DRAFTED} {drafted}", f"{ACCEPTED} {accepted}"]
    lines += [f'{PER_POS}{{position="{k}"}} {v}' for k, v in positions.items()]
    return "\n".join(lines) + "\n"


def _deltas(before: str, after: str) -> CounterAcceptance:
    return counter_deltas(read_prometheus(before).samples, read_prometheus(after).samples, LLAMA)


def test_what_the_counters_cannot_be_trusted_for_is_said() -> None:
    good = _deltas(_text(4, 12, 6, {0: 4, 1: 2, 2: 0}), _text(8, 24, 12, {0: 7, 1: 4, 2: 1}))
    assert good.trusted and good.per_position == (3, 2, 1) and good.acceptance_length == 2.5
    cases = {
        "counter reset (llamacpp:spec_decode_num_drafts_total went from 4 to 1)": (
            _text(4, 12, 6, {0: 4, 1: 2}),
            _text(1, 3, 2, {0: 4, 1: 2}),
        ),
        "counter reset (position 0 went from 4 to 1)": (
            _text(4, 12, 6, {0: 4, 1: 2}),
            _text(8, 24, 12, {0: 1, 1: 2}),
        ),
        "counter reset (position 2 appeared mid-level)": (
            _text(4, 12, 6, {0: 4, 1: 2}),
            _text(8, 24, 14, {0: 4, 1: 2, 2: 8}),
        ),
        f"{ACCEPTED} is nan, not a count": (_text(4, 12, 6, {}), _text(8, 24, "NaN", {})),
        f"{DRAFTS} is inf, not a count": (_text(4, 12, 6, {}), _text("+Inf", 24, 12, {})),
        f"{ACCEPTED} is -1.0, not a count": (_text(4, 12, 6, {}), _text(8, 24, -1, {})),
        "30 accepted of 12 drafted tokens": (_text(4, 12, 6, {}), _text(8, 24, 36, {})),
        "the positions sum to 3, the accepted total is 12": (
            _text(0, 0, 0, {}),
            _text(8, 24, 12, {0: 2, 1: 1}),
        ),
    }
    for reason, (before, after) in cases.items():
        figures = _deltas(before, after)
        assert figures.unknown == reason, (reason, figures)
        assert figures.acceptance_length is None and not figures.speculated
    # the first draft of the server's life: the positions appear, counted from 0
    first = _deltas(_text(0, 0, 0, {}), _text(4, 12, 6, {0: 4, 1: 2}))
    assert first.trusted and first.per_position == (4, 2)


def test_a_real_vllms_exposition_is_trusted_whole() -> None:
    """The real vLLM 0.32 bed's ``/metrics`` around one level (tests/data/vllm/: 444 series,
    ``*_created`` samples, ``engine``/``model_name`` labels) is read whole, its counters'
    deltas fit together, and the counters-only read (during a level) sees the same counts."""
    from pathlib import Path

    data = Path(__file__).resolve().parent.parent / "data" / "vllm"
    before = read_prometheus((data / "metrics-before.txt").read_text())
    after = read_prometheus((data / "metrics-after.txt").read_text())
    assert before.trusted and after.trusted, (before.problem, after.problem)
    assert sum(len(s) for s in after.samples.values()) > 370
    vllm = get_engine("vllm").endpoints.spec_counters
    figures = counter_deltas(before.samples, after.samples, vllm)
    assert figures.trusted and figures.speculated, figures
    assert sum(figures.per_position) == figures.accepted <= figures.draft_tokens
    narrow = counter_deltas(
        read_prometheus((data / "metrics-before.txt").read_text(), vllm.names).samples,
        read_prometheus((data / "metrics-after.txt").read_text(), vllm.names).samples,
        vllm,
    )
    assert narrow == figures


def test_an_unknown_level_reads_back_as_recorded() -> None:
    figures = CounterAcceptance.untrusted(
        "counter reset (x went from 3 to 1)", output_tokens=None, client_output_tokens=120
    )
    assert CounterAcceptance.from_dict(figures.to_dict()) == figures
