"""A pydantic report (vLLM's argument checks) proves its traceback complete only once every
error it announces has its closing line and a line of it names the cause.

Why: such a report ends on ``For further information visit ...``, not on its exception line,
so without this rule a watch waits its whole one-second fallback before saying the crash.
"""

from __future__ import annotations

from specconsole.core.logs.parser import LogParser

HEAD = [
    "Traceback (most recent call last):",
    '  File "/v/arg_utils.py", line 2099, in create_speculative_config',
    "    return SpeculativeConfig(**self.speculative_config)",
]
CAUSE = (
    "  Value error, Invalid repository ID or local directory specified: '/m/none'. "
    "[type=value_error, input_value=ArgsKwargs(()), input_type=ArgsKwargs]"
)
CLOSER = "    For further information visit https://errors.pydantic.dev/2.14/v/value_error"


def _parser() -> LogParser:
    return LogParser(engine="vllm")


def test_one_error_closed_with_its_cause_is_proven() -> None:
    parser = _parser()
    parser.feed_lines(
        [*HEAD, "pydantic_core._pydantic_core.ValidationError: 1 validation error for X", CAUSE]
    )
    assert parser.in_traceback and not parser.traceback_proven
    parser.feed_lines([CLOSER])
    assert parser.traceback_proven


def test_two_errors_are_proven_at_the_second_closer() -> None:
    parser = _parser()
    parser.feed_lines(
        [*HEAD, "pydantic_core._pydantic_core.ValidationError: 2 validation errors for X"]
    )
    parser.feed_lines(["  num_speculative_tokens", "  Input should be greater than 0", CLOSER])
    assert not parser.traceback_proven
    parser.feed_lines([CAUSE, CLOSER])
    assert parser.traceback_proven


def test_a_closed_report_without_a_known_cause_waits() -> None:
    parser = _parser()
    parser.feed_lines(
        [
            *HEAD,
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for X",
            "  Value error, something nobody has seen [type=value_error]",
            CLOSER,
        ]
    )
    assert parser.in_traceback and not parser.traceback_proven


def test_a_chained_traceback_starts_over() -> None:
    parser = _parser()
    parser.feed_lines(
        [*HEAD, "pydantic_core._pydantic_core.ValidationError: 1 validation error for X", CAUSE]
    )
    parser.feed_lines(
        ["", "The above exception was the direct cause of the following exception:", ""]
    )
    assert not parser.traceback_proven
    parser.feed_lines([CLOSER])  # a closer of the former report proves nothing now
    assert not parser.traceback_proven
