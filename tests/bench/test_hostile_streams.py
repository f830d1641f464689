"""The counts in a generation stream from a broken or lying server (issue 44): the three
APIs' parsers are total over generated hostile events — each stream ends in an outcome whose
counts are whole numbers in range, or in a ``RequestFailed`` naming why (a string, ``1e400``,
a list, a negative or a 5,000-digit count is ``protocol``), never another exception.

The property runs :data:`tests.fixtures.hostile.EXAMPLES` generated streams (the issue's bar: at
least 1,000)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specconsole.bench.api import APIS, MAX_TOKEN_COUNT, make_parser
from specconsole.bench.waits import RequestFailed
from tests.fixtures.hostile import PROPERTY

counts = st.one_of(
    st.integers(0, 5000),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["3", "many", None, [1], {"n": 1}, True, "1e400"]),
)
"""What a count field may hold (``"1e400"`` is written as the bare literal, see ``_json``)."""


def _json(value: object) -> str:
    text = json.dumps(value)
    return "1e400" if value == "1e400" else text


@st.composite
def events(draw: st.DrawFn) -> str:
    fields = {
        name: _json(draw(counts))
        for name in ("completion_tokens", "prompt_tokens", "spec_verify_ct")
        if draw(st.booleans()) or name == "completion_tokens"
    }
    inner = "{" + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}"
    shape = draw(st.sampled_from(["generate", "completions", "chat", "garbage"]))
    if shape == "generate":
        return '{"text": "ab", "meta_info": ' + inner + "}"
    if shape == "completions":
        return '{"choices": [{"text": "ab"}], "usage": ' + inner + "}"
    if shape == "chat":
        return '{"choices": [{"delta": {"content": "ab"}}], "usage": ' + inner + "}"
    return draw(st.sampled_from(["[1, 2]", '"x"', "{", '{"meta_info": [3]}', "null"]))


streams = st.lists(events(), min_size=1, max_size=6)


@PROPERTY
@given(streams, st.sampled_from(APIS), st.booleans())
def test_a_streams_counts_are_in_range_or_the_request_fails_with_the_reason(
    stream: list[str], api: str, together: bool
) -> None:
    parser = make_parser(api)
    blocks = [f"data: {event}\n\n".encode() for event in stream] + [b"data: [DONE]\n\n"]
    if together:  # one read carrying every event: the fast paths
        blocks = [b"".join(blocks)]
    try:
        for at, block in enumerate(blocks):
            assert parser.feed(block, 0.1 * (at + 1)) >= 0
        outcome = parser.finish()
    except RequestFailed as exc:
        assert exc.kind and exc.detail
        return
    assert 0 <= outcome.completion_tokens < MAX_TOKEN_COUNT
    for count in (outcome.prompt_tokens, outcome.spec_verify_ct):
        assert count is None or (type(count) is int and 0 <= count < MAX_TOKEN_COUNT)
    assert all(type(k) is int and k > 0 for k in outcome.chunk_tokens)


@pytest.mark.parametrize(
    ("meta", "said"),
    [
        ('"completion_tokens": 3, "prompt_tokens": "many"', "prompt_tokens is 'many'"),
        ('"completion_tokens": 3, "prompt_tokens": 1e400', "prompt_tokens is inf"),
        ('"completion_tokens": 3, "spec_verify_ct": [1]', "spec_verify_ct is [1]"),
        ('"completion_tokens": 3, "prompt_tokens": -5', "prompt_tokens is -5"),
        ('"completion_tokens": 3' + "0" * 5000, "completion_tokens of 5,001 digits"),
    ],
)
def test_a_count_that_is_no_count_fails_the_request_as_protocol_naming_it(
    meta: str, said: str
) -> None:
    parser = make_parser("generate")
    with pytest.raises(RequestFailed) as failed:  # a 5,000-digit count: as it arrives
        parser.feed(b'data: {"text": "abc", "meta_info": {' + meta.encode() + b"}}\n\n", 0.1)
        parser.feed(b"data: [DONE]\n\n", 0.2)
        parser.finish()
    assert failed.value.kind == "protocol" and failed.value.detail.startswith(said)
