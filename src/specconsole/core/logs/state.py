"""What the log parser remembers between lines, shared by the grammars' handlers.

Why it exists: an engine's handlers (its grammar's ``heads``) are plain functions of
``(state, body, timestamp, rank)``; the little they must remember (how many weight loads a
rank has logged — the first is the target, the second the draft —, whether a fatal error was
already reported, whether the service is stopping, which engine the lines look like) lives
here, in one place, so the handlers stay independent of the line router (:mod:`.parser`) and
of each other. It also carries the compiled fatal rules, so a handler reports a death with
the classifier and remedies of the grammars in use (:meth:`ParseState.fatal_now`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from specconsole.core.logs.events import FatalError, LogEvent, SuggestedFix

if TYPE_CHECKING:
    from .fatal import FatalRules

__all__ = ["Handler", "ParseState"]


@dataclass(slots=True)
class ParseState:
    """The parser's memory of the current server start."""

    rules: FatalRules
    """The fatal classifier of the grammars in use."""
    engine: str | None = None
    """The engine the caller says the log is from (``None``: decided from the lines)."""
    heard: set[str] = field(default_factory=set)
    """Engines whose own headers (or process names) were seen, when ``engine`` is ``None``."""
    weights_begin: dict[str, int] = field(default_factory=dict)
    weights_end: dict[str, int] = field(default_factory=dict)
    kv: dict[str, int] = field(default_factory=dict)
    kv_tokens: int | None = None
    """The KV cache's size in tokens as last logged on its own (vLLM's capacity line, which
    follows it, names only the concurrency)."""
    weights_started: bool = False
    """The server got past argument handling (a fatal error before it is a bad argument)."""
    fatal_seen: bool = False
    fatal_cause: str | None = None
    """The cause of the death reported (a later traceback of the same cause repeats it)."""
    stopping: bool = False
    after_request_error: bool = False
    """The last line said a request failed (``Exception in ASGI application`` and the like):
    the traceback that follows is that request's, not the server's death."""
    dead_line: str | None = None
    """A line that announced a death and waits for the line that says how (SGLang's ``Rank
    N scheduler is dead`` before its ``Exit code: N``)."""
    evidence: deque[str] = field(default_factory=lambda: deque(maxlen=4))
    """Recent fatal-signature lines outside any traceback (e.g. ``CUDA error: an illegal
    memory access`` logged before ``Scheduler hit an exception``): part of the excerpt the
    next traceback is classified from."""

    def speaks(self, engine: str) -> bool:
        """Whether the log is ``engine``'s: the caller said so, or (when it named none) that
        engine's own header was seen."""
        return self.engine == engine or (self.engine is None and engine in self.heard)

    def reset_start(self) -> None:
        """A new server start begins (``server_args=``, systemd's ``Started``)."""
        self.weights_begin.clear()
        self.weights_end.clear()
        self.kv.clear()
        self.kv_tokens = None
        self.weights_started = False
        self.fatal_seen = False
        self.fatal_cause = None
        self.stopping = False
        self.evidence.clear()

    def fatal_now(
        self,
        cause: str,
        text: str,
        ts: str | None,
        rank: str | None,
        fixes: Mapping[str, tuple[SuggestedFix, ...]] | None = None,
    ) -> FatalError:
        """A fatal event proven by one line; ``fixes``: the reporting grammar's remedies
        (else those :class:`~specconsole.core.logs.fatal.FatalRules` finds for ``cause``)."""
        self.fatal_seen = True
        self.fatal_cause = cause
        return FatalError(
            timestamp=ts,
            rank=rank,
            cause=cause,
            summary=text.strip(),
            excerpt=text,
            fixes=self.rules.fixes_for(cause, fixes),
            before_weights=not self.weights_started,
        )

    def consequence(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        """A line that reports a death: a fatal event classified from this line alone,
        unless one was already reported."""
        if self.fatal_seen:
            return []
        cause, _, fixes = self.rules.classify((body,), before_weights=not self.weights_started)
        return [self._fatal(cause, body, body, fixes, ts, rank)]

    def conclude(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        """A line that says the process is exiting because of what it logged just before
        (an engine without Python tracebacks: ``exiting due to model loading error``): one
        fatal event classified from the recent signature lines (:attr:`evidence`) and this
        one, unless one was already reported."""
        if self.fatal_seen:
            self.evidence.clear()
            return []
        lines = [*self.evidence, body]
        self.evidence.clear()
        cause, proof, fixes = self.rules.classify(lines, before_weights=not self.weights_started)
        return [self._fatal(cause, proof, "\n".join(lines), fixes, ts, rank)]

    def _fatal(
        self,
        cause: str,
        summary: str,
        excerpt: str,
        fixes: tuple[SuggestedFix, ...],
        ts: str | None,
        rank: str | None,
    ) -> FatalError:
        self.fatal_seen = True
        self.fatal_cause = cause
        return FatalError(
            timestamp=ts,
            rank=rank,
            cause=cause,
            summary=summary.strip(),
            excerpt=excerpt,
            fixes=fixes,
            before_weights=not self.weights_started,
        )

    def signature(self, line: str) -> str | None:
        """The most specific fatal cause whose signature is in ``line`` (any grammar in use)."""
        return self.rules.signature(line)

    def is_recoverable(self, line: str) -> bool:
        """A line that must never be taken as fatal."""
        return self.rules.is_recoverable(line)


Handler = Callable[[ParseState, str, "str | None", "str | None"], "list[LogEvent]"]
"""A message handler: (state, message body, timestamp, rank) -> events."""
