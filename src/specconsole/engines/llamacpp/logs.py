"""llama-server's log grammar: its header, load and ready lines, per-request timings, the
draft acceptance line, speculation that silently did not start, and its deaths.

Why it exists: what the parser knows about llama.cpp's output, as one
:class:`~specconsole.core.logs.grammar.LogGrammar` (:data:`GRAMMAR`). Every line of this
generation starts ``MIN.SS.mmm.uuu L`` (time since start, level I/W/E/D), then either a
4-character subsystem and a 12-character, right-aligned function name (``srv    load_model:``)
or a bare function name (``common_speculative_init_result:``); the header reader strips all
but the function name, which routes the line (:data:`HEADS`). Argument errors come before the
logger starts, without a header (``error while handling argument "--draft-max": ...``); a C++
abort opens a group like a traceback (``terminate called after throwing ...``). The real lines
are in tests/data/llamacpp/ (docs/llamacpp-testbed.md).
"""

from __future__ import annotations

import re

from specconsole.core.logs.events import (
    Capacity,
    DecodeStats,
    FatalCause,
    LogEvent,
    ProcessStarting,
    Ready,
    Role,
    SpecStats,
    SpeculationOff,
    SuggestedFix,
    WeightsBegin,
    WeightsEnd,
)
from specconsole.core.logs.fields import int_after, num_after
from specconsole.core.logs.grammar import Header, HeaderReader, LogGrammar
from specconsole.core.logs.state import Handler, ParseState

from .fatal import (
    CAUSE_WORDS,
    FIXES,
    HINTS,
    PRECEDENCE,
    RECOVERABLE,
    SIGNATURES,
    LlamaCause,
    removed_flag_fix,
)
from .flags import MODELLED_FLAGS

__all__ = ["GRAMMAR", "HEADS", "READY_LINE"]

NAME = "llamacpp"
READY_LINE = "llama_server: model loaded"
"""This generation's ready line (``/health`` answers 200 from here; ``listening on`` follows)."""
_OLD_READY = "server is listening on"
"""Older builds: ``main: server is listening on http://... - starting the main loop``."""

_HEADER = re.compile(r"(\d+\.\d\d\.\d{3}\.\d{3}) [IWED] ")


def read_header(msg: str) -> Header | None:
    """``0.00.477.155 I srv  llama_server: model loaded`` -> ``llama_server: model loaded``
    (the subsystem and the function's padding dropped; the time since start kept)."""
    m = _HEADER.match(msg)
    if m is None:
        return None
    rest = msg[m.end() :]
    if rest[4:5] == " " and rest[17:18] == ":" and rest[:4].strip().isalpha():
        rest = rest[5:].lstrip(" ")  # "srv  llama_server:", "slot print_timing:"
    return rest, m.group(1), None, None, True


def _evidence(s: ParseState, body: str) -> None:
    """Keep a signature line for the exit line that concludes it (a handler's line does not
    reach the parser's own evidence check)."""
    if s.signature(body) is not None and not s.is_recoverable(body):
        s.evidence.append(body)


