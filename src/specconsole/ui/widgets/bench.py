"""The benchmark panel: the concurrency ladder with a bar per level, and the headline numbers.

Each level's rate is the aggregate output tok/s of its c streams, and the headline's first
figure is one request's own decoding speed: at c=1 they differ (the aggregate counts the time
to first token), so each says which it is — ``agg`` on the rows, ``per request`` and ``peak
agg`` in the headline (issue 42 #8), the words of the run log's level lines.

The panel is a function of a ``BenchView``; the bar width follows the widget's width so the
same view reads at 80 columns (narrow bars, no TTFT column) and on a wide terminal. With
``[bench] repeats`` a finished level's tok/s is the mean of its runs ± the 95 % CI's
half-width, and a line under the headlines gives the runs and the standard deviations.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from specconsole.core.measure.stats import half_width
from specconsole.present.formats import format_ms, format_rate, format_rate_ci, format_ratio
from specconsole.ui.viewmodels import BenchView, LevelView, fraction_bar

_STATE_CLASS = {
    "pending": "bench--pending",
    "running": "bench--running",
    "done": "bench--done",
    "failed": "bench--failed",
}


AGGREGATE = "agg"
"""The label of an aggregate rate: every stream of a level together."""
PER_REQUEST = "per request"
"""The label of one request's own decoding rate (the headline's single-request figure)."""


class BenchPanel(Widget):
    """Ladder progress plus headline numbers; call ``show`` with a new view."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {*_STATE_CLASS.values(), "bench--headline"}

    DEFAULT_CSS = """
    BenchPanel { height: auto; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._view = BenchView()

    def show(self, view: BenchView) -> None:
        if view == self._view:
            return
        self._view = view
        self.border_subtitle = view.status
        self.refresh(layout=True)

    @property
    def view(self) -> BenchView:
        return self._view

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        levels = max(1, len(self._view.levels))
        return levels + 2 + (1 if self._spread_line(self._view) else 0)

    def render(self) -> RenderableType:
        view = self._view
        width = max(10, self.content_size.width)
        text = Text(no_wrap=True, overflow="ellipsis")
        if not view.levels:
            text.append("No benchmark yet: press b to benchmark what is deployed, s to sweep.")
            return text
        wide = width >= 62
        rate_width = 12 if any(lv.tok_s_ci is not None for lv in view.levels) else 7
        fixed = 5 + 2 + 7 + 2 + len(AGGREGATE) + 1 + rate_width + 4 + (13 if wide else 0) + 6
        bar_width = max(4, min(30, width - fixed))
        for i, level in enumerate(view.levels):
            if i:
                text.append("\n")
            self._append_level(text, level, bar_width, wide, rate_width)
        text.append("\n\n")
        headline = self.get_component_rich_style("bench--headline", partial=True)
        text.append(self._headline(view, width), style=headline)
        if spread := self._spread_line(view, width):
            text.append("\n" + spread)
        return text

    def _style(self, level: LevelView) -> Style:
        name = _STATE_CLASS.get(level.state, "bench--pending")
        return self.get_component_rich_style(name, partial=True)

    def _append_level(
        self, text: Text, level: LevelView, bar_width: int, wide: bool, rate_width: int
    ) -> None:
        style = self._style(level)
        if level.total:
            count = f"{level.completed}/{level.total}"
        else:  # the runner did not say how many requests the level has
            count = str(level.completed) if level.state != "pending" else "—"
        text.append(f"c={level.concurrency:<3} ", style=style)
        text.append(fraction_bar(level.done_fraction, bar_width), style=style)
        text.append(f" {count:>7}")
        rate = format_rate_ci(level.tok_s, level.tok_s_ci, sep="±")
        text.append(f" {AGGREGATE} {rate:>{rate_width}} tok/s")
        if wide:
            text.append(f"  ttft {format_ms(level.ttft_p50_ms):>8}")
        if level.failed:
            failed = self.get_component_rich_style("bench--failed", partial=True)
            text.append(f"  {level.failed} err", style=failed)

    @staticmethod
    def _headline(view: BenchView, width: int) -> str:
        """The two headline numbers, labelled (one request's rate, the peak aggregate; means ±
        95 % CI half-width over repeated runs) and the accept length: the first of these forms
        that fits the panel — spaced, spaced without the accept length, compact, compact
        without it."""
        if view.single_tok_s is None and view.peak_tok_s is None:
            return f"{PER_REQUEST} —   peak {AGGREGATE} —"
        single_ci, peak_ci = half_width(view.single_spread), half_width(view.peak_spread)
        accept = format_ratio(view.accept_length) if view.accept_length else ""
        c = view.peak_concurrency
        spaced = (
            f"{PER_REQUEST} {format_rate_ci(view.single_tok_s, single_ci)} tok/s   "
            f"peak {AGGREGATE} {format_rate_ci(view.peak_tok_s, peak_ci)} tok/s"
            + (f" @ c={c}" if c else "")
        )
        compact = (
            f"per req {format_rate_ci(view.single_tok_s, single_ci, sep='±')} · "
            f"peak {AGGREGATE} {format_rate_ci(view.peak_tok_s, peak_ci, sep='±')}"
            + (f" @c={c}" if c else "")
            + " tok/s"
        )
        forms = [
            *([f"{spaced}   accept {accept}"] if accept else []),
            spaced,
            *([f"{compact} · accept {accept}"] if accept else []),
            compact,
        ]
        return next((form for form in forms if len(form) <= width), forms[-1])

    @staticmethod
    def _spread_line(view: BenchView, width: int = 200) -> str:
        """``± 95% CI over 3 runs · sd single 2.1, peak 8.4`` when the headlines are means
        over repeated runs (compact when the panel is narrow); empty otherwise."""
        named = [(PER_REQUEST, view.single_spread), (f"peak {AGGREGATE}", view.peak_spread)]
        known = [(name, sp) for name, sp in named if sp is not None]
        if not known:
            return ""
        runs = max(sp.n for _name, sp in known)
        sds = ", ".join(f"{name} {format_rate(sp.std, 1)}" for name, sp in known)
        spaced = f"± 95% CI over {runs} runs · sd {sds}"
        if len(spaced) <= width:
            return spaced
        return f"±95% CI, {runs} runs · sd " + "/".join(format_rate(sp.std, 1) for _n, sp in known)
