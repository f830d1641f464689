"""Issue 34 at 80×24, through the real app and keys: never lose work, never hide the way
out, never cut a number, say what a key will do to the box, and never cover the journal.

Each test is one of the issue's points as a user met it; they failed before the fix (the
editor threw edits away, the footer lost ``?`` and ``q``, the table cut ``1,545`` to
``1,54``, ``k`` skipped at once, toasts covered the journal).
"""

from __future__ import annotations

import dataclasses

from textual.widgets import Input, Static

from specconsole.core.machine.events import Cancel, DeployConfig, Pause, Resume
from specconsole.core.machine.state import Notice, ResumeChoice
from specconsole.present.formats import format_rate
from specconsole.ui.app import SpecConsoleApp, make_app
from specconsole.ui.screens.confirm import ConfirmActionScreen
from specconsole.ui.screens.editor import EditorScreen
from specconsole.ui.widgets.crash import CrashBanner
from specconsole.ui.widgets.journal import JournalPane
from specconsole.ui.widgets.keybar import KeyBar
from specconsole.ui.widgets.message import MessageLine
from specconsole.ui.widgets.trials import TrialsPane
from tests.ui.doubles import (
    NOW,
    RecordingController,
    benchmarking_state,
    big_figures_state,
    crashed_sweep_state,
    paused_state,
    sweep_plan,
)

SIZE = (80, 24)


def _app(controller: RecordingController) -> SpecConsoleApp:
    return make_app(controller, theme="dark", clock=lambda: NOW, tick_interval=None)


def _footer(app: SpecConsoleApp) -> str:
    return str(app.screen.query_one(KeyBar).render())


# 1. Edits survive an action the phase cannot take --------------------------------------------


async def test_ctrl_s_while_a_trial_runs_queues_the_edit_and_deploys_it_after() -> None:
    controller = RecordingController(dataclasses.replace(benchmarking_state(), plan=sweep_plan()))
    app = _app(controller)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, EditorScreen)
        status = str(editor.query_one("#editor-problems", Static).render())
        assert "trial 4 is benchmarking: ctrl+s queues your edit" in status  # said before
        editor.query_one("#field-speculative_num_steps", Input).value = "7"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not isinstance(app.screen, EditorScreen)
        assert controller.intents == [Pause(at=NOW)]  # the sweep stops after this trial
        line = app.screen.query_one(MessageLine)
        assert line.display and line.text.startswith("Queued steps=7")
        assert "can't handle" not in " ".join(app.messages)
        # The trial ends, the sweep pauses: the queued edit deploys, as it said it would.
        controller.publish(paused_state())
        await pilot.pause(0.2)
    deploys = [i for i in controller.intents if isinstance(i, DeployConfig)]
    assert len(deploys) == 1 and deploys[0].config.speculative_num_steps == 7


async def test_esc_on_an_edited_form_asks_before_discarding() -> None:
    controller = RecordingController(paused_state())
    app = _app(controller)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, EditorScreen)
        box = editor.query_one("#field-mem_fraction_static", Input)
        box.value = "0.8"
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmActionScreen)
        await pilot.press("n")  # keep editing: the edit is still there
        await pilot.pause()
        assert app.screen is editor and box.value == "0.8"
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert not isinstance(app.screen, (EditorScreen, ConfirmActionScreen))
    assert controller.intents == []


# 2. The footer never loses ? and q ---------------------------------------------------------


async def test_footer_keeps_help_and_quit_first_in_the_crash_and_paused_states() -> None:
    for state in (crashed_sweep_state(), paused_state()):
        app = _app(RecordingController(state))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            footer = _footer(app)
            assert footer.startswith(" ? help  q quit"), footer
            header = str(app.screen.query_one("#status").render()).splitlines()[0]
            assert "…" not in header and len(header) <= SIZE[0], header  # no figure cut
            assert len(footer) <= SIZE[0]
            if app.screen.query_one(CrashBanner).display:
                # the banner lists its own keys; the footer does not repeat them
                assert "r resume" not in footer and "o roll back" not in footer
            else:
                assert "r resume" in footer  # (s continue does the same: not twice)


# 3. Whole numbers or no column ---------------------------------------------------------------


async def test_trials_table_drops_whole_columns_with_a_marker_instead_of_cutting_digits() -> None:
    state = big_figures_state()
    app = _app(RecordingController(state))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        await pilot.pause(0.2)
        pane = app.screen.query_one(TrialsPane)
        table = pane.table
        assert table.virtual_size.width <= table.size.width  # nothing scrolls off, cut
        shown = pane.shown_columns
        assert "peak" in shown
        assert shown[-1] == "more-columns"
        header = str(table.columns[table.ordered_columns[-1].key].label)
        assert header.endswith("cols →")
        peaks = [format_rate(t.peak_aggregate_tok_s) for t in state.trials]
        assert all(len(p) >= 6 for p in peaks)  # five-digit figures: 12,345
        cells = [table.get_cell(str(t.index), "peak") for t in state.trials]
        assert cells == peaks
        await pilot.press("right")  # → brings in the columns that were cut
        await pilot.pause(0.2)
        assert pane.shown_columns != shown
        assert table.virtual_size.width <= table.size.width


