"""The crash banner: shown on the main screen while a crashed trial awaits a decision.

It says what happened in one glance (trial, phase, classified cause), shows the last lines of
the log and SGLang's own suggested fixes, and lists the single-key choices; ``r`` resumes.
It is a banner rather than only a modal so the journal pane stays visible under it; the
full details are one key away (``c``, see ``screens.crash``).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from specconsole.ui.viewmodels import CrashView
from specconsole.ui.widgets.viewstatic import ViewStatic

EXCERPT_LINES = 2
FIX_LINES = 2


def choices_text(view: CrashView) -> str:
    """``r resume next · t retry · …`` for exactly the choices the controller allows now,
    then the details key (or, while the crash is still being recorded, that it is)."""
    parts = [f"{key} {label}" for key, label in view.choices]
    if not parts:
        parts.append("recording the crash…")
    parts.append("c details")
    return " · ".join(parts)


class CrashBanner(ViewStatic[CrashView]):
    """Renders a ``CrashView`` compactly; hidden when there is none."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"crash--title", "crash--keys", "crash--dim"}

    @property
    def view(self) -> CrashView | None:
        return self._view

    def show(self, view: CrashView | None) -> None:
        if view == self._view:
            return
        self._view = view
        self.display = view is not None
        if view is not None:
            self.update(self._render_view(view))

    def _render_view(self, view: CrashView) -> Text:
        title = self.get_component_rich_style("crash--title", partial=True)
        keys = self.get_component_rich_style("crash--keys", partial=True)
        dim = self.get_component_rich_style("crash--dim", partial=True)
        text = Text(overflow="ellipsis", no_wrap=True)
        text.append(f"✖ {view.title}", style=title)
        text.append("\n")
        text.append(choices_text(view), style=keys)
        text.append("\n")
        text.append(view.cause)
        for line in view.excerpt[-EXCERPT_LINES:]:
            text.append("\n")
            text.append(f"│ {line}", style=dim)
        for fix in view.fixes[:FIX_LINES]:
            text.append("\n")
            text.append(f"→ {fix}")
        return text
