"""Pilot tests: the real app, driven by keys, against a recording controller.

They assert on the messages the app posts (``IntentSent``, ``LogBatch``) and on the intents
the controller received, which is the UI's whole contract with the controller.
"""

from __future__ import annotations

import dataclasses
import re

from rich.console import Console
from textual.message import Message
from textual.widgets import Input, Static

from specconsole.core.machine.events import DeployConfig, Quit, StartSweep
from specconsole.core.machine.state import Phase, ResumeChoice
from specconsole.core.measure.gpu import GpuSample
from specconsole.present.keyboard.actions import choice_target
from specconsole.ui.app import SpecConsoleApp, make_app
from specconsole.ui.messages import IntentSent, LogBatch
from specconsole.ui.screens.confirm import ConfirmActionScreen
from specconsole.ui.screens.editor import EditorScreen
from specconsole.ui.screens.help import HelpScreen
from specconsole.ui.screens.quit import QuitScreen
from specconsole.ui.widgets.chart import SingleRequestChart, ThroughputChart
from specconsole.ui.widgets.gpus import GpuLine
from specconsole.ui.widgets.journal import JournalPane
from specconsole.ui.widgets.keybar import KeyBar
from specconsole.ui.widgets.message import MessageLine
from specconsole.ui.widgets.plot import ChartPlot
from tests.controller.helpers import plan
from tests.ui.doubles import (
    NOW,
    RecordingController,
    benchmarking_state,
    crashed_state,
    idle_state,
    loading_state,
    paused_state,
    steps_config,
)


def _app(controller: RecordingController) -> SpecConsoleApp:
    return make_app(controller, theme="dark", clock=lambda: NOW, tick_interval=None)


async def test_editor_shows_error_then_applies_as_next_trial() -> None:
    controller = RecordingController(idle_state())
    app = _app(controller)
    messages: list[Message] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await pilot.press("e")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, EditorScreen)
        box = editor.query_one("#field-speculative_num_steps", Input)
        box.focus()
        box.value = ""
        await pilot.press("x", "y")
        await pilot.pause()
        error = editor.query_one("#error-speculative_num_steps", Static)
        assert error.display
        assert "speculative_num_steps" in str(error.render())
        assert "not a whole number" in str(error.render())
        assert editor.candidate is None
        # Apply is refused while the error stands.
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is editor
        assert not controller.intents
        # Fix it: a valid value clears the error and apply deploys it as the next trial.
        box.value = ""
        await pilot.press("5")
        await pilot.pause()
        assert not error.display
        diff = str(editor.query_one("#editor-diff", Static).render())
        assert "--speculative-num-steps: 3 → 5" in diff
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not isinstance(app.screen, EditorScreen)
    sent = [m.intent for m in messages if isinstance(m, IntentSent)]
    assert len(sent) == 1 and isinstance(sent[0], DeployConfig)
    assert sent[0].config.speculative_num_steps == 5
    assert controller.intents == sent


async def test_editor_suggest_next_fills_the_plans_next_at_once_as_the_banner_says() -> None:
    """Issue 42 #8: ctrl+n showed nothing until the next key, then contradicted the banner.
    Its first frame says it is asking; with no further key the form holds what the banner's
    r resumes with, and the reason says so."""
    state = dataclasses.replace(
        crashed_state(), plan=plan(axes=(("speculative_num_steps", tuple(range(1, 11))),))
    )
    controller = RecordingController(state)
    app = _app(controller)
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_editor()
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, EditorScreen)
        box = editor.query_one("#editor-suggestion", Static)
        editor.action_suggest()
        assert str(box.render()) == "suggest next: asking the plan…"  # before any work
        for _ in range(20):  # no key pressed: the answer arrives by itself
            await pilot.pause(0.05)
            if str(box.render()).startswith("suggested: "):
                break
        reason = str(box.render())
        assert reason.startswith("suggested: the plan's next trial (what r resumes with)"), reason
        target = choice_target(state, ResumeChoice.RESUME_NEXT)
        assert target is not None and editor.candidate is not None
        steps = editor.candidate.speculative_num_steps
        assert steps == target.speculative_num_steps
        assert editor.query_one("#field-speculative_num_steps", Input).value == str(steps)
        await pilot.press("ctrl+n")  # the key itself does the same
        await pilot.pause(0.2)
        assert str(box.render()) == reason


