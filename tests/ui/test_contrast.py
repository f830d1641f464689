"""Every palette is readable: WCAG contrast of what the console draws, against what it is
drawn on, computed from the styles the running app resolves (issue 34, point 5).

Text (log lines of every kind, search matches on plain and on coloured lines, the header,
the crash banner, the footer, the message line, the trials table, the diff pane) needs
at least 4.5:1; pane borders, focused or not, at least 3:1. Colours with transparency are
blended over what is under them, as the terminal shows them; ``reverse`` swaps a style's
two colours. ``NO_COLOR`` must leave the terminal's own colours (no black screen painted
by the app).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from textual.color import Color
from textual.filter import Monochrome, NoColor
from textual.geometry import Region
from textual.widget import Widget

from specconsole.ui.app import SpecConsoleApp, make_app
from specconsole.ui.theme import THEMES
from specconsole.ui.viewmodels import LINE_KINDS
from specconsole.ui.widgets.chart import _Chart
from specconsole.ui.widgets.diffview import DIFF_KINDS
from tests.ui.doubles import NOW, RecordingController, crashed_sweep_state, diffs_state

TEXT = 4.5
BORDER = 3.0


def luminance(c: Color) -> float:
    """WCAG relative luminance."""

    def channel(v: int) -> float:
        s = v / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b)


def contrast(a: Color, b: Color) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def text_colours(widget: Widget, component: str | None = None) -> tuple[Color, Color]:
    """(foreground, background) of ``widget``'s text, or of one of its components drawn
    over it (a component without a colour of its own keeps the widget's)."""
    _base_bg, _base_fg, background, colour = widget.colors
    if component is None:
        return colour, background
    styles = widget.get_component_styles(component)
    bg = background + styles.background if styles.background.a else background
    fg = bg + styles.color if styles.has_rule("color") else bg + colour
    if styles.text_style.reverse:
        fg, bg = bg, fg
    return fg, bg


def kind_under_match(log: Widget, kind: str) -> tuple[Color, Color]:
    """A search match on a line of ``kind``: the match's colours where it sets them, the
    line's where it does not (the issue: a background with no foreground)."""
    line_fg, line_bg = text_colours(log, f"journal--{kind}")
    match = log.get_component_styles("journal--match")
    bg = line_bg + match.background if match.background.a else line_bg
    fg = bg + match.color if match.has_rule("color") else line_fg
    if match.text_style.reverse:
        fg, bg = bg, fg
    return fg, bg


def border(widget: Widget) -> tuple[Color, Color]:
    _b, _c, background, _f = widget.colors
    return background + widget.styles.border_top[1], background


def _pairs(app: SpecConsoleApp) -> Iterator[tuple[str, tuple[Color, Color], float]]:
    screen = app.screen
    log = screen.query_one("#journal-log", Widget)
    yield "journal text", text_colours(log), TEXT
    for kind in LINE_KINDS:
        yield f"journal {kind}", text_colours(log, f"journal--{kind}"), TEXT
        yield f"match on a {kind} line", kind_under_match(log, kind), TEXT
    yield "match on a plain line", text_colours(log, "journal--match"), TEXT
    header = screen.query_one("#status", Widget)
    for part in ("phase", "meta", "config", "title"):
        yield f"header {part}", text_colours(header, f"status--{part}"), TEXT
    banner = screen.query_one("#crash-banner", Widget)
    for part in ("title", "keys", "dim", "fix"):
        yield f"banner {part}", text_colours(banner, f"crash--{part}"), TEXT
    bar = screen.query_one("#keybar", Widget)
    for part in ("key", "label"):
        yield f"footer {part}", text_colours(bar, f"keybar--{part}"), TEXT
    line = screen.query_one("#message-line", Widget)
    for severity in ("information", "warning", "error"):
        line.set_class(severity == "warning", "-warning")
        line.set_class(severity == "error", "-error")
        yield f"message line {severity}", text_colours(line), TEXT
    table = screen.query_one("#trials-table", Widget)
    for part in ("header", "cursor", "even-row", "odd-row"):
        yield f"table {part}", text_colours(table, f"datatable--{part}"), TEXT
    for pane in ("#journal", "#side", "#trials"):
        yield f"border {pane}", border(screen.query_one(pane, Widget)), BORDER
    yield "border banner", border(banner), BORDER


@pytest.mark.parametrize("theme", list(THEMES))
async def test_every_palette_reads_at_wcag_contrast(theme: str) -> None:
    controller = RecordingController(crashed_sweep_state())
    app = make_app(controller, theme=theme, clock=lambda: NOW, tick_interval=None)
    failures = []
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        checked = list(_pairs(app))
        app.screen.query_one("#trials-table").focus()  # the journal's border unfocused
        await pilot.pause()
        checked.append(
            ("border #journal (unfocused)", border(app.screen.query_one("#journal")), BORDER)
        )
        for name, (fg, bg), need in checked:
            ratio = contrast(fg, bg)
            if ratio < need:
                failures.append(f"{name}: {ratio:.2f} < {need} ({fg.hex} on {bg.hex})")
    assert len(checked) > 30
    assert not failures, f"{theme}:\n" + "\n".join(failures)


@pytest.mark.parametrize("theme", list(THEMES))
async def test_the_diff_pane_reads_at_wcag_contrast(theme: str) -> None:
    controller = RecordingController(diffs_state())
    app = make_app(controller, theme=theme, clock=lambda: NOW, tick_interval=None)
    failures = []
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("v")
        await pilot.pause(0.3)
        view = app.screen.query_one("#diff-view", Widget)
        for kind in (*DIFF_KINDS, "changed"):
            fg, bg = text_colours(view, f"diff--{kind}")
            if contrast(fg, bg) < TEXT:
                failures.append(f"diff {kind}: {contrast(fg, bg):.2f} ({fg.hex} on {bg.hex})")
        box = app.screen.query_one("#diff-box", Widget)
        fg, bg = border(box)
        if contrast(fg, bg) < BORDER:
            failures.append(f"diff box border: {contrast(fg, bg):.2f}")
    assert not failures, f"{theme}:\n" + "\n".join(failures)


async def test_no_color_leaves_the_terminals_own_colours(monkeypatch: pytest.MonkeyPatch) -> None:
    """``NO_COLOR``: Textual's NoColor filter (the terminal's default colours), not the
    Monochrome one that painted the mono palette's black over a light terminal."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(RecordingController(crashed_sweep_state()), clock=lambda: NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.theme == THEMES["mono"].name
        assert any(isinstance(f, NoColor) for f in app._filters)
        assert not any(isinstance(f, Monochrome) for f in app._filters)
        for selector in ("#journal-log", "#status", "#crash-banner", "#keybar"):
            widget = app.screen.query_one(selector, Widget)
            lines = widget.render_lines(Region(0, 0, widget.outer_size.width, 1))
            colours = {s.style.bgcolor for s in lines[0] if s.style and s.style.bgcolor}
            assert all(c.is_default for c in colours), (selector, colours)


SERIES = 3.0
"""A chart line (and its legend mark) on the chart's background: WCAG's ratio for graphics."""


@pytest.mark.parametrize("theme", list(THEMES))
async def test_every_chart_series_reads_at_3_to_1_on_its_background(theme: str) -> None:
    """Issue 42: Tableau's orange, cyan and olive were 1.9-2.3:1 on the light theme. Every
    colour a chart draws (lines, legend marks, the crash mark) is checked on the background
    the chart resolves; the mono theme draws markers, no colours."""
    from tests.ui.doubles import finished_trial, paused_state

    trials = tuple(dataclasses.replace(finished_trial(1 + i % 5), index=i) for i in range(10))
    state = dataclasses.replace(paused_state(), trials=trials)
    app = make_app(RecordingController(state), theme=theme, clock=lambda: NOW, tick_interval=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.pause()
        charts = list(app.screen.query(_Chart))
        drawn = [c for c in charts if c.legend]
        assert drawn, "no chart drew its series"
        failures = []
        for chart in drawn:
            if theme == "mono":
                assert chart.background is None and all(e.color is None for e in chart.legend)
                continue
            assert chart.background is not None
            back = Color(*chart.background)
            for entry in chart.legend:
                assert entry.color is not None
                ratio = contrast(Color(*entry.color), back)
                if ratio < SERIES:
                    failures.append(f"{chart.id} {entry.label}: {ratio:.2f} on {back.hex}")
        assert sum(len(c.legend) for c in drawn) >= 8
        assert not failures, f"{theme}:\n" + "\n".join(failures)
