"""A third engine's log grammar plugs in with no change to the core.

Why: the parser must name no engine; a new one (llama.cpp's ``llama-server`` is next) is a
:class:`LogGrammar` in its own package plus one registration. This builds a tiny grammar in
the llama.cpp style here (a ``0.00.477.155 E`` header, no Python tracebacks, its own causes
and remedies), registers it on a minimal engine object, and checks that the parser, the
one-line classifier, the load summary and the machine's crash outcome all carry its own
cause and fix — and that the shipped engines' logs read exactly as before beside it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from specconsole.core.engine.registry import engine_names, register, unregister
from specconsole.core.logs.dialect import classify_fatal
from specconsole.core.logs.events import (
    FatalCause,
    FatalError,
    LogEvent,
    Ready,
    SuggestedFix,
)
from specconsole.core.logs.grammar import FatalSignature, Header, HeaderReader, LogGrammar
from specconsole.core.logs.load_summary import summarize
from specconsole.core.logs.parser import LogParser, parse_lines
from specconsole.core.logs.state import ParseState
from specconsole.core.machine import events as ev
from specconsole.core.machine.handlers.watch import looks_fatal, translate

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"

DRAFT_UNREADABLE = "draft_unreadable"
REMOVED_ARGUMENT = "removed_argument"
HTTP_POOL = "http_thread_pool"

FIXES = {
    DRAFT_UNREADABLE: (
        SuggestedFix(
            "Check that the draft GGUF exists and is readable.",
            (("speculative_draft_model_path", "/models/draft.gguf"),),
        ),
    ),
    REMOVED_ARGUMENT: (SuggestedFix("Use the argument's new name (see the message)."),),
    HTTP_POOL: (SuggestedFix("Lower max_running_requests: each slot takes an HTTP thread."),),
}


def _read_header(msg: str) -> Header | None:
    """``0.00.477.155 E srv  `` -> the message after the level and subsystem."""
    if msg[1:2] != "." or msg[12:13] != " " or msg[13:14] not in "IWED" or msg[14:15] != " ":
        return None
    rest = msg[15:]
    if rest[3:5] == "  ":  # a padded subsystem (srv, cmn)
        rest = rest[3:].lstrip(" ")
    return rest, msg[:12], None, None, True


def _on_server(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    if body.startswith("llama_server: model loaded"):
        return [Ready(timestamp=ts, rank=rank)]
    if "exiting due to" in body:
        return s.conclude(body, ts, rank)  # the cause is in the lines just before
    return []


def _argument_error(body: str) -> str | None:
    if body.startswith("error while handling argument") and "has been removed" in body:
        return REMOVED_ARGUMENT
    return None


GRAMMAR = LogGrammar(
    name="fakellama",
    heads={"llama_server:": _on_server},
    headers=(HeaderReader("0123456789", _read_header),),
    header_examples=(("fake llama", "0.00.477.155 I srv  MESSAGE"),),
    ready_lines=("llama_server: model loaded",),
    traceback_openers=("terminate called after throwing",),
    signatures=(
        FatalSignature(DRAFT_UNREADABLE, ("failed to load draft model",)),
        FatalSignature(HTTP_POOL, ("httplib::ThreadPool", "Resource temporarily unavailable")),
    ),
    precedence={DRAFT_UNREADABLE: 150, REMOVED_ARGUMENT: 650, HTTP_POOL: 450},
    fixes=FIXES,
    recoverable=("failed to initialize speculative decoding context",),
    fatal_line=_argument_error,
    hints=("failed to", "Resource", "ThreadPool", "rror"),
)


class FakeLlama:
    """The minimal engine object: the registry needs its name, the parser its grammar."""

    name = "fakellama"
    log_grammar = GRAMMAR


@pytest.fixture
def fake() -> Iterator[None]:
    register(FakeLlama())  # type: ignore[arg-type]
    try:
        yield
    finally:
        unregister("fakellama")


DRAFT_MISSING = [
    "0.00.004.260 I srv    load_model: loading model '/m/target.gguf'",
    "0.00.306.901 E gguf_init_from_file: failed to open GGUF file '/m/nope.gguf' (No such file)",
    "0.00.306.950 E srv    load_model: failed to load draft model, '/m/nope.gguf'",
    "0.00.307.001 E srv  llama_server: exiting due to model loading error",
]


@pytest.mark.parametrize("engine", ["fakellama", None])
def test_the_engine_classifies_its_own_fatal_lines_with_its_own_fix(
    fake: None, engine: str | None
) -> None:
    assert "fakellama" in engine_names()
    events = LogParser(engine=engine).feed_lines(DRAFT_MISSING)
    (fatal,) = [e for e in events if isinstance(e, FatalError)]
    assert fatal.cause == DRAFT_UNREADABLE
    assert fatal.summary == "load_model: failed to load draft model, '/m/nope.gguf'"
    assert fatal.fixes == FIXES[DRAFT_UNREADABLE]
    assert fatal.timestamp == "0.00.307.001" and "exiting due to" in fatal.excerpt
    summary = summarize(events)
    assert summary.to_dict()["fatal"]["cause"] == DRAFT_UNREADABLE
    assert "fatal: draft_unreadable" in summary.one_line()
    # through the machine to the crash banner: the cause is a plain string, the fixes its own
    (seen,) = translate(fatal, epoch=3)
    assert isinstance(seen, ev.FatalSeen)
    assert seen.cause == DRAFT_UNREADABLE and type(seen.cause) is str
    assert seen.fixes == tuple(FIXES[DRAFT_UNREADABLE])


def test_a_line_that_proves_a_cause_alone_and_a_cpp_abort(fake: None) -> None:
    (removed,) = LogParser(engine="fakellama").feed(
        'error while handling argument "--draft-max": the argument has been removed. use '
        "--spec-draft-n-max"
    )
    assert isinstance(removed, FatalError) and removed.cause == REMOVED_ARGUMENT
    assert removed.fixes == FIXES[REMOVED_ARGUMENT] and removed.before_weights
    abort = [
        "terminate called after throwing an instance of 'std::system_error'",
        "  what():  Resource temporarily unavailable",
        "#6  httplib::ThreadPool::ThreadPool (this=0x5555)",
    ]
    (fatal,) = [e for e in parse_lines(abort, engine="fakellama") if isinstance(e, FatalError)]
    assert fatal.cause == HTTP_POOL and fatal.fixes == FIXES[HTTP_POOL]
    assert "terminate called" in fatal.excerpt


def test_ready_recoverable_and_the_one_line_rule(fake: None) -> None:
    parser = LogParser(engine="fakellama")
    assert parser.feed("0.00.477.155 I srv  llama_server: model loaded") == [
        Ready(timestamp="0.00.477.155")
    ]
    speculation_off = (
        "0.00.400.000 E srv  load_model: failed to initialize speculative decoding context: "
        "draft model vocab type must match target model to use speculation"
    )
    assert parser.feed(speculation_off) == [] and not parser.flush()
    # the one "is this fatal?" rule of the journal highlighter reads every registered grammar
    assert classify_fatal(["load_model: failed to load draft model, 'x'"])[0] == DRAFT_UNREADABLE
    assert looks_fatal("0.00.306.950 E srv    load_model: failed to load draft model, 'x'")


def test_the_shipped_engines_read_as_before_beside_it(fake: None) -> None:
    from specconsole.engines.sglang.fatal import FIXES as SGLANG_FIXES

    lines = (LOGS / "fatal_cuda_oom.log").read_text().splitlines()
    (fatal,) = [e for e in parse_lines(lines) if isinstance(e, FatalError)]
    assert fatal.cause is FatalCause.CUDA_OOM
    assert fatal.fixes == SGLANG_FIXES[FatalCause.CUDA_OOM]  # the default engine's remedies
    (vllm,) = [
        e
        for e in parse_lines((LOGS / "vllm_fatal_kv_cache.log").read_text().splitlines())
        if isinstance(e, FatalError)
    ]
    assert vllm.cause is FatalCause.KV_CACHE_NO_MEMORY


def test_a_grammar_must_rank_its_causes_and_cover_its_texts_with_hints() -> None:
    from specconsole.core.logs.dialect import Dialect

    unranked = LogGrammar(name="x", heads={}, signatures=(FatalSignature("mine", ("boom",)),))
    with pytest.raises(ValueError, match="has no rank"):
        Dialect((unranked,))
    unhinted = LogGrammar(
        name="x",
        heads={},
        signatures=(FatalSignature("mine", ("boom",)),),
        precedence={"mine": 1},
    )
    with pytest.raises(ValueError, match="hints"):
        Dialect((unhinted,))
