"""The GPU line under the header: every GPU's memory, utilisation and power, live.

Why a line of its own: while a trial loads, the question is how close the memory comes to
the limit, and that must be on screen with the journal at 80×24, not behind a key. The line
shows while a trial's GPUs are being sampled and, between trials, while the server it deployed
still serves — holding its memory — as the last reading, in the same form, marked as such
(issue 42 #8: it vanished in PAUSED and DONE while the server held 43 GiB); it hides when no
server holds the GPUs and on a box without GPUs. Its text for the width is
``present.figures.gpu.gpu_line``'s, and it turns to the warning colour when a GPU is nearly
full.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import RenderResult
from textual.widget import Widget

from specconsole.present.figures.gpu import gpu_line, hot

if TYPE_CHECKING:
    from specconsole.core.measure.gpu import GpuSample


class GpuLine(Widget):
    """Draws the latest sample of every GPU in one line; hidden when there is none."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"gpus--hot"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._samples: tuple[GpuSample, ...] = ()
        self._last = False
        """The samples are the last reading of a server that still holds the GPUs."""
        self._drawn = ""
        self.display = False

    @property
    def samples(self) -> tuple[GpuSample, ...]:
        return self._samples

    @property
    def last(self) -> bool:
        """Whether the line shows the last reading rather than live samples."""
        return self._last

    def show(self, samples: Sequence[GpuSample], *, held: bool = False) -> None:
        """The live ``samples``; none while ``held`` (the deployed server still serves):
        the last live ones stay, marked as the last reading."""
        samples = tuple(samples)
        last = not samples and held and bool(self._samples)
        if last:
            samples = self._samples
        if samples == self._samples and last == self._last:
            return
        self._samples, self._last = samples, last
        if self.display != bool(samples):  # a layout change only when it shows or hides
            self.display = bool(samples)
        if self.has_class("-hot") != (hot(samples) and not last):
            self.set_class(hot(samples) and not last, "-hot")
        self.set_class(last, "-last")
        if self.plain != self._drawn:
            self.refresh()  # a sample that reads the same is not drawn again

    def render(self) -> RenderResult:
        self._drawn = self.plain
        return Text(self._drawn, no_wrap=True)

    @property
    def plain(self) -> str:
        """The line at its current width (tests)."""
        return gpu_line(self._samples, self.content_size.width, last=self._last)
