"""Pilot tests: the editor takes input as fast as it comes (issue 42, item 3).

Keys are posted to the app the way the terminal driver posts them — all at once, nothing
processed in between — so a burst reaches the app before any field has handled its first
key; each key must still edit the field that had focus when it arrived, whatever re-checks
and re-layouts (an emptied field's error line) follow. A bracketed paste lands in the
focused field. ``e`` and the keys typed after it may come in one burst: every one of them
reaches the editor, in order — and the journal's search box still takes ``e`` as text. The
same bursts through a real terminal are ``test_editor_tmux.py``'s.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input

from specconsole.ui.app import SpecConsoleApp, make_app
from specconsole.ui.screens.editor import EditorScreen
from specconsole.ui.screens.main import MainScreen
from specconsole.ui.widgets.journal import JournalPane
from tests.ui.doubles import NOW, RecordingController, idle_state

TRIES = 10
CHARACTERS = {"tab": "\t", "enter": "\r", "ctrl+a": "\x01", "ctrl+k": "\x0b", "ctrl+u": "\x15"}


def _app() -> SpecConsoleApp:
    controller = RecordingController(idle_state())
    return make_app(controller, theme="dark", clock=lambda: NOW, tick_interval=None)


def _burst(app: SpecConsoleApp, *keys: str) -> None:
    """Post every key before any is handled (what the driver does with one read)."""
    for key in keys:
        if key in CHARACTERS:
            app.post_message(events.Key(key, CHARACTERS[key]))
        else:
            for char in key:
                app.post_message(events.Key(char, char))


def _value(editor: EditorScreen, name: str) -> str:
    return editor.query_one(f"#field-{name}", Input).value


async def _editor(app: SpecConsoleApp, pilot: object) -> EditorScreen:
    await pilot.press("e")  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
    editor = app.screen
    assert isinstance(editor, EditorScreen)
    return editor


async def test_a_burst_edits_each_field_it_was_typed_into() -> None:
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        editor = await _editor(app, pilot)
        order = [f.name for f in editor._fields]
        first = order[0]
        before = _value(editor, first)
        # the burst: steps 2, skip topk, draft tokens 3, then the next field 0.8
        _burst(app, "tab", "ctrl+a", "ctrl+k", "2", "tab", "tab", "ctrl+a", "ctrl+k", "3")
        _burst(app, "tab", "ctrl+a", "ctrl+k", "0.8")
        await pilot.pause()
        await pilot.pause()
        assert _value(editor, first) == before
        assert _value(editor, order[1]) == "2"
        assert _value(editor, order[3]) == "3"
        assert _value(editor, order[4]) == "0.8"
        assert app.focused is editor.query_one(f"#field-{order[4]}", Input)


async def test_emptying_fields_in_a_burst_leaves_the_others_alone() -> None:
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        editor = await _editor(app, pilot)
        order = [f.name for f in editor._fields]
        values = {name: _value(editor, name) for name in order}
        # empty the second and third fields (each shows its error line: the form re-lays
        # out) and type into the fourth, with enter moving on like tab
        _burst(app, "tab", "ctrl+a", "ctrl+k", "enter", "ctrl+u", "tab", "ctrl+a", "ctrl+k", "7")
        await pilot.pause()
        await pilot.pause()
        assert _value(editor, order[1]) == ""
        assert _value(editor, order[2]) == ""
        assert _value(editor, order[3]) == "7"
        untouched = [order[0], *order[4:]]
        assert {n: _value(editor, n) for n in untouched} == {n: values[n] for n in untouched}


async def test_a_paste_lands_in_the_focused_field() -> None:
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        editor = await _editor(app, pilot)
        order = [f.name for f in editor._fields]
        values = {name: _value(editor, name) for name in order}
        _burst(app, "tab", "tab", "ctrl+a", "ctrl+k")
        app.post_message(events.Paste("0.85"))
        _burst(app, "tab")
        app.post_message(events.Paste("12\nignored second line"))
        await pilot.pause()
        await pilot.pause()
        assert _value(editor, order[2]) == "0.85"
        # a field entered by tab has its text selected: the paste replaces it
        assert _value(editor, order[3]) == "12"
        untouched = [order[0], order[1], *order[4:]]
        assert {n: _value(editor, n) for n in untouched} == {n: values[n] for n in untouched}


async def test_keys_typed_right_after_e_reach_the_editor_in_order() -> None:
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        wrong: list[str] = []
        for attempt in range(TRIES):
            assert isinstance(app.screen, MainScreen)
            # ``e`` and the burst in one read: the editor is not open yet when the
            # keys behind ``e`` arrive
            _burst(app, "e", "tab", "ctrl+a", "ctrl+k", "2", "tab", "tab", "ctrl+a", "ctrl+k")
            _burst(app, "3", "tab", "ctrl+a", "ctrl+k", "0.8")
            await pilot.pause()
            await pilot.pause()
            editor = app.screen
            if not isinstance(editor, EditorScreen):
                wrong.append(f"try {attempt + 1}: the editor did not open ({editor!r})")
                continue
            order = [f.name for f in editor._fields]
            got = {name: _value(editor, name) for name in order}
            intended = {**editor._initial, order[1]: "2", order[3]: "3", order[4]: "0.8"}
            if got != intended:
                wrong.append(f"try {attempt + 1}: {got} (intended {intended})")
            editor.dismiss(None)
            await pilot.pause()
        assert not wrong, "\n".join(wrong[:3])


async def test_the_search_box_still_takes_e_as_text() -> None:
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("slash")
        await pilot.pause()
        journal = app.screen.query_one(JournalPane)
        assert app.focused is journal.search_box
        _burst(app, "e", "dit", "e")
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        assert journal.search_box.value == "edite"
        assert not any("does not apply" in m for m in app.messages)
        await pilot.press("escape")  # clears the search; then ``e`` is the edit command again
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, EditorScreen)
