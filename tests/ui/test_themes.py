"""The stylesheet reads theme variables only, and every palette renders the whole console."""

from __future__ import annotations

import re

import pytest

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
