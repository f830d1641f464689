"""The console's ``App`` base: it starts in one of the console's palettes, and its stylesheet
is parsed once before the first frame.

Why a base of its own: choosing the palette at start is more than setting ``App.theme``.
The palettes must be registered before the stylesheet reads their variables, and Textual's
refresh for a theme set in ``__init__`` would parse every stylesheet twice before the first
frame (see :meth:`ThemedApp.refresh_css`). ``ui.app`` keeps the console's own wiring.
"""

from __future__ import annotations

from typing import Any

from textual.app import App

from specconsole.ui.theme import THEMES, choose_theme


class ThemedApp(App[None]):
    """An app that starts in palette ``theme`` (a key of ``ui.theme.THEMES``)."""

    def __init__(self, theme: str, **app_options: Any) -> None:
        super().__init__(**app_options)
        if theme not in THEMES:
            theme = choose_theme(theme)  # raises UnknownThemeError naming the choices
        self.theme_key = theme
        """The palette chosen at start (``dark``, ``light``, ``mono``)."""
        for palette in THEMES.values():  # before the stylesheet is read: it uses their variables
            self.register_theme(palette)
        self.theme = THEMES[theme].name

    def refresh_css(self, animate: bool = True) -> None:
        """Textual's refresh, except for the one the theme set in ``__init__`` queues.

        Why: that refresh runs before any screen exists. Textual's version parses every
        stylesheet (ours is 11 KB) into a throwaway copy, and its new variables empty the
        parse cache, so the first screen parses all of it again. Before any screen exists
        nothing has been styled or parsed, so the new variables are all the stylesheet needs:
        the first screen parses it once, with them (half the parsing before the first frame,
        some 15 ms here). Every later refresh (a theme switched at run time) is Textual's."""
        if not self.screen_stack:
            self.stylesheet.set_variables(self.get_css_variables())
            return
        super().refresh_css(animate)
