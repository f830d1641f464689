"""Pilot tests of the crash flow: the banner, its single keys, the full report, and the
panes around it (journal following, charts keeping their rows), against a recording
controller. Split from ``test_pilot`` (one concern a module).
"""

from __future__ import annotations

import pytest
from textual.message import Message
from textual.widgets import Input, Static

from specconsole.core.machine.events import Resume
from specconsole.core.machine.state import ResumeChoice
from specconsole.ui.app import SpecConsoleApp, make_app
from specconsole.ui.messages import IntentSent
from specconsole.ui.screens.confirm import ConfirmActionScreen
from specconsole.ui.screens.editor import EditorScreen
from specconsole.ui.widgets.chart import MIN_PLOT_ROWS
from specconsole.ui.widgets.crash import CrashBanner
from specconsole.ui.widgets.journal import JournalPane
from tests.ui.doubles import (
    CRASH_EXCERPT,
    NOW,
    RecordingController,
    benchmarking_state,
    crashed_state,
    crashed_sweep_state,
)


def _app(controller: RecordingController) -> SpecConsoleApp:
    return make_app(controller, theme="dark", clock=lambda: NOW, tick_interval=None)


async def test_crash_banner_appears_and_r_resumes() -> None:
    controller = RecordingController(benchmarking_state())
    app = _app(controller)
    messages: list[Message] = []
    async with app.run_test(size=(80, 24), message_hook=messages.append) as pilot:
        banner = app.screen.query_one(CrashBanner)
        assert not banner.display
        controller.log(*CRASH_EXCERPT)
        controller.publish(crashed_state())
        journal = app.screen.query_one(JournalPane)
        # The bridge flushes log batches about every 100 ms; on a loaded machine the first
        # flush can come later than a fixed pause, so wait for it (bounded: 50 × 0.1 s).
        for _ in range(50):
            await pilot.pause(0.1)
            if any("Not enough memory" in line for line in journal.log_view.lines):
                break
        assert banner.display
        assert banner.view is not None
        assert "crashed while loading (KV cache)" in banner.view.title
        assert ("r", "resume") in banner.view.choices
        assert any("Not enough memory" in line for line in journal.log_view.lines)
        await pilot.press("r")
        await pilot.pause()
    resumes = [m.intent for m in messages if isinstance(m, IntentSent)]
    assert resumes == controller.intents
    assert len(resumes) == 1
    assert isinstance(resumes[0], Resume) and resumes[0].choice is ResumeChoice.RESUME_NEXT
    assert resumes[0].at == NOW


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_charts_stay_readable_while_the_crash_banner_is_up(size: tuple[int, int]) -> None:
    """The banner takes rows from the side pane: the charts keep their minimum plot height
    plus two legend rows (they shrank to two rows before), at 80×24 (pane 2) and 120×40."""
    controller = RecordingController(crashed_state())
    app = _app(controller)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        if size == (80, 24):
            await pilot.press("2")
            await pilot.pause()
        assert app.screen.query_one(CrashBanner).display
        for chart in ("#chart-aggregate", "#chart-single"):
            widget = app.screen.query_one(chart)
            assert widget.region.height >= MIN_PLOT_ROWS + 2, (chart, widget.region)


async def test_crash_choices_are_single_keys_and_the_destructive_ones_ask_once() -> None:
    controller = RecordingController(crashed_sweep_state())
    app = _app(controller)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("t")  # named in the banner: acts at once
        await pilot.press("S")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmActionScreen)
        await pilot.press("y")
        await pilot.press("o")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmActionScreen)
        await pilot.press("y")
        await pilot.pause()
    choices = [i.choice for i in controller.intents if isinstance(i, Resume)]
    assert choices == [ResumeChoice.RETRY_SAME, ResumeChoice.SKIP, ResumeChoice.ROLLBACK]


async def test_edit_after_crash_sends_edit_then_deploy() -> None:
    controller = RecordingController(crashed_state())
    app = _app(controller)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, EditorScreen)
        box = editor.query_one("#field-speculative_num_steps", Input)
        box.value = "6"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
    [intent] = controller.intents
    assert isinstance(intent, Resume)
    assert intent.choice is ResumeChoice.EDIT_THEN_DEPLOY
    assert intent.config is not None and intent.config.speculative_num_steps == 6


async def test_following_survives_the_crash_banner_and_scrolling_back_pauses() -> None:
    controller = RecordingController(benchmarking_state())
    app = _app(controller)
    async with app.run_test(size=(120, 40)) as pilot:
        journal = app.screen.query_one(JournalPane)
        controller.log(*(f"line {i}" for i in range(200)))
        await pilot.pause(0.3)
        assert journal.log_view.is_vertical_scroll_end
        controller.publish(crashed_state())  # the banner takes rows from the journal
        await pilot.pause(0.3)
        controller.log("the last line")
        await pilot.pause(0.3)
        assert journal.follow and journal.log_view.is_vertical_scroll_end
        journal.log_view.focus()
        await pilot.press("pageup")
        await pilot.pause()
        assert not journal.follow
        controller.log("another line")
        await pilot.pause(0.3)
        assert not journal.log_view.is_vertical_scroll_end


async def test_crash_details_modal_offers_the_same_single_keys() -> None:
    from specconsole.ui.screens.crash import CrashScreen

    controller = RecordingController(crashed_state())
    app = _app(controller)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, CrashScreen)
        text = " ".join(str(w.render()) for w in app.screen.query(Static))
        assert "Not enough memory" in text and "shrink the tree" in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CrashScreen)
        assert controller.intents == []
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        assert not isinstance(app.screen, CrashScreen)
    assert controller.intents == [Resume(choice=ResumeChoice.RESUME_NEXT, at=NOW)]