async def test_the_table_follows_the_newest_trial_as_trials_arrive() -> None:
    state = big_figures_state()
    controller = RecordingController(dataclasses.replace(state, trials=state.trials[:1]))
    app = _app(controller)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        for n in range(2, len(state.trials) + 1):
            controller.publish(dataclasses.replace(state, trials=state.trials[:n]))
            await pilot.pause(0.1)
        pane = app.screen.query_one(TrialsPane)
        assert pane.selected_key == str(state.trials[-1].index)


# 4. Keys that change the box say what they do; destructive ones ask once ---------------------


async def test_banner_names_what_each_key_deploys_and_skip_asks_first() -> None:
    controller = RecordingController(crashed_sweep_state())
    app = _app(controller)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        banner = app.screen.query_one(CrashBanner)
        text = banner.plain
        assert "r resume: steps=" in text and "o roll back to steps=5 draft=6" in text, text
        assert "S skip steps=" in text
        await pilot.press("k")  # vim/lazygit/k9s: k moves up; it never skips
        await pilot.pause()
        assert controller.intents == []
        await pilot.press("S")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ConfirmActionScreen)
        title = str(dialog.query_one("#ask-title", Static).render())
        assert title.startswith("Skip steps=")
        assert "--speculative-num-steps: 10 →" in str(dialog.query_one("#ask-lines").render())
        await pilot.press("escape")
        await pilot.pause()
        assert controller.intents == []
        await pilot.press("o")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
    assert controller.intents == [Resume(choice=ResumeChoice.ROLLBACK, at=NOW)]


async def test_x_names_the_running_trial_not_the_selected_row() -> None:
    controller = RecordingController(benchmarking_state())
    app = _app(controller)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        pane = app.screen.query_one(TrialsPane)
        pane.table.focus()
        await pilot.press("k", "k", "k")  # select trial 1 (k moves up)
        await pilot.pause()
        assert pane.selected_key == "0"
        await pilot.press("x")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ConfirmActionScreen)
        assert str(dialog.query_one("#ask-title", Static).render()).startswith("Cancel trial 4")
        lines = str(dialog.query_one("#ask-lines", Static).render())
        assert "The selected row is trial 1: x only ever cancels the running trial." in lines
        await pilot.press("y")
        await pilot.pause()
    assert controller.intents == [Cancel(at=NOW)]


# 6. Messages never cover the journal, a dialog, or what the banner says ----------------------


async def test_messages_take_their_own_line_and_skip_what_the_banner_says() -> None:
    controller = RecordingController(benchmarking_state())
    app = _app(controller)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        controller.log(*(f"line {i}" for i in range(40)))
        crashed = crashed_sweep_state()
        notice = Notice("error", "trial 6 crashed: RuntimeError: Not enough memory.", NOW)
        controller.publish(dataclasses.replace(crashed, notice=notice))
        await pilot.pause(0.3)
        line = app.screen.query_one(MessageLine)
        assert not line.display  # the banner says it
        warning = Notice("warning", "connection lost: ssh: timed out", NOW + 1)
        controller.publish(dataclasses.replace(crashed, notice=warning))
        await pilot.pause(0.2)
        assert line.display and line.region.height == 1
        journal = app.screen.query_one(JournalPane)
        assert not line.region.overlaps(journal.region)
        assert "line 39" in journal.log_view.lines[-1]
        assert not app._notifications  # no toast, ever
        await pilot.press("c")  # a dialog: the message line stays under the main screen
        await pilot.pause()
        assert not app._notifications


# 7. The editor says what the controller would: its prediction, the history, the axis first --


async def test_editor_uses_the_controllers_prediction_and_flags_a_crashed_configuration() -> None:
    from specconsole.core.machine.common import _minimum_capacity
    from specconsole.core.search.capacity import predict_capacity
    from specconsole.present.formats import format_int
    from specconsole.present.keyboard.actions import as_deployed

    state = crashed_sweep_state()
    app = _app(RecordingController(state))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, EditorScreen)
        text = str(editor.query_one("#editor-capacity", Static).render())
        crashed = state.trials[-1].config
        expected = predict_capacity(
            state.trials, as_deployed(crashed), minimum_tokens=_minimum_capacity(state)
        )
        assert expected.predicted_tokens is not None  # five trials: the controller predicts
        assert text.startswith(f"steps=10: predicted {format_int(expected.predicted_tokens)}")
        assert "already crashed in trial 6: no GPU memory left for the KV cache" in text


async def test_a_click_on_a_footer_hint_presses_its_key() -> None:
    from specconsole.ui.screens.help import HelpScreen

    app = _app(RecordingController(paused_state()))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.click("#keybar", offset=(2, 0))  # "? help"
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
