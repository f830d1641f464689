"""Journal pane under a log flood: 5,000 lines/s for 10 s, headless; prints the worst frame
lag and peak memory.

Why: a loading SGLang server on 4+ GPUs can print thousands of lines a second (NCCL
tracebacks from every rank, CUDA-graph capture progress). The console must stay responsive
(target: worst lag < 100 ms) and bounded in memory while that happens. The lines go through
the same path as in production: controller ``publish(state, LogLines)`` → bridge buffer →
one ``LogBatch`` about every 100 ms → ``JournalPane.append`` → ``Log.write_lines``.

"Frame lag" is how late a 10 ms event-loop tick runs: rendering, message handling and the
journal's work all happen on that loop, so a late tick is a frozen frame.

    .venv/bin/python benchmarks/journal_pane.py [--rate 5000] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable

import psutil

from specconsole.core.machine.events import Event, LogLines
from specconsole.core.machine.state import ControllerState, Phase
from specconsole.ui.app import make_app
from specconsole.ui.widgets.journal import DEFAULT_MAX_LINES, JournalPane

LINES = (
    "[2026-07-20 12:03:05 TP{r}] Decode batch, #running-req: 64, #token: 91200, token usage: "
    "0.25, accept len: 3.18, accept rate: 0.73, cuda graph: True, gen throughput (token/s): "
    "2843.12, #queue-req: 0",
    "[2026-07-20 12:03:05 TP{r}] Prefill batch, #new-seq: 4, #new-token: 512, #cached-token: 0, "
    "token usage: 0.25, #running-req: 60, #queue-req: 0, cuda graph: False, "
    "input throughput (token/s): 10432.55",
    "[2026-07-20 12:03:05 TP{r}] Capture cuda graph bs [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]",
    '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 2801, in event_loop',
    "[2026-07-20 12:03:05 TP{r}] Max running requests is reset to 48 for speculative decoding. "
    "You can override this by explicitly setting --max-running-requests.",
)


class FloodController:
    """Just enough controller for the console: a state and a publisher."""

    def __init__(self) -> None:
        self.state = ControllerState(phase=Phase.LOADING, phase_since=time.time())
        self._subscribers: list[Callable[[ControllerState, Event | None], None]] = []

    def subscribe(
        self, callback: Callable[[ControllerState, Event | None], None]
    ) -> Callable[[], None]:
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback)

    def send(self, event: Event) -> None:
        pass

    def publish_lines(self, lines: tuple[str, ...]) -> None:
        event = LogLines(lines=lines, at=time.time())
        for callback in self._subscribers:
            callback(self.state, event)


async def run(rate: int, seconds: float, tick_s: float = 0.01) -> None:
    controller = FloodController()
    app = make_app(controller, theme="dark", tick_interval=1.0)  # type: ignore[arg-type]
    process = psutil.Process()
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause(0.2)
        journal = app.screen.query_one(JournalPane)
        rss_start = process.memory_info().rss
        rss_peak = rss_start
        rss_at: dict[int, int] = {}
        worst_lag = 0.0
        lags: list[float] = []
        sent = 0
        start = time.perf_counter()
        next_tick = start
        while (now := time.perf_counter()) - start < seconds:
            lag = max(0.0, now - next_tick)
            lags.append(lag)
            worst_lag = max(worst_lag, lag)
            # Publish as many lines as are due (catching up if a tick ran late).
            due = int((now - start) * rate) - sent
            if due > 0:
                batch = tuple(
                    LINES[(sent + i) % len(LINES)].format(r=(sent + i) % 4) for i in range(due)
                )
                controller.publish_lines(batch)
                sent += due
            second = int(now - start)
            if second not in rss_at:
                rss = process.memory_info().rss
                rss_at[second] = rss
                rss_peak = max(rss_peak, rss)
            next_tick += tick_s
            await asyncio.sleep(max(0.0, next_tick - time.perf_counter()))
        elapsed = time.perf_counter() - start
        await pilot.pause(0.3)  # let the last batch land before counting lines
        rss_peak = max(rss_peak, process.memory_info().rss)
        shown = journal.log_view.line_count
        history = journal.log_view.history_size
    lags.sort()
    p99 = lags[int(len(lags) * 0.99) - 1] if lags else 0.0
    mib = 1024 * 1024
    growth = (rss_at.get(int(seconds) - 1, rss_peak) - rss_at.get(2, rss_start)) / mib
    print(f"journal pane flood: {sent:,} lines in {elapsed:.1f} s ({sent / elapsed:,.0f} lines/s)")
    print(f"worst frame lag: {worst_lag * 1000:.1f} ms (p99 {p99 * 1000:.1f} ms; target < 100 ms)")
    print(
        f"peak RSS: {rss_peak / mib:.1f} MiB (start {rss_start / mib:.1f} MiB; "
        f"change from 2 s to the end {growth:+.1f} MiB)"
    )
    print(f"lines kept: {shown:,} shown, {history:,} in history (bound {DEFAULT_MAX_LINES:,})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=5000, help="lines per second")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    asyncio.run(run(args.rate, args.seconds))


if __name__ == "__main__":
    main()