async def test_editor_applies_the_cores_rules_as_you_type() -> None:
    controller = RecordingController(idle_state())
    app = _app(controller)
    checks: list[Message] = []
    async with app.run_test(size=(80, 24), message_hook=checks.append) as pilot:
        await pilot.press("e")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, EditorScreen)
        editor.query_one("#field-speculative_eagle_topk", Input).value = "2"
        box = editor.query_one("#field-speculative_num_draft_tokens", Input)
        box.focus()
        box.value = ""
        await pilot.press("9")
        await pilot.pause()
        error = str(editor.query_one("#error-speculative_num_draft_tokens", Static).render())
        assert "speculative_num_draft_tokens" in error and "steps x topk + 1 = 7" in error
        assert box.has_class("-invalid")
        assert any(p.blocking for p in editor.problems)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is editor and controller.intents == []
        # SGLang's warning about max_running_requests is shown but does not block.
        await pilot.press("backspace", "7")
        editor.query_one("#field-max_running_requests", Input).value = ""
        await pilot.pause()
        assert not any(p.blocking for p in editor.problems)
        warning = str(editor.query_one("#error-max_running_requests", Static).render())
        assert "48" in warning
    assert any(isinstance(m, EditorScreen.Checked) for m in checks)


async def test_quit_asks_while_a_trial_runs_and_leaves_server_running() -> None:
    controller = RecordingController(benchmarking_state())
    app = _app(controller)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, QuitScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, QuitScreen)
        assert controller.intents == []
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert controller.intents == [Quit(stop_server=False, at=NOW)]


async def test_a_dialog_hides_the_footer_behind_it_and_gives_it_back() -> None:
    """The quit dialog's ``s`` (stop the server and quit) never sits over a footer saying
    ``s pause`` (issue 42): the footer's row stays, its keys are hidden while a dialog is open."""
    controller = RecordingController(benchmarking_state())
    app = _app(controller)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        keybar = app.screen.query_one(KeyBar)
        assert keybar.visible and "pause" in keybar.keys_now.available
        for key, dialog in (("q", QuitScreen), ("question_mark", HelpScreen)):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, dialog)
            assert not keybar.visible, key
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, dialog) and keybar.visible, key
    assert controller.intents == []


async def test_quit_when_idle_does_not_ask() -> None:
    controller = RecordingController(idle_state())
    app = _app(controller)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")
        await pilot.pause()
    assert controller.intents == [Quit(stop_server=False, at=NOW)]


async def test_sweep_key_starts_then_pauses() -> None:
    controller = RecordingController(dataclasses.replace(idle_state(), plan=plan()))
    app = _app(controller)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("s")
        await pilot.pause()
        controller.publish(dataclasses.replace(benchmarking_state()))
        await pilot.pause(0.2)
        await pilot.press("s")
        await pilot.pause()
    assert [type(i).__name__ for i in controller.intents] == ["StartSweep", "Pause"]
    assert isinstance(controller.intents[0], StartSweep)


async def test_sweep_key_without_a_plan_says_why_and_sends_nothing() -> None:
    controller = RecordingController(idle_state())
    app = _app(controller)
    async with app.run_test(size=(80, 24)) as pilot:
        assert (
            "s" not in app.screen.active_bindings
            or not app.screen.active_bindings["s"].binding.show
        )
        await pilot.press("s")
        await pilot.pause()
        messages = list(app.messages)
        assert not app._notifications  # the message line, not a toast
    assert controller.intents == []
    assert any("does not apply now" in m for m in messages)


async def test_log_lines_arrive_batched_and_search_filters() -> None:
    controller = RecordingController(idle_state())
    app = _app(controller)
    messages: list[Message] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        for i in range(300):
            controller.log(f"[2026-07-20 12:00:00] Decode batch, #running-req: {i}")
        controller.log("[2026-07-20 12:00:01] The server is fired up and ready to roll!")
        await pilot.pause(0.35)
        batches = [m for m in messages if isinstance(m, LogBatch)]
        assert 1 <= len(batches) <= 4, "301 publications must arrive as a few batches"
        assert sum(len(b.lines) for b in batches) == 301
        journal = app.screen.query_one(JournalPane)
        assert journal.log_view.line_count == 301
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press(*"fired")
        await pilot.pause()
        assert journal.log_view.line_count == 1
        assert "fired up" in journal.log_view.lines[0]
        assert "1/301 lines match" in journal.border_subtitle
        await pilot.press("escape")
        await pilot.pause()
        assert journal.log_view.line_count == 301


