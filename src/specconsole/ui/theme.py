"""The console's colour palettes as Textual ``Theme`` objects, and how one is chosen.

Palettes live in Python (``Theme``), styles live in ``themes/*.tcss`` and read only theme
variables, so a palette swap never touches a rule. Three palettes ship: a dark one (default),
a light one for bright terminals, and a monochrome high-contrast one that also serves
``NO_COLOR`` users and snapshot tests (no hue differences to drift). The choice order is:
explicit ``--theme`` flag, then the profile's ``[ui] theme`` key, then ``NO_COLOR`` (mono),
then dark. With ``NO_COLOR`` set the app also leaves colours to the terminal (Textual's
``NoColor`` filter, ``ui.app``), so the screen keeps the terminal's own background instead of
a black one; emphasis then comes from bold, underline and reverse alone.

Every palette is checked by ``tests/ui/test_contrast.py``: text (search matches included) at
least 4.5:1 against what it is drawn on, pane borders at least 3:1. ``pane-border`` is the
palette's colour for unfocused pane borders.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from textual.theme import Theme

DARK = Theme(
    name="specconsole-dark",
    primary="#5FA8D3",
    secondary="#8FB996",
    accent="#E0A458",
    warning="#E9C46A",
    error="#E76F51",
    success="#6BBF59",
    foreground="#D8DEE9",
    background="#14181F",
    surface="#1B2029",
    panel="#242B36",
    dark=True,
    variables={
        "footer-key-foreground": "#E0A458",
        "input-selection-background": "#5FA8D3 35%",
        "pane-border": "#6B7689",
    },
)
"""Default palette: calm blue/green on near-black, warm accents for keys and warnings."""

LIGHT = Theme(
    name="specconsole-light",
    primary="#1D5C8C",
    secondary="#2F6238",
    accent="#8A4516",
    warning="#6F5500",
    error="#B3261E",
    success="#256528",
    foreground="#1E2329",
    background="#F7F7F4",
    surface="#EFEFEA",
    panel="#E2E4E0",
    dark=False,
    variables={
        "footer-key-foreground": "#8A4516",
        "foreground-muted": "#5A6068",
        "pane-border": "#7A7F86",
    },
)
"""For bright terminals; every hue darkened until it reads on off-white (text ≥ 4.5:1 and
borders ≥ 3:1 against the panes, checked by ``tests/ui/test_contrast.py``)."""

MONO = Theme(
    name="specconsole-mono",
    primary="#FFFFFF",
    secondary="#D0D0D0",
    accent="#FFFFFF",
    warning="#E0E0E0",
    error="#FFFFFF",
    success="#C0C0C0",
    foreground="#FFFFFF",
    background="#000000",
    surface="#000000",
    panel="#262626",
    dark=True,
    variables={
        "footer-key-foreground": "#FFFFFF",
        "footer-background": "#262626",
        "block-cursor-background": "#FFFFFF",
        "block-cursor-foreground": "#000000",
        "pane-border": "#A0A0A0",
    },
)
"""High contrast, no hue: white on black. Emphasis comes from weight and reverse video,
which the stylesheet adds through the ``-mono`` app class."""

THEMES: Mapping[str, Theme] = {"dark": DARK, "light": LIGHT, "mono": MONO}
"""Short names accepted by ``--theme`` and the profile's ``[ui] theme`` key."""

DEFAULT_THEME = "dark"


class UnknownThemeError(ValueError):
    """The requested theme name is not one of ``THEMES``."""


def choose_theme(
    flag: str | None = None,
    configured: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """Pick the short theme name to use.

    Args:
        flag: the ``--theme`` value, if given (wins over everything).
        configured: the profile's ``[ui] theme`` value, if any.
        environ: environment to consult for ``NO_COLOR`` (defaults to ``os.environ``).

    Returns:
        A key of ``THEMES``.

    Raises:
        UnknownThemeError: the flag or configured value names no known theme.
    """
    env = os.environ if environ is None else environ
    for source, value in (("--theme", flag), ("[ui] theme", configured)):
        if value is None:
            continue
        name = value.strip().lower()
        if name not in THEMES:
            choices = ", ".join(THEMES)
            raise UnknownThemeError(
                f"{source} = {value!r} is not a known theme; use one of: {choices}"
            )
        return name
    if env.get("NO_COLOR"):  # no-color.org: set and non-empty
        return "mono"
    return DEFAULT_THEME
