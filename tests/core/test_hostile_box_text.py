"""Versions, ``--help`` and JSON endpoints from a broken or lying box (issue 44): each reader is
total over generated hostile input — no exception — and what it returns is in range: a release
is a release number or unknown (never a guess), a help's flags are flags or the help is not
trusted with the reason, a JSON answer is plain data or refused with the reason, and nothing
from ``/server_info`` reaches a record as ``NaN``, a nested structure or an absurd figure.

Each property runs :data:`tests.fixtures.hostile.EXAMPLES` generated inputs (the issue's bar: at
least 1,000)."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from specconsole.bench.api import MAX_ACCEPT_LENGTH, accept_length_from_server_info
from specconsole.core.boxjson import MAX_DEPTH, read_box_json
from specconsole.core.config.capabilities import help_trouble, parse_help
from specconsole.core.config.releases import parse_release, parse_version
from specconsole.core.engine.registry import engine_names, get_engine
from specconsole.core.machine.results import server_info_items
from tests.fixtures.hostile import PROPERTY

version_words = st.one_of(
    st.from_regex(r"v?\d{1,9}\.\d{1,9}(\.\d{1,25})?(\.?(post|rc|dev|a|b)\d{0,9})?", fullmatch=True),
    st.sampled_from(
        [
            "0.5.23",
            "0.34.0",
            "<html><body>502 Bad Gateway</body></html>",
            "Traceback (most recent call last):",
            "ModuleNotFoundError: No module named 'sglang'",
            "version: 0.5.9",
            "1.2.3.4.5",
            "",
        ]
    ),
    st.text(max_size=30),
)
outputs = st.lists(version_words, max_size=8).map("\n".join)


@PROPERTY
@given(outputs)
def test_a_version_is_a_release_number_or_unknown(output: str) -> None:
    release = parse_release(output)
    if release is not None:
        assert len(release) <= 40 and release in output
        parse_version(release)  # a release number, ordered like the engine's
    for name in engine_names():
        engine = get_engine(name)
        got = engine.parse_release(output)
        assert got is None or isinstance(got, str)
        body = engine.release_from_server_info({"version": output})
        assert body is None or (isinstance(body, str) and body in output)


help_lines = st.one_of(
    st.sampled_from(
        [
            "  -h, --help            show this help message and exit",
            "  --port PORT           The port of the server.",
            "  --model-path MODEL_PATH, --model MODEL_PATH",
            "                        The path of the model weights.",
            "--spec-draft-n-max N                    number of tokens to draft",
            "--draft-max N                           the argument has been removed. use",
            "                                        --spec-draft-n-max or",
            "----- common params -----",
            "options:",
            "  --speculative-num-dra",
            "ft-tokens SPECULATIVE_NUM_DRAFT_TOKENS",
        ]
    ),
    st.from_regex(
        r" {0,4}-{1,3}[a-z0-9][a-z0-9_.-]{0,20}( [A-Z_]{1,10})?(, --[a-z-]{1,12})?", fullmatch=True
    ),
    st.text(max_size=60),
)
helps = st.lists(help_lines, max_size=40).map("\n".join)


@PROPERTY
@given(helps, st.sampled_from(engine_names()))
def test_a_help_is_read_into_flags_or_not_trusted(text: str, engine: str) -> None:
    flags = parse_help(text, source="x --help")
    if flags is None:
        return
    assert flags.accepted and all(f.startswith("-") and " " not in f for f in flags.accepted)
    assert set(flags.removed) <= set(flags.accepted)
    anchors = [f for f, key in get_engine(engine).modelled_flags.items() if key == "port"]
    trouble = help_trouble(text, flags, anchors)
    assert isinstance(trouble, str)
    if not any(flags.accepts(a) for a in anchors):
        assert trouble  # no port flag: not this server's help as we know it


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**30), 10**30),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=20),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(
                [
                    "version",
                    "avg_spec_accept_length",
                    "internal_states",
                    "server_args",
                    "decode",
                    "max_total_num_tokens",
                    "speculative_num_steps",
                    "tp_size",
                    "attention_backend",
                ]
            ),
            inner,
            max_size=5,
        ),
    ),
    max_leaves=20,
)
answers = st.one_of(
    json_values.map(lambda v: json.dumps(v, allow_nan=True)),
    st.sampled_from(
        [
            "<!DOCTYPE html><html><body>502 Bad Gateway</body></html>",
            '{"version": "0.5.23"',
            "[" * 5000 + "]" * 5000,
            '{"avg_spec_accept_length": NaN}',
            '{"avg_spec_accept_length": 1e400}',
            '{"version": "0.5.23", "max_total_num_tokens": -2e308}',
            "",
        ]
    ),
    st.text(max_size=40),
)


@PROPERTY
@given(answers)
def test_a_json_answer_is_plain_data_or_refused_and_nothing_absurd_reaches_a_record(
    text: str,
) -> None:
    body, problem = read_box_json(text)
    if problem:
        assert body is None
        return
    json.dumps(body, allow_nan=False)  # raises if a NaN or an Infinity got through
    accept = accept_length_from_server_info(body)
    assert accept is None or (math.isfinite(accept) and 1.0 <= accept <= MAX_ACCEPT_LENGTH)
    for name in engine_names():
        endpoints = get_engine(name).endpoints  # each engine's entries, nested as it nests
        for key, value in server_info_items(
            body, endpoints.server_info_keys, endpoints.server_info_nested
        ):
            kept = json.loads(value)
            assert not isinstance(kept, dict | list), (key, value)
            assert not isinstance(kept, float) or math.isfinite(kept)
        got = get_engine(name).release_from_server_info(body)
        assert got is None or (isinstance(got, str) and len(got) <= 40)


def test_a_proxys_html_and_a_hard_wrapped_help_say_why() -> None:
    _, problem = read_box_json("<!DOCTYPE html><html><body>502 Bad Gateway</body></html>")
    assert problem == "an HTML page, not JSON (a proxy or another server answered)"
    assert read_box_json("[" * 40 + "]" * 40)[1] == f"nested more than {MAX_DEPTH} deep"
    assert read_box_json('{"a": NaN}')[1].startswith("not JSON (NaN is not JSON")
    assert read_box_json('{"a": 1e400}')[1].startswith("not JSON (1e400 is past a float's range")
    words = "  --speculative-num-draft-tokens SPECULATIVE_NUM_DRAFT_TOKENS The number of tokens"
    text = "\n".join([*(words for _ in range(10)), "  --port PORT  the port"])
    folded = "\n".join(text[i : i + 40] for i in range(0, len(text), 40))
    flags = parse_help(folded)
    assert flags is not None
    assert help_trouble(folded, flags, ["--port"]).startswith("hard-wrapped at 40 columns")