async def test_follow_toggles_and_pauses_scrolling() -> None:
    controller = RecordingController(idle_state())
    app = _app(controller)
    async with app.run_test(size=(80, 24)) as pilot:
        journal = app.screen.query_one(JournalPane)
        assert journal.follow
        await pilot.press("f")
        await pilot.pause()
        assert not journal.follow
        assert journal.log_view.auto_scroll is False
        assert journal.border_subtitle.startswith("paused")
        controller.log(*(f"line {i}" for i in range(100)))
        await pilot.pause(0.3)
        assert journal.log_view.scroll_y == 0
        await pilot.press("f")
        await pilot.pause()
        assert journal.log_view.is_vertical_scroll_end


async def test_compact_layout_switches_panes_with_number_keys() -> None:
    controller = RecordingController(benchmarking_state())
    app = _app(controller)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert screen.has_class("-compact")
        assert screen.query_one("#journal").display and screen.query_one("#journal").region.height
        assert screen.query_one("#side").region.height == 0
        await pilot.press("2")
        await pilot.pause()
        assert screen.query_one("#side").region.height > 0
        assert screen.query_one("#journal").region.height == 0
        await pilot.press("3")
        await pilot.pause()
        assert screen.query_one("#trials").region.height > 0


async def test_wide_layout_shows_every_pane() -> None:
    controller = RecordingController(benchmarking_state())
    app = _app(controller)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert not screen.has_class("-compact")
        for pane in ("#journal", "#side", "#trials"):
            region = screen.query_one(pane).region
            assert region.height > 3 and region.width > 20, pane


async def test_controller_warnings_go_to_the_message_line_once() -> None:
    from specconsole.core.machine.state import Notice

    controller = RecordingController(idle_state())
    app = _app(controller)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        notice = Notice("warning", "cannot deploy while a trial is loading", NOW)
        controller.publish(dataclasses.replace(idle_state(), notice=notice))
        await pilot.pause(0.2)
        line = app.screen.query_one(MessageLine)
        assert line.display and line.text == "cannot deploy while a trial is loading"
        controller.publish(dataclasses.replace(idle_state(), notice=notice, phase_since=NOW - 1))
        await pilot.pause(0.2)
        assert app.messages.count(notice.text) == 1
        assert not app._notifications


async def test_routine_notices_do_not_pop_up() -> None:
    from specconsole.core.machine.state import Notice

    controller = RecordingController(idle_state())
    app = _app(controller)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        controller.publish(
            dataclasses.replace(idle_state(), notice=Notice("info", "trial 4: steps=4", NOW))
        )
        await pilot.pause(0.2)
        assert not app._notifications
        assert not app.screen.query_one(MessageLine).display


async def test_help_lists_the_keys_and_closes() -> None:
    from specconsole.ui.screens.help import HelpScreen, HelpText

    app = _app(RecordingController(idle_state()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.query_one(HelpText).plain
        for key_line in ("  d  nothing runs", "  r  crash or pause", "ctrl+s"):
            assert key_line in text, key_line
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_editor_revert_and_cancel_send_nothing() -> None:
    controller = RecordingController(idle_state())
    app = _app(controller)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("e")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, EditorScreen)
        box = editor.query_one("#field-mem_fraction_static", Input)
        box.value = "0.5"
        await pilot.pause()
        assert "--mem-fraction-static: 0.85 → 0.5" in str(
            editor.query_one("#editor-diff", Static).render()
        )
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert box.value == "0.85"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, EditorScreen)
    assert controller.intents == []


