"""The stylesheet reads theme variables only, and every palette renders the whole console."""

from __future__ import annotations

import re

import pytest
from textual.color import Color
from textual.css import stylesheet as textual_stylesheet

from specconsole.paths import themes_dir
from specconsole.ui.app import make_app
from specconsole.ui.theme import THEMES
from tests.ui.doubles import NOW, RecordingController, crashed_state

COLOUR_PROPERTIES = re.compile(
    r"^\s*(color|background|background-tint|border[a-z-]*|outline[a-z-]*|scrollbar[a-z-]*|"
    r"link[a-z-]*|tint|text-style|\$[a-z-]+)\s*:\s*(?P<value>[^;]+);",
    re.MULTILINE,
)
NAMED_COLOURS = {
    "red",
    "green",
    "blue",
    "white",
    "black",
    "yellow",
    "magenta",
    "cyan",
    "gray",
    "grey",
    "orange",
    "purple",
    "pink",
    "brown",
    "ansi_red",
    "ansi_green",
}


def _declarations() -> list[tuple[str, str]]:
    text = (themes_dir() / "specconsole.tcss").read_text()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    return [(m.group(1), m.group("value").strip()) for m in COLOUR_PROPERTIES.finditer(text)]


def test_stylesheet_uses_theme_variables_only() -> None:
    declarations = _declarations()
    assert len(declarations) > 40
    for prop, value in declarations:
        assert not re.search(r"#[0-9a-fA-F]{3,8}\b|rgba?\(|hsla?\(", value), (prop, value)
        words = {w.lower() for w in re.findall(r"[A-Za-z_]+", value) if not w.startswith("$")}
        assert not (words & NAMED_COLOURS), (prop, value)


def test_stylesheet_ships_where_paths_finds_it() -> None:
    assert (themes_dir() / "specconsole.tcss").is_file()


@pytest.mark.parametrize("theme", list(THEMES))
async def test_every_palette_renders_the_crash_scene(theme: str) -> None:
    app = make_app(
        RecordingController(crashed_state()), theme=theme, clock=lambda: NOW, tick_interval=None
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert app.theme == THEMES[theme].name
        assert app.has_class("-mono") is (theme == "mono")
        assert app.screen.query_one("#crash-banner").display


async def test_no_color_picks_mono(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(RecordingController(crashed_state()), clock=lambda: NOW, tick_interval=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.theme == THEMES["mono"].name


async def test_the_stylesheet_is_parsed_once_before_the_first_frame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The theme set at start only gives the stylesheet its variables (``App.refresh_css``):
    Textual's own refresh would parse it twice before the first frame. A theme switched
    later is Textual's whole refresh, and repaints."""
    parsed: list[object] = []
    real_parse = textual_stylesheet.parse

    def counting_parse(scope: str, css: str, read_from: tuple[str, str], **kwargs: object):  # type: ignore[no-untyped-def]
        if read_from[0].endswith("specconsole.tcss"):
            parsed.append(read_from)
        return real_parse(scope, css, read_from, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(textual_stylesheet, "parse", counting_parse)
    app = make_app(
        RecordingController(crashed_state()), theme="dark", clock=lambda: NOW, tick_interval=None
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert len(parsed) == 1
        dark = app.screen.query_one("#crash-banner").styles.background
        assert dark.rgb == Color.parse(app.get_css_variables()["error"]).rgb  # $bad: $error
        app.theme = THEMES["light"].name
        await pilot.pause()
        assert len(parsed) == 2
        assert app.screen.query_one("#crash-banner").styles.background != dark
