"""An engine's log grammar: what its lines say and how to read them, as data and handlers.

Why it exists: the parser's machinery (collector prefixes, traceback groups, the fatal-cause
classifier, the fast path) is the same for every inference server; what differs is each
server's own header, its first words, its fatal signatures and its remedies. An engine
package fills one :class:`LogGrammar` with exactly that (``engines/<name>/logs.py`` exports
it as ``GRAMMAR``; :attr:`Engine.log_grammar <specconsole.core.engine.protocol.Engine>` hands
it out), and :class:`~specconsole.core.logs.parser.LogParser` compiles the grammars it is given
(:mod:`.dialect`) into one set of lookup tables. A third engine is one more grammar: no core
module names an engine.

What a grammar may count on (the core's generic knowledge, :mod:`.fatal`, :mod:`.prefixes`,
:mod:`.service`): collector prefixes, Ray's and PyTorch's rank prefixes, Python tracebacks and
the generic causes any PyTorch server shows (CUDA out of memory, illegal memory access, NCCL,
SIGKILL, a Python argument error before any weights loaded, an unknown traceback). Everything
else is the grammar's own.

Handlers are plain functions ``(state, message, timestamp, rank) -> events``
(:data:`~specconsole.core.logs.state.Handler`); the state offers what a handler needs to report
a death (:meth:`~specconsole.core.logs.state.ParseState.fatal_now`, ``consequence``,
``conclude``) with the fixes of the grammar that knows the cause.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from specconsole.core.logs.events import SuggestedFix

from .state import Handler

__all__ = [
    "FastPath",
    "FatalSignature",
    "Header",
    "HeaderReader",
    "LogGrammar",
]

Header = tuple[str, "str | None", "str | None", "str | None", bool]
"""What a header reader makes of a message: (the message after the header, the timestamp, the
rank, the header's record key, whether a new log record starts here). The record key is what
continuation lines of the same record repeat (vLLM's ``[file.py:N]``): a traceback group keeps
lines that carry its opening line's key."""


@dataclass(frozen=True, slots=True)
class HeaderReader:
    """How an engine's own line header is stripped (the innermost prefix of a line)."""

    starts: str
    """The first characters the header can start with: the parser tries a reader only on
    messages that start with one of them (one dict lookup per line, not one call per reader)."""
    read: Callable[[str], Header | None]
    """The message split at its header, or ``None`` when this is not the header."""


@dataclass(frozen=True, slots=True)
class FastPath:
    """An in-place reader of an engine's commonest lines (its statistics, HTTP access lines),
    tried before the general path on lines that start with one of :attr:`starts`, bare or
    after a journal ``-o short-iso`` prefix.

    Speed only: for every line it accepts it must give what the general path gives (the
    parser's fast-path tests compare them). Its :attr:`heads` route to the dialect's merged
    handler for the same first word, so a fast line and a general one meet the same handler.
    """

    starts: str
    read: Callable[[str, int], tuple[int, str | None, str | None] | None]
    """``read(line, at)``: where the message starts after the header found at ``line[at]``,
    with its timestamp and rank; ``None``: not the header this path reads in place."""
    heads: Mapping[str, str]
    """The message's first :attr:`width` characters -> the first word whose handler reads it
    (one of the grammar's :attr:`LogGrammar.quiet_heads`)."""
    drops: Mapping[str, str] = field(default_factory=dict)
    """The message's first :attr:`width` characters -> the first word of lines the grammar's
    own handler makes nothing of (an HTTP access line, ``INFO:``): they yield nothing unless
    they hold a traceback or the ready line of another grammar in use that claims the same
    word (vLLM's ``Application startup complete`` after uvicorn's ``INFO:``)."""
    width: int = 7


@dataclass(frozen=True, slots=True)
class FatalSignature:
    """Texts that show a fatal cause wherever they appear in a line (case-sensitive)."""

    cause: str
    """A :class:`~specconsole.core.logs.events.FatalCause` or one of the engine's own causes
    (a string it defines: the console shows it as words, records keep it as is)."""
    texts: tuple[str, ...]
    wrapper: bool = False
    """The text only says that something failed (SGLang's ``Scheduler hit an exception``): the
    proof shown is the traceback's exception line, and an argument error is not inferred."""


@dataclass(frozen=True, eq=False, repr=False)
class LogGrammar:
    """One engine's log grammar. Every field but :attr:`name` and :attr:`heads` is optional;
    compiled with the others by :mod:`.dialect` (identity-hashed, so compiled tables are
    cached per set of grammars)."""

    name: str
    """The engine's registry name (what :meth:`ParseState.speaks` answers for)."""
    heads: Mapping[str, Handler]
    """First word of a message (up to a space or ``=``) -> its handler. Two grammars may
    claim the same word: the dialect then tries their handlers in turn (the first that gives
    events wins)."""
    headers: tuple[HeaderReader, ...] = ()
    """How its own line header is stripped (after any collector and Ray/PyTorch prefix)."""
    header_examples: tuple[tuple[str, str], ...] = ()
    """(label, a real-shaped line whose message is ``MESSAGE``) per header form: the prefix
    tests strip each alone and under every collector prefix."""
    fast: FastPath | None = None
    quiet_heads: frozenset[str] = frozenset()
    """First words of its statistics lines: they never hold a traceback, so the traceback
    scan is skipped for them (the bulk of a busy log)."""
    ready_lines: tuple[str, ...] = ()
    """Texts of its ready line(s) (its handlers emit ``Ready``; the fast path never drops a line
    holding one)."""
    traceback_openers: tuple[str, ...] = ()
    """Texts that open a traceback group on a line without ``Traceback (most recent call
    last)`` (SGLang's ``... hit an exception:``; a C++ ``terminate called after throwing``)."""
    signatures: tuple[FatalSignature, ...] = ()
    """The fatal causes it knows, by the texts that show them (its own causes and its own
    wording of generic ones)."""
    precedence: Mapping[str, int] = field(default_factory=dict)
    """Rank of each of its own causes among the generic ones (:data:`.fatal.GENERIC_RANKS`;
    lower wins when one excerpt shows several)."""
    cause_words: Mapping[str, str] = field(default_factory=dict)
    """Its own sentence for a cause, where the generic one would mislead or there is none
    (llama.cpp on a CPU has no GPU memory to run out of; its own causes)."""
    capacity_words: str = ""
    """What its log calls the KV-cache capacity it reports (SGLang's ``max_total_num_tokens``,
    vLLM's ``GPU KV cache size``): the term views put beside the figure ("": none)."""
    fixes: Mapping[str, tuple[SuggestedFix, ...]] = field(default_factory=dict)
    """Its remedies per cause, most effective first; a cause it leaves out gets the generic
    remedies (:data:`.fatal.GENERIC_FIXES`)."""
    recoverable: tuple[str, ...] = ()
    """Texts (any case) of lines that look alarming but are never a death."""
    request_errors: tuple[str, ...] = ()
    """Texts of lines that say one request failed: the traceback that follows is not fatal."""
    consequence_texts: tuple[str, ...] = ()
    """Exception texts that only report an earlier failure (no second fatal event)."""
    fatal_line: Callable[[str], str | None] | None = None
    """A line that proves a cause by itself, outside any traceback (SGLang's argparse
    ``sglang serve: error: ...`` -> ``bad_argument``); ``None`` for other lines."""
    hints: tuple[str, ...] = ()
    """Substrings, one of which is in every text of :attr:`signatures` (wrappers aside),
    :attr:`request_errors` and every line :attr:`fatal_line` accepts: a line holding none
    skips those checks (a few substring scans instead of one per text). Checked on compile."""
    names_processes: bool = False
    """A Ray / multiprocessing prefix that names its process (``(APIServer pid=12) ``) means
    this engine is speaking (vLLM V1 names its processes)."""

    def __repr__(self) -> str:
        return f"LogGrammar({self.name!r})"
