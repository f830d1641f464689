"""The box panel: what the probe found when the console opened (reachable or the exact
error, engine and release, GPUs, the service's state, the configuration it runs, serving).

Shown above the benchmark panel while no trial is running, and whenever the box cannot be
reached, so a wrong alias or a refused host key is on screen at once, not after ``s``. The
text comes from ``present.box`` (the same lines the headless sweep prints).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from specconsole.present.box import BoxPanelView
from specconsole.ui.widgets.viewstatic import ViewStatic


class BoxPanel(ViewStatic[BoxPanelView]):
    """Renders a ``BoxPanelView``."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"box--ok", "box--bad", "box--pending", "box--fact"}

    def show(self, view: BoxPanelView) -> None:
        if view == self._view:
            return
        self._view = view
        kind = {True: "ok", False: "bad", None: "pending"}[view.ok]
        text = Text(no_wrap=True, overflow="ellipsis")
        headline = self.get_component_rich_style(f"box--{kind}", partial=True)
        text.append(view.headline, style=headline)
        fact = self.get_component_rich_style("box--fact", partial=True)
        for line in view.lines:
            text.append("\n" + line, style=fact)
        self.update(text)

    @property
    def plain(self) -> str:
        view = self._view
        return "" if view is None else "\n".join((view.headline, *view.lines))