async def test_cancel_and_bench_keys() -> None:
    from specconsole.core.machine.events import BenchmarkOnly, Cancel

    controller = RecordingController(benchmarking_state())
    app = _app(controller)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("x")
        await pilot.pause()
        await pilot.press("y")  # x names the trial it cancels and asks once
        await pilot.pause()
        controller.publish(idle_state())
        await pilot.pause(0.2)
        await pilot.press("x", "b", "d")
        await pilot.pause()
        await pilot.press("y")  # d names what it deploys and asks once
        await pilot.pause()
    assert controller.intents[0] == Cancel(at=NOW)
    assert controller.intents[1] == BenchmarkOnly(at=NOW)
    assert isinstance(controller.intents[2], DeployConfig)
    assert controller.intents[2].config == idle_state().deployed_config
    assert len(controller.intents) == 3  # x while idle sends nothing


async def test_selecting_a_trial_shows_its_details() -> None:
    from specconsole.ui.widgets.trials import TrialsPane

    controller = RecordingController(crashed_state())
    app = _app(controller)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        pane = app.screen.query_one(TrialsPane)
        details = app.screen.query_one("#trial-details", Static)
        assert "#6" in str(details.render())  # follows the newest trial
        pane.table.focus()
        await pilot.press("up", "up", "up", "up", "up")
        await pilot.pause()
        assert pane.selected_key == "0"
        assert str(details.render()).startswith("#1 ")


async def test_resizing_switches_between_side_by_side_and_stacked() -> None:
    controller = RecordingController(benchmarking_state())
    app = _app(controller)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert not screen.has_class("-compact")
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.2)
        assert screen.has_class("-compact")
        assert screen.query_one("#journal").region.height > 0
        assert screen.query_one("#trials").region.height == 0
        await pilot.resize_terminal(140, 45)
        await pilot.pause(0.2)
        assert not screen.has_class("-compact")
        assert screen.query_one("#trials").region.height > 0


async def test_d_before_anything_runs_deploys_the_plans_first_configuration() -> None:
    from specconsole.commands.tui import demo_plan
    from specconsole.core.machine.state import ControllerState

    plan = demo_plan()
    controller = RecordingController(ControllerState(plan=plan))
    app = _app(controller)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmActionScreen)
        assert "steps=1" in str(app.screen.query_one("#ask-title", Static).render())
        await pilot.press("enter")
        await pilot.pause()
    [intent] = controller.intents
    assert isinstance(intent, DeployConfig)
    assert intent.config == plan.grid()[0]
    assert intent.config.speculative_num_steps == 1


async def test_footer_shows_exactly_the_keys_that_apply_and_banner_agrees() -> None:
    from specconsole.present.keyboard.footer import footer_hints
    from specconsole.present.keyboard.keys import BY_ID, available
    from specconsole.ui.widgets.keybar import KeyBar

    for state in (crashed_state(), loading_state(), dataclasses.replace(idle_state(), plan=plan())):
        controller = RecordingController(state)
        app = _app(controller)
        async with app.run_test(size=(160, 40)) as pilot:
            await pilot.pause(0.2)
            bar = app.screen.query_one(KeyBar)
            shown = {
                hint.id
                for hint in footer_hints(bar.keys_now.available, 160, banner=bar.keys_now.banner)
            }
            always = {"help", "quit", "follow", "search", "diff"}
            banner = app.screen.query_one("#crash-banner")
            listed = (
                set()
                if not banner.display
                else {"resume", "retry", "edit", "skip", "rollback", "crash-details"}
            )
            assert shown == (set(available(state)) - listed) | always, state.phase
            for command in available(state):  # every key that applies is enabled
                assert app.screen.check_action("command", (command,)), command
            view = banner.view  # type: ignore[attr-defined]
            if state.pending is not None:
                assert {k for k, _ in view.choices} == {
                    BY_ID[c].key
                    for c in available(state)
                    if c in ("resume", "retry", "edit", "skip", "rollback")
                }


async def test_a_chart_mounts_its_plot_with_its_first_data_only() -> None:
    """plotext (15 ms of a start) arrives with the first data: an empty chart is text."""
    controller = RecordingController(idle_state())
    app = _app(controller)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for chart in (ThroughputChart, SingleRequestChart):
            assert not app.screen.query_one(chart).query(ChartPlot)
        controller.publish(benchmarking_state())
        await pilot.pause()
        for chart in (ThroughputChart, SingleRequestChart):
            plots = app.screen.query_one(chart).query(ChartPlot)
            assert len(plots) == 1 and plots.first().display


