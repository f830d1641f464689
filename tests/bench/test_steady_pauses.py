"""The steady window stays the server's rate when the server pauses and then catches up
(issue 31: a busy console on the box's cores descheduled the simulator, which ran its missed
steps back to back, and a window that opened on that burst read +6 %).

Synthetic arrivals, no sockets: 8 streams in lockstep, one 4-token chunk every 100 ms (40
tok/s each, 320 aggregate), a 250 ms pause placed around the window's start, then the missed
steps in a burst 2 ms apart — the pattern the simulator's pacing makes.
"""

from __future__ import annotations

import pytest

from specconsole.bench.steady import SteadyPhase
from specconsole.core.measure.metrics import compute_level_metrics

pytestmark = pytest.mark.serial  # figures against the model

STEP_S = 0.1
STREAMS = 8
TOKENS = 4
RATE = TOKENS / STEP_S


def _arrivals(pause_at: float | None, pause_s: float = 0.25) -> list[float]:
    """Step times from 0.05 to 3 s; a pause from ``pause_at``: its missed steps come together
    when it ends (2 ms apart), then the rhythm goes on from there."""
    times, t = [], 0.05
    while t < 3.0:
        if pause_at is not None and pause_at <= t < pause_at + pause_s:
            missed = 0
            while t < pause_at + pause_s:
                missed += 1
                t += STEP_S
            end = pause_at + pause_s
            times += [end + 0.002 * k for k in range(missed)]
            continue
        times.append(t)
        t += STEP_S
    return times


def _window(pause_at: float | None, ramp_s: float = 0.0) -> SteadyPhase:
    """The streams' arrivals; with ``ramp_s`` they join over that long (the window opens
    at the last one's first token)."""
    clock = iter([0.0]).__next__
    phase = SteadyPhase(0, STREAMS, clock, window_s=1.5, window_tokens=None)
    for slot in range(STREAMS):
        phase.sent[slot] = 0.0
        phase.output_lens.append(512)
        phase.prompt_lens.append(64)
        joins = ramp_s * slot / (STREAMS - 1)
        for t in _arrivals(pause_at):
            if t >= joins:
                phase.add_slot_tokens(slot, t + 0.0001 * slot, TOKENS)
    phase.ws = phase.last_first
    phase.we = phase.ws + 1.5
    phase.window_len = 1.5
    return phase


@pytest.mark.parametrize(
    ("pause_at", "ramp_s"),
    [
        (None, 0.0),  # no pause
        (0.30, 0.5),  # before the window opened: its catch-up opens the window
        (0.06, 0.0),  # just after the window opened (the first step): the catch-up inside it
        (0.90, 0.0),  # in the middle
        (1.45, 0.0),  # at the end
    ],
)
def test_a_pause_and_its_catch_up_do_not_change_the_rate(
    pause_at: float | None, ramp_s: float
) -> None:
    phase = _window(pause_at, ramp_s)
    metrics = phase.metrics(compute_level_metrics([], duration=1.0, max_concurrency=8), ())
    assert metrics.window is not None
    rate = metrics.window["window_output_throughput"]
    assert rate == pytest.approx(STREAMS * RATE, rel=0.04), (pause_at, rate)
    assert metrics.chunk_accept_length is not None
