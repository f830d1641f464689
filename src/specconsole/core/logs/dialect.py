"""The grammars a parser reads with, compiled into its lookup tables.

Why it exists: :class:`~specconsole.core.logs.parser.LogParser` routes every line with a few
dict lookups; those dicts are the union of the grammars in use — one engine's when the caller
knows it, every registered engine's when it does not (``specconsole parse-log`` without
``--engine``, the console's journal highlighter). Compiling them is not free and a parser is
made per highlighted line, so a :class:`Dialect` is built once per set of grammars
(:func:`dialect_for`, cached) and shared by every parser that reads with it.

The registered engines' grammars come from the registry
(:mod:`specconsole.core.engine.registry`): the core never imports an engine package.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

from specconsole.core.logs.events import FatalCause, LogEvent

from .fatal import FatalRules
from .grammar import Header, LogGrammar
from .prefixes import GENERIC_HEADERS, Reader, strip_engine_header
from .state import Handler, ParseState

_TRACEBACK = "Traceback (most recent call last)"

__all__ = [
    "Dialect",
    "FastReader",
    "classify_fatal",
    "dialect_for",
    "fatal_signature",
    "grammars_for",
    "registered_grammars",
]


FastReader = tuple[
    Callable[[str, int], "tuple[int, str | None, str | None] | None"],
    dict[str, Handler],
    dict[str, tuple[str, ...]],
    int,
]
"""A compiled fast path: its header reader; its width-character heads -> merged handler; its
dropped heads -> the texts that still send such a line down the general path (a traceback,
another grammar's ready line); the width."""


def _argparse_error(body: str) -> str | None:
    """Python's argparse refusing an argument: ``launch_server.py: error: argument ...``."""
    if ": error: " in body and ".py: error:" in body:
        return FatalCause.BAD_ARGUMENT
    return None


def _chain(handlers: Sequence[Handler]) -> Handler:
    """One handler trying several grammars' handlers for the same first word in turn."""

    def chained(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        for handler in handlers:
            events = handler(s, body, ts, rank)
            if events:
                return events
        return []

    return chained


class Dialect:
    """A set of grammars as the parser's tables (built by :func:`dialect_for`)."""

    def __init__(self, grammars: Sequence[LogGrammar]) -> None:
        self.grammars: tuple[LogGrammar, ...] = tuple(grammars)
        self.rules = FatalRules(self.grammars)

        claims: dict[str, list[Handler]] = {}
        for g in self.grammars:
            for head, handler in g.heads.items():
                known = claims.setdefault(head, [])
                if handler not in known:
                    known.append(handler)
        self.heads: dict[str, Handler] = {
            head: handlers[0] if len(handlers) == 1 else _chain(handlers)
            for head, handlers in claims.items()
        }
        """First word of a message -> its handler: one dict lookup routes every line."""

        self.quiet_heads: frozenset[str] = frozenset(
            h for g in self.grammars for h in g.quiet_heads
        )
        self.openers: tuple[str, ...] = tuple(
            dict.fromkeys(t for g in self.grammars for t in g.traceback_openers)
        )
        self.fatal_lines = (
            _argparse_error,
            *(g.fatal_line for g in self.grammars if g.fatal_line is not None),
        )
        self.named: tuple[str, ...] = tuple(g.name for g in self.grammars if g.names_processes)

        readers: dict[str, list[Reader]] = {}
        for g in self.grammars:
            for reader in g.headers:
                for ch in reader.starts:
                    readers.setdefault(ch, []).append((reader.read, (g.name,)))
        self.readers: dict[str, tuple[Reader, ...]] = {c: tuple(r) for c, r in readers.items()}

        fast: dict[str, list[FastReader]] = {}
        for g in self.grammars:
            path = g.fast
            if path is None:
                continue
            table: dict[str, Handler] = {}
            for prefix, head in path.heads.items():
                if len(prefix) != path.width:
                    raise ValueError(f"{g.name}: fast head {prefix!r} is not {path.width} wide")
                if head not in g.quiet_heads or head not in self.heads:
                    raise ValueError(f"{g.name}: fast head {head!r} is not a quiet head")
                table[prefix] = self.heads[head]
            drops: dict[str, tuple[str, ...]] = {}
            for prefix, head in path.drops.items():
                if len(prefix) != path.width:
                    raise ValueError(f"{g.name}: fast drop {prefix!r} is not {path.width} wide")
                others = (o for o in self.grammars if o is not g and head in o.heads)
                drops[prefix] = (_TRACEBACK, *(t for o in others for t in o.ready_lines))
            for ch in path.starts:
                fast.setdefault(ch, []).append((path.read, table, drops, path.width))
        self.fast: dict[str, FastReader] = {c: f[0] for c, f in fast.items()}
        """First character of a line -> the fast path tried first on it."""
        self.fast_more: dict[str, tuple[FastReader, ...]] = {
            c: tuple(f[1:]) for c, f in fast.items() if len(f) > 1
        }
        """The other grammars' fast paths for the same first character, in order."""

        self.header_examples: tuple[tuple[str, str], ...] = (
            *GENERIC_HEADERS,
            *(example for g in self.grammars for example in g.header_examples),
        )
        """Every header form these grammars read, with a real-shaped example each."""

    def strip_header(self, msg: str) -> Header:
        """``msg`` without its process prefix and engine header (as the parser strips it)."""
        return strip_engine_header(msg, self.readers, self.named)[0]


@lru_cache(maxsize=32)
def dialect_for(grammars: tuple[LogGrammar, ...]) -> Dialect:
    """The compiled tables of ``grammars`` (cached: grammars are immutable and
    identity-hashed)."""
    return Dialect(grammars)


def registered_grammars() -> tuple[LogGrammar, ...]:
    """Every registered engine's grammar, the default engine's first (it wins a first word
    two grammars claim and lends its remedies to the generic causes). An engine that fails
    to load is left out: reading a log must not depend on a broken third-party package."""
    from specconsole.core.engine.registry import default_engine, engine_names, get_engine

    first = default_engine()
    names = sorted(engine_names(), key=lambda n: n != first)
    out: list[LogGrammar] = []
    for name in names:
        try:
            out.append(get_engine(name).log_grammar)
        except Exception:  # see the docstring
            continue
    return tuple(out)


def grammars_for(engine: str | None) -> tuple[LogGrammar, ...]:
    """The grammars to read ``engine``'s log with: its own, or every registered engine's
    when it is ``None`` or not registered."""
    if engine is not None:
        from specconsole.core.engine.registry import EngineNotFound, get_engine

        try:
            return (get_engine(engine).log_grammar,)
        except EngineNotFound:
            pass
    return registered_grammars()


def classify_fatal(
    lines: Iterable[str],
    *,
    before_weights: bool = False,
    grammars: Sequence[LogGrammar] | None = None,
) -> tuple[str, str]:
    """Classify fatal log text; returns (cause, the line that proves it).

    Every line of the excerpt is read; the cause ranked first among those the excerpt shows
    wins, with the line that proves it. ``grammars``: every registered engine's by default.
    Used by :mod:`specconsole.core.machine.handlers.watch` (one line out of context) and usable on
    any
    excerpt; the parser classifies its traceback groups the same way.
    """
    chosen = registered_grammars() if grammars is None else tuple(grammars)
    cause, proof, _ = dialect_for(chosen).rules.classify(lines, before_weights=before_weights)
    return cause, proof


def fatal_signature(line: str, grammars: Sequence[LogGrammar] | None = None) -> str | None:
    """The most specific known fatal cause whose signature is in one line, if any."""
    chosen = registered_grammars() if grammars is None else tuple(grammars)
    return dialect_for(chosen).rules.signature(line)
