"""The counters and live output-rate window of one warm-up or measured phase of a level.

Why its own module: the progress events every consumer sees (running counts, output tokens,
tok/s over the trailing second) are computed here, apart from the engine's scheduling, so the
rate rule has one home. Standard library only (bundled into the remote runner script).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from specconsole.core.measure.metrics import RequestTimeline

RATE_WINDOW_S = 1.0
"""The live rate is output tokens received over this trailing window."""


class Phase:
    """Counters and the live-rate window of one warm-up or measured phase."""

    def __init__(
        self,
        level_index: int,
        concurrency: int,
        total: int,
        warmup: bool,
        clock: Callable[[], float],
        duration_s: float | None,
    ) -> None:
        self.level_index = level_index
        self.concurrency = concurrency
        self.total = total
        self.warmup = warmup
        self.clock = clock
        self.duration_s = duration_s
        self.t0 = clock()
        self.issued = 0
        self.completed = 0
        self.failed = 0
        self.running = 0
        self.output_tokens = 0
        self.records: list[RequestTimeline] = []
        self.window: deque[tuple[float, int]] = deque()
        self.window_tokens = 0
        self.streamed = 0
        """Tokens streamed in this phase so far, finished requests or not (a steady window
        cancels its streams: none finishes): whether the server said anything at all."""

    def add_tokens(self, now: float, tokens: int) -> None:
        self.window.append((now, tokens))
        self.window_tokens += tokens
        self.streamed += tokens

    def snapshot(self, level_count: int) -> dict[str, Any]:
        now = self.clock()
        horizon = now - RATE_WINDOW_S
        window = self.window
        while window and window[0][0] < horizon:
            self.window_tokens -= window.popleft()[1]
        elapsed = now - self.t0
        span = min(RATE_WINDOW_S, elapsed) if elapsed > 0 else RATE_WINDOW_S
        return {
            "level_index": self.level_index,
            "concurrency": self.concurrency,
            "completed": self.completed,
            "failed": self.failed,
            "total": self.total,
            "running": self.running,
            "output_tokens": self.output_tokens,
            "current_tok_s": self.window_tokens / span if span > 0 else 0.0,
            "elapsed_s": elapsed,
            "warmup": self.warmup,
            "level_count": level_count,
            "planned_duration_s": self.duration_s,
        }
