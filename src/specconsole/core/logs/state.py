"""What the log parser remembers between lines, shared by the engine-specific handlers.

Why it exists: the SGLang and vLLM handlers (:mod:`.sglang`, :mod:`.vllm`) are plain
functions of ``(state, body, timestamp, rank)``; the little they must remember (how many
weight loads a rank has logged — the first is the target, the second the draft —, whether a
fatal error was already reported, whether the service is stopping) lives here, in one place,
so the handlers stay independent of the line router (:mod:`.parser`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from specconsole.core.logs.events import FatalCause, FatalError, LogEvent

from .fatal import FIXES, classify_fatal

__all__ = ["Handler", "ParseState"]


@dataclass(slots=True)
class ParseState:
    """The parser's memory of the current server start."""

    engine: str | None = None
    vllm: bool = False
    """True once the lines look like vLLM's (or ``engine`` says so)."""
    weights_begin: dict[str, int] = field(default_factory=dict)
    weights_end: dict[str, int] = field(default_factory=dict)
    kv: dict[str, int] = field(default_factory=dict)
    weights_started: bool = False
    """The server got past argument handling (a fatal error before it is a bad argument)."""
    fatal_seen: bool = False
    stopping: bool = False
    after_request_error: bool = False
    """The last line said a request failed (``Exception in ASGI application`` and the like):
    the traceback that follows is that request's, not the server's death."""
    dead_line: str | None = None
    """SGLang's ``Rank N scheduler is dead`` waiting for its ``Exit code: N`` line."""
    evidence: deque[str] = field(default_factory=lambda: deque(maxlen=4))
    """Recent fatal-signature lines outside any traceback (e.g. ``CUDA error: an illegal
    memory access`` logged before ``Scheduler hit an exception``): part of the excerpt the
    next traceback is classified from."""

    def reset_start(self) -> None:
        """A new server start begins (``server_args=``, systemd's ``Started``)."""
        self.weights_begin.clear()
        self.weights_end.clear()
        self.kv.clear()
        self.weights_started = False
        self.fatal_seen = False
        self.stopping = False
        self.evidence.clear()

    def fatal_now(
        self, cause: FatalCause, text: str, ts: str | None, rank: str | None
    ) -> FatalError:
        """A fatal event proven by one line."""
        self.fatal_seen = True
        return FatalError(
            timestamp=ts,
            rank=rank,
            cause=cause,
            summary=text.strip(),
            excerpt=text,
            fixes=FIXES[cause],
            before_weights=not self.weights_started,
        )

    def consequence(self, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
        """A line that reports a death: a fatal event unless one was already reported."""
        if self.fatal_seen:
            return []
        cause, _ = classify_fatal((body,), before_weights=not self.weights_started)
        return [self.fatal_now(cause, body, ts, rank)]


Handler = Callable[[ParseState, str, "str | None", "str | None"], "list[LogEvent]"]
"""A message handler: (state, message body, timestamp, rank) -> events."""
