"""Fuzzing the two readers issue 27 found cracks in: ``bench``'s argument parser and the unit
reader. Random values — numbers of every size and sign, ``inf``/``nan``, text with control
characters and line separators, quotes, ``%`` and ``$`` — give either a value within the
plan's bounds or a clear refusal (argparse's usage error, ``ValueError``, ``ConfigError``),
never another exception and never a hang.

Bounded: each property has a fixed ``max_examples``; the deadline is generous (the machine is
shared) and only catches the pathological — a reader that loops or recurses without end.
"""

from __future__ import annotations

import argparse
import contextlib
import io
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specconsole.cli import build_parser
from specconsole.commands.bench import spec_from_args
from specconsole.core.config.bounds import BENCH_BOUNDS, MAX_LADDER_LEVELS
from specconsole.core.config.errors import ConfigError
from specconsole.core.launch.systemd import parse_unit
from specconsole.core.launch.unit import edit_unit
from specconsole.core.launch.unit_read import UnitContext, read_cat
from specconsole.core.launch.unit_secrets import inline_secrets, move_inline_secrets
from specconsole.core.ports import BenchSpec

FUZZ = settings(
    max_examples=300,
    deadline=timedelta(seconds=10),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

NUMBER_OPTIONS = (
    "--requests",
    "--duration",
    "--window-s",
    "--window-tokens",
    "--warmup",
    "--input-len",
    "--output-len",
    "--range-ratio",
    "--seed",
    "--request-rate",
    "--temperature",
    "--request-timeout",
    "--stall-timeout",
    "--repeats",
)
LIST_OPTIONS = ("--ladder", "--percentiles")
OTHER_OPTIONS = ("--api", "--window", "--dataset", "--extra-body", "--header", "--slo")

awkward = st.sampled_from(
    ["inf", "-inf", "nan", "NaN", "1e13", "1e309", "-0", "0", "0x10", "1_000", "", " ", "1,2,"]
)
numbers = st.one_of(
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    awkward,
)
texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
values = st.one_of(numbers, texts)
lists = st.one_of(
    st.lists(numbers, min_size=0, max_size=8).map(",".join),
    st.integers(0, 400).map(lambda n: ",".join(["1"] * n)),
    texts,
)
urls = st.one_of(
    st.sampled_from(
        [
            "http://127.0.0.1:1",
            "http://127.0.0.1:99999",
            "http://",
            "https://x:0",
            "ftp://x:1",
            "http://a b:1",
            "http://[::1]:30000",
            "http://x:1/path\u2028",
        ]
    ),
    texts,
)
option = st.one_of(
    st.tuples(st.sampled_from(NUMBER_OPTIONS), values),
    st.tuples(st.sampled_from(LIST_OPTIONS), lists),
    st.tuples(st.sampled_from(OTHER_OPTIONS), values),
)


def _within_bounds(spec: BenchSpec) -> None:
    """Whatever the parser let through lies within the plan's bounds."""
    assert 1 <= len(spec.ladder) <= MAX_LADDER_LEVELS
    assert all(1 <= c <= BENCH_BOUNDS["ladder"].high for c in spec.ladder)
    checked: dict[str, Any] = {
        "requests_per_level": spec.requests_per_level,
        "duration_s": spec.duration_s,
        "window_s": spec.window_s,
        "window_tokens": spec.window_tokens,
        "warmup_requests": spec.warmup_requests,
        "input_len": spec.input_len,
        "output_len": spec.output_len,
        "range_ratio": spec.range_ratio,
        "seed": spec.seed,
        "request_rate": spec.request_rate,
        "temperature": spec.temperature,
        "request_timeout_s": spec.request_timeout_s,
        "stall_timeout_s": spec.stall_timeout_s,
        "repeats": spec.repeats,
    }
    for field, value in checked.items():
        if value is None:
            continue
        bound = BENCH_BOUNDS[field]
        assert value == value and value <= bound.high, (field, value)  # NaN != NaN
        assert value > bound.low if bound.low_open else value >= bound.low, (field, value)
    assert all(0 < q < 100 for q in spec.percentiles)


@FUZZ
@given(st.lists(option, max_size=6), urls)
def test_bench_arguments_are_bounded_or_refused(pairs: list[tuple[str, str]], url: str) -> None:
    argv = ["bench"]
    for name, value in pairs:
        argv.append(f"{name}={value}")  # '=' keeps a value that starts with '-' a value
    argv.append(url if not url.startswith("-") else "http://x:1")
    parser = build_parser()
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:
            assert exc.code == 2  # a usage error naming the option
            return
    try:
        spec = spec_from_args(args)
    except ValueError:  # the CLI prints "error: ..." and exits 2 (PromptError is one too)
        return
    _within_bounds(spec)
    from specconsole.bench.loadgen import plan_for

    try:
        plan_for(spec)
    except ValueError:
        return


line_parts = st.one_of(
    st.sampled_from(
        [
            "[Unit]",
            "[Service]",
            "[Install]",
            "",
            "# /etc/systemd/system/x.service",
            "# /etc/systemd/system/x.service.d/o.conf",
            "# /dev/shm must be >= 16G",
            "ExecStart=",
            "ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m",
            "ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path $MODEL \\",
            "    --api-key sk-abcdefghijklmnop0123 \\",
            "    --port 30000",
            "Environment=MODEL=/m HF_TOKEN=hf_abcdefghijklmnopqrstuvwx",
            "EnvironmentFile=-/etc/default/x",
            "User=%u",
            "WorkingDirectory=~",
            "Description=%n %% %Z",
        ]
    ),
    st.builds(
        lambda key, value: f"{key}={value}",
        st.sampled_from(
            ["ExecStart", "Environment", "EnvironmentFile", "User", "WorkingDirectory"]
        ),
        st.lists(
            st.sampled_from([*"ab -=$%{}\"'\\/\t\u2028\x85\x0b:@;#", "--x", "$A", "${A}"]),
            max_size=20,
        ).map("".join),
    ),
)
units = st.lists(line_parts, max_size=25).map("\n".join)
contexts = st.builds(
    UnitContext,
    unit=st.sampled_from([None, "x.service", "x@i-j.service"]),
    scope=st.sampled_from([None, "system", "user"]),
    facts=st.dictionaries(st.sampled_from(list("hHuUm")), st.text(max_size=8), max_size=3),
    env_files=st.dictionaries(
        st.sampled_from(["/etc/default/x", "/e"]),
        st.text(alphabet=st.sampled_from(list("AB=\"' \\\n#x$")), max_size=40),
        max_size=2,
    ),
)


@FUZZ
@given(units, contexts)
def test_the_unit_reader_reads_or_refuses(text: str, context: UnitContext) -> None:
    read_cat(text)
    read_cat(text, ["/etc/systemd/system/x.service", "/etc/systemd/system/x.service.d/o.conf"])
    inline_secrets(text)
    try:
        config = parse_unit(text, context)
    except ConfigError:
        pass
    else:
        try:
            edit_unit(text, config, env_file_path="/var/backups/x-env", context=context)
        except ConfigError:
            pass
    try:
        move_inline_secrets(text, "/var/backups/x-user-env")
    except ConfigError:
        pass


@FUZZ
@given(st.text(max_size=400))
def test_any_text_is_read_or_refused(text: str) -> None:
    for paths in (None, ["/etc/systemd/system/x.service"]):
        read_cat(text, paths)
    try:
        parse_unit(text)
    except ConfigError:
        pass


def test_the_parser_is_the_clis() -> None:
    """The fuzzed parser is the one ``specconsole bench`` uses (not a copy)."""
    parser = build_parser()
    assert isinstance(parser, argparse.ArgumentParser)
    args = parser.parse_args(["bench", "http://127.0.0.1:30000"])
    assert spec_from_args(args).ladder == (1, 4, 16, 32, 64)