def on_server(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """``llama_server: initializing ...`` / ``model loaded`` / ``exiting due to ...``."""
    text = body[len("llama_server: ") :]
    if text.startswith("initializing"):
        s.reset_start()
        return [ProcessStarting(timestamp=ts, rank=rank, text=body)]
    if text.startswith("model loaded"):
        return [Ready(timestamp=ts, rank=rank)]
    if text.startswith("exiting due to"):
        return s.conclude(body, ts, rank)
    return []


def on_main(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """Older builds' ready line: ``main: server is listening on ... - starting the main loop``."""
    if _OLD_READY in body:
        return [Ready(timestamp=ts, rank=rank)]
    return []


def on_load_model(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """``load_model: loading model '...'`` (the target's weights begin), ``initializing,
    n_slots = N, n_ctx_slot = C, kv_unified = 'B'`` (the KV cache: N x C tokens, or C shared
    when unified), ``failed to initialize speculative decoding context: ...`` (serving without
    speculation, or — with the exit line after it — a refused setting)."""
    if "loading model" in body:
        return [WeightsBegin(timestamp=ts, rank=rank, role=Role.TARGET)]
    if "n_ctx_slot" in body:
        slots, per_slot = int_after(body, "n_slots ="), int_after(body, "n_ctx_slot =")
        unified = "kv_unified = 'true'" in body
        total = None
        if per_slot is not None:
            total = per_slot if unified or slots is None else slots * per_slot
        return [
            Capacity(
                timestamp=ts,
                rank=rank,
                max_total_num_tokens=total,
                max_running_requests=slots,
                context_len=per_slot,
            )
        ]
    if "failed to initialize speculative decoding context" in body and s.is_recoverable(body):
        reason = body.split("speculative decoding context:", 1)[-1].strip()
        return [SpeculationOff(timestamp=ts, rank=rank, reason=reason)]
    _evidence(s, body)
    return []


def on_speculative(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """``common_speculative_init_result: loading draft model '...'`` (the draft's weights),
    and ``common_specu: the target and draft vocabs are not compatible``."""
    if "loading draft model" in body:
        return [WeightsBegin(timestamp=ts, rank=rank, role=Role.DRAFT)]
    if "vocabs are not compatible" in body:
        return [SpeculationOff(timestamp=ts, rank=rank, reason=body.split(":", 1)[-1].strip())]
    _evidence(s, body)
    return []


def on_context(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """``llama_context: ...``: the target's weights are in and its context — the KV cache,
    one cell per token of ``-c`` — is being built (a failed allocation is a KV-cache death)."""
    _evidence(s, body)
    if s.weights_end.get("target"):
        return []
    s.weights_end["target"] = 1
    return [WeightsEnd(timestamp=ts, rank=rank, role=Role.TARGET)]


def on_timing(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """Per request: ``print_timing: id  0 | task 1 | draft acceptance = 0.47674 (   41
    accepted /    86 generated), mean len =  2.86`` and ``... |        eval time =  3468.49
    ms /    64 tokens (   55.06 ms per token,    18.16 tokens per second)``."""
    if "draft acceptance =" in body:
        return [
            SpecStats(
                timestamp=ts,
                rank=rank,
                accept_len=num_after(body, "mean len ="),
                accept_rate=num_after(body, "draft acceptance ="),
                accepted_tokens=int_after(body, "("),
                drafted_tokens=int_after(body, "accepted /"),
            )
        ]
    if "| " in body and body.rsplit("| ", 1)[-1].lstrip().startswith("eval time"):
        rate = num_after(body, "ms per token,")
        return [DecodeStats(timestamp=ts, rank=rank, gen_throughput=rate)]
    return []


def on_bind(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """``start: couldn't bind HTTP server socket, hostname: H, port: P`` (the exit line
    ``exiting due to HTTP server error`` follows)."""
    _evidence(s, body)
    return []


_ARGUMENT = re.compile(r'error while handling argument "(?P<flag>[^"]+)": (?P<why>.*)')
_INVALID = re.compile(r"error: invalid argument: (?P<flag>\S+)")
_RENAMED = re.compile(r"use (--[\w-]+)")
_GONE_WITHOUT_NAME = {
    "-cd": "the draft's context follows ctx_size (-c)",
    "--ctx-size-draft": "the draft's context follows ctx_size (-c)",
}
"""Flags this generation dropped with no new name (it exits 1: ``error: invalid argument``)."""


def on_error(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """Argument errors, printed before the logger starts: a removed flag (with its new
    name), an unknown value, an unknown flag. Each proves a death by itself."""
    if s.fatal_seen:
        return []
    m = _ARGUMENT.match(body)
    if m is not None:
        flag, why = m["flag"], m["why"]
        if "has been removed" in why:
            new = _RENAMED.search(why)
            if new is not None:
                fix = removed_flag_fix(flag, MODELLED_FLAGS.get(new.group(1)), new.group(1))
                return [
                    s.fatal_now(
                        LlamaCause.REMOVED_ARGUMENT,
                        body,
                        ts,
                        rank,
                        {LlamaCause.REMOVED_ARGUMENT: (fix,)},
                    )
                ]
            return [s.fatal_now(LlamaCause.REMOVED_ARGUMENT, body, ts, rank)]
        return [s.fatal_now(FatalCause.BAD_ARGUMENT, body, ts, rank)]
    m = _INVALID.match(body)
    if m is not None:
        return [s.fatal_now(FatalCause.BAD_ARGUMENT, body, ts, rank, _gone_fix(m["flag"]))]
    return []


def _gone_fix(flag: str) -> dict[str, tuple[SuggestedFix, ...]] | None:
    why = _GONE_WITHOUT_NAME.get(flag)
    if why is None:
        return None
    text = f"Remove {flag} from extra_args: this llama.cpp generation dropped it ({why})."
    return {FatalCause.BAD_ARGUMENT: (SuggestedFix(text),)}


HEADS: dict[str, Handler] = {
    "llama_server:": on_server,
    "main:": on_main,
    "load_model:": on_load_model,
    "common_speculative_init_result:": on_speculative,
    "common_specu:": on_speculative,
    "print_timing:": on_timing,
    "llama_context:": on_context,
    "start:": on_bind,
    "error": on_error,
    "error:": on_error,
}
"""First word of a message (the function that logged it) -> its handler."""

GRAMMAR = LogGrammar(
    name=NAME,
    capacity_words="n_slots × n_ctx_slot, or n_ctx_slot when kv_unified",
    heads=HEADS,
    headers=(HeaderReader("0123456789", read_header),),
    header_examples=(("llama.cpp", "0.00.306.901 I MESSAGE"),),
    quiet_heads=frozenset({"print_timing:"}),
    ready_lines=(READY_LINE, _OLD_READY),
    traceback_openers=("terminate called after throwing",),
    signatures=SIGNATURES,
    precedence=PRECEDENCE,
    fixes=FIXES,
    cause_words=CAUSE_WORDS,
    recoverable=RECOVERABLE,
    hints=HINTS,
)
"""llama.cpp's ``llama-server`` grammar (the engine's ``log_grammar``)."""