async def test_the_trial_details_wrap_at_spaces_and_seams_never_mid_figure() -> None:
    """At 80×24 the details pane is ~21 cells: ``steps/topk/draft=4/1/5`` breaks after ``=``
    and every line fits, so the terminal never folds a figure (issue 42)."""
    from tests.ui.doubles import paused_state

    app = _app(RecordingController(paused_state()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("3")  # the trials pane (one pane at a time at 80×24)
        await pilot.pause()
        await pilot.pause()
        box = app.screen.query_one("#trial-details", Static)
        width = box.content_region.width
        lines = str(box.render()).splitlines()
        assert width > 0 and all(len(line) <= width for line in lines), (width, lines)
        assert "4/1/5" in lines and "steps/topk/draft=" in lines, lines
        assert ")" not in lines, lines


async def test_the_gpu_line_keeps_its_shape_with_the_last_reading_while_the_server_holds() -> None:
    """Issue 42 #8: the GPU row switched shape and vanished in PAUSED/DONE while the server
    still held its memory. Between trials it keeps the live form with the last reading's
    memory, marked as such with the box's time; it hides once no server holds the GPUs."""
    gpus = tuple(
        GpuSample(i, 44125.0 + 24 * i, 49152.0, 97.0, 288.0 + i, 66.0, "2026/07/20 12:03:41.5")
        for i in range(4)
    )
    live_state = dataclasses.replace(benchmarking_state(), gpus=gpus)
    for size in ((80, 24), (120, 40)):
        controller = RecordingController(live_state)
        app = _app(controller)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            line = app.screen.query_one(GpuLine)
            live = line.plain
            assert line.display and not line.last and "last reading" not in live, live
            busy = tuple(dataclasses.replace(s, utilization_pct=5.0, power_w=61.0) for s in gpus)
            controller.publish(dataclasses.replace(live_state, gpus=busy))
            await pilot.pause()
            shape = live.split("▏")[0]
            assert line.plain.split("▏")[0] == shape  # moving figures keep the form
            for phase in (Phase.PAUSED, Phase.DONE):
                between = dataclasses.replace(paused_state(), phase=phase, gpus=())
                controller.publish(between)
                await pilot.pause()
                text = line.plain
                assert line.display and line.last, (phase, text)
                assert text.split("▏")[0] == shape, (live, text)  # the same form
                assert "last reading 12:03:41" in text and "43.1" in text, text
                assert len(text) <= line.content_size.width
            assert paused_state().deployed is not None
            stopped = dataclasses.replace(
                paused_state(),
                gpus=(),
                deployed=dataclasses.replace(paused_state().deployed, serving=False),
            )
            controller.publish(stopped)
            await pilot.pause()
            assert not line.display  # nothing holds the GPUs: no reading is shown


async def test_at_80x24_the_charts_keep_rows_of_data_and_name_every_series() -> None:
    """Issue 42 #7: at 80×24 (the box panel above the ladder) the aggregate chart kept one
    row of data and named one of six series. The plot keeps three rows of data; the legend
    gives way first, to the trials' numbers, then to "+N more" beside those that fit."""
    trials = (
        *paused_state().trials,
        dataclasses.replace(paused_state().trials[-1], index=4, config=steps_config(5)),
        dataclasses.replace(paused_state().trials[-1], index=5, config=steps_config(6)),
    )
    state = dataclasses.replace(paused_state(), trials=trials, phase=Phase.DONE)
    app = _app(RecordingController(state))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await pilot.pause(0.3)
        chart = app.screen.query_one(ThroughputChart)
        plot = chart.query_one(ChartPlot)
        console = Console(width=plot.size.width, record=True, color_system=None)
        console.print(plot.render())
        lines = console.export_text().splitlines()
        top = next(i for i, line in enumerate(lines) if "┌" in line)
        bottom = next(i for i, line in enumerate(lines) if "└" in line)
        assert bottom - top - 1 >= 3, "\n".join(lines)  # rows of data
        legend = "\n".join(lines[bottom + 3 :])
        named = [f"#{n}" for n in range(1, 7) if f"#{n}" in legend]
        more = re.search(r"\+(\d+) more", legend)
        assert len(named) + (int(more.group(1)) if more else 0) == 6, legend
        assert len(named) >= 4, legend  # most series named, not one of six
