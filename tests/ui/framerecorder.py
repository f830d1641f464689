"""Every distinct frame of a tmux pane, read every 250 ms: what a user watching the console saw.

Why a recorder: a defect that lasts three seconds at every trial change (a column collapsing
while a trial deploys, a header dropping its ETA in one phase) is missed by a test that
reads the screen at a few chosen moments. The recorder reads the pane on a fixed beat in a
thread of its own while the test drives the console, keeps each frame that differs from the
one before with the wall-clock time it was seen, and hands them back for checks over all of
them (``tests/ui/test_frames_tmux.py``). Bounded: it stops when asked or at ``max_frames``.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass

from tests.ui.tmuxdriver import Tmux

FRAME_INTERVAL_S = 0.25
MAX_FRAMES = 20_000


@dataclass(frozen=True, slots=True)
class Frame:
    at: float
    """``time.time()`` when the frame was read."""
    text: str

    @property
    def lines(self) -> list[str]:
        return self.text.rstrip("\n").splitlines()


class FrameRecorder:
    """Reads ``target``'s pane every ``interval`` seconds in a daemon thread."""

    def __init__(self, tmux: Tmux, target: str = "demo", interval: float = FRAME_INTERVAL_S):
        self._tmux = tmux
        self._target = target
        self._interval = interval
        self._frames: list[Frame] = []
        self._reads = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="frame-recorder", daemon=True)

    def __enter__(self) -> FrameRecorder:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        beat = time.monotonic()
        while not self._stop.is_set() and len(self._frames) < MAX_FRAMES:
            text = self._tmux.run("capture-pane", "-p", "-t", self._target, check=False)
            with self._lock:
                self._reads += 1
                if text.strip() and (not self._frames or self._frames[-1].text != text):
                    self._frames.append(Frame(time.time(), text))
            beat += self._interval
            self._stop.wait(max(0.0, beat - time.monotonic()))

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    @property
    def frames(self) -> list[Frame]:
        with self._lock:
            return list(self._frames)

    @property
    def reads(self) -> int:
        return self._reads

    def latest(self) -> str:
        with self._lock:
            return self._frames[-1].text if self._frames else ""

    def wait_for(self, pattern: str, timeout: float) -> str:
        """The newest frame once ``pattern`` matches it (AssertionError after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.latest()
            if re.search(pattern, text):
                return text
            time.sleep(self._interval / 2)
        raise AssertionError(f"{pattern!r} not within {timeout:.0f} s; screen:\n{self.latest()}")
