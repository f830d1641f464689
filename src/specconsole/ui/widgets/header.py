"""The status header: where the controller is, for how long, on which box, with what.

Two lines so it fits 80 columns: the first says the phase (with the loading sub-phase or
ladder level), then — in one priority order at every width and in every phase — the sweep's
ETA and its current best (``present.figures.progress``), the phase's elapsed time, trial *i of
n*, the sweep state, the connection and the sweep's elapsed time, each whole in the longest
form that fits or left out (``present.keyboard.footer.fit_by_priority``: a figure is never
cut); the second is the configuration being tried, then host/engine/service (cut first when
narrow).
Colour comes from the phase's tone (``-tone-bad`` etc.), which the stylesheet maps to theme
variables.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import RenderResult

from specconsole.present.keyboard.footer import fit_by_priority
from specconsole.ui.viewmodels import HeaderView, Tone
from specconsole.ui.widgets.viewstatic import ViewStatic

SEP = " │ "
"""Between two parts of the first line (narrow, so 80 columns hold the phase, ETA and best)."""


class StatusHeader(ViewStatic[HeaderView]):
    """Renders a ``HeaderView``; knows nothing about the controller."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "status--title",
        "status--phase",
        "status--meta",
        "status--config",
    }

    def show(self, view: HeaderView) -> None:
        """Draw ``view`` (no-op when unchanged, so per-second ticks are cheap)."""
        if view == self._view:
            return
        self._view = view
        for tone in Tone:
            self.set_class(tone is view.tone, f"-tone-{tone.value}")
        self.refresh()

    def render(self) -> RenderResult:
        view = self._view
        return Text("") if view is None else self._render_view(view, self.content_size.width)

    def _render_view(self, view: HeaderView, width: int) -> Text:
        title_style = self.get_component_rich_style("status--title", partial=True)
        phase_style = self.get_component_rich_style("status--phase", partial=True)
        meta_style = self.get_component_rich_style("status--meta", partial=True)
        config_style = self.get_component_rich_style("status--config", partial=True)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f" {view.phase} ", style=phase_style)
        for part in fit_by_priority(view.status_parts(), width - text.cell_len, SEP):
            text.append(SEP, style=meta_style)
            text.append(part, style=meta_style)
        text.append("\n ")
        text.append(view.config_summary, style=config_style)
        text.append("  │  ", style=meta_style)
        text.append(view.title, style=title_style)
        return text
