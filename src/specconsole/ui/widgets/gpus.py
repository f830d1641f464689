"""The GPU line under the header: every GPU's memory, utilisation and power, live.

Why a line of its own: while a trial loads, the question is how close the memory comes to
the limit, and that must be on screen with the journal at 80×24, not behind a key. The line
shows while a trial's GPUs are being sampled (hidden between trials and on a box without
GPUs); its text for the width is ``present.figures.gpu.gpu_line``'s, and it turns to the warning
colour when a GPU is nearly full.
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
        self._drawn = ""
        self.display = False

    @property
    def samples(self) -> tuple[GpuSample, ...]:
        return self._samples

    def show(self, samples: Sequence[GpuSample]) -> None:
        samples = tuple(samples)
        if samples == self._samples:
            return
        self._samples = samples
        if self.display != bool(samples):  # a layout change only when it shows or hides
            self.display = bool(samples)
        if self.has_class("-hot") != hot(samples):
            self.set_class(hot(samples), "-hot")
        if gpu_line(samples, self.content_size.width) != self._drawn:
            self.refresh()  # a sample that reads the same is not drawn again

    def render(self) -> RenderResult:
        self._drawn = gpu_line(self._samples, self.content_size.width)
        return Text(self._drawn, no_wrap=True)

    @property
    def plain(self) -> str:
        """The line at its current width (tests)."""
        return gpu_line(self._samples, self.content_size.width)
