"""A ``Static`` that draws a view model with theme styles and redraws it when the theme changes.

Why: the status header and the crash banner render Rich ``Text`` with styles looked up from
the theme (``get_component_rich_style``), and that text keeps the colours it was drawn with;
after a theme switch the current view must be drawn again. This base class holds the view
and that rule once; subclasses only say how to ``show`` a view.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from textual.widgets import Static

V = TypeVar("V")


class ViewStatic(Static, Generic[V]):
    """Holds the view model last shown (``_view``); redraws it on a style update."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self._view: V | None = None

    def show(self, view: V) -> None:
        """Draw ``view`` (subclasses: no-op when unchanged, then set ``_view``)."""
        raise NotImplementedError

    def notify_style_update(self) -> None:
        super().notify_style_update()
        if self._view is not None:
            view, self._view = self._view, None
            self.show(view)
