"""The main screen: header, crash banner, journal, benchmark panel, charts and trials.

It renders ``ControllerState`` snapshots (through ``ui.adapt``) and turns keys into intents,
posted to the app as messages (``ui.messages``): it never imports the app or calls the
controller. Every binding comes from the key table (``present.keyboard.keymap``); the keys that
apply now come from ``present.keyboard.keys.available`` (``check_action``), so the footer
(``KeyBar``) lists exactly those, ``?`` and ``q`` first; any other command key says why it does
nothing. Keys that change the box go to the app as ``RequestAction`` (it asks first when the
key table says so). ``e`` acts when the key *arrives* (a priority binding, which a text box
such as the journal's search keeps out: there ``e`` is text) and opens the editor through the
app's ``open_editor`` action, which holds the keys behind it until the form has focus:
Textual resolves ordinary bindings only after the key has bubbled back to the app, by when the
rest of a burst (``e tab ctrl+a ctrl+k 2 …``) had gone to this screen and was lost (issue 42).
Notices the screen does not already show go to the message line above the footer, never over
a pane (``present.notices``). Layout adapts to the terminal: from 100×30 up every pane is on
screen (journal and benchmark side by side, trials below); below that the panes are stacked
and *switched* with ``1``/``2``/``3`` so nothing is cut off at 80×24.
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal, Vertical
from textual.events import Resize
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Input

from specconsole.core.machine.intents import (
    BenchmarkOnly,
    Cancel,
    DeployConfig,
    FocusBox,
    Intent,
    Pause,
    Resume,
    StartSweep,
)
from specconsole.core.machine.state import ControllerState, ResumeChoice
from specconsole.present.box import box_panel, box_shown
from specconsole.present.deploys.diffs import deploy_target
from specconsole.present.keyboard.keymap import COMMANDS, PANE_KEYS, SCREEN_KEYS, Key
from specconsole.present.keyboard.keys import CHOICE_COMMANDS, available
from specconsole.present.labels import config_summary
from specconsole.present.notices import message_for
from specconsole.present.pool import focused_box, lane_views, next_box
from specconsole.ui import adapt
from specconsole.ui.crashview import crash_view
from specconsole.ui.messages import (
    OpenCrashDetails,
    OpenDiff,
    OpenHelp,
    RequestAction,
    RequestQuit,
    Say,
    SendIntent,
)
from specconsole.ui.widgets.bench import BenchPanel
from specconsole.ui.widgets.box import BoxPanel
from specconsole.ui.widgets.chart import SingleRequestChart, ThroughputChart
from specconsole.ui.widgets.crash import COMPACT_ROWS, WIDE_ROWS, CrashBanner
from specconsole.ui.widgets.gpus import GpuLine
from specconsole.ui.widgets.header import StatusHeader
from specconsole.ui.widgets.journal import JournalPane
from specconsole.ui.widgets.keybar import KeyBar, KeyBarState
from specconsole.ui.widgets.message import MessageLine
from specconsole.ui.widgets.pool import PoolLanes
from specconsole.ui.widgets.trials import TrialsPane

if TYPE_CHECKING:
    from specconsole.ui.viewmodels import LineClassifier

COMPACT_WIDTH = 100
COMPACT_HEIGHT = 30
"""Below either, panes switch instead of sharing the screen."""

PANES: tuple[str, ...] = ("journal", "side", "trials")
"""Pane ids in switch order (keys 1, 2, 3)."""


SCREEN_ACTIONS: dict[str, str] = {
    "help": "help",
    "quit": "quit_console",
    "follow": "follow",
    "search": "search",
    "diff": "diff",
    "next-box": "next_box",
    "pane-journal": "pane('journal')",
    "pane-side": "pane('side')",
    "pane-trials": "pane('trials')",
    "focus-next": "app.focus_next",
}
"""The action of each always-available key of the key table."""

BANNER_COMMANDS: frozenset[str] = frozenset({*CHOICE_COMMANDS.values(), "crash-details"})
"""Commands the crash banner lists while it shows (the footer leaves them out)."""


ON_ARRIVAL: frozenset[str] = frozenset({"edit"})
"""Commands run when the key arrives, not after it has bubbled up: they open a screen the keys
typed behind them go to."""


def _binding(key: Key, action: str) -> Binding:
    return Binding(
        key.binding,
        action,
        key.label,
        show=False,
        id=key.id,
        tooltip=key.does,
        priority=key.id in ON_ARRIVAL,
    )


def _command_bindings() -> list[BindingType]:
    """One binding per command (enabled only while it applies: ``check_action``), then one
    fallback per key that says why the key does nothing now, so no key press is lost
    silently; then the keys that always work."""
    out: list[BindingType] = [_binding(c, f"command('{c.id}')") for c in COMMANDS]
    keys = dict.fromkeys(c.binding for c in COMMANDS)
    out += [Binding(k, f"unavailable('{k}')", "", show=False) for k in keys]
    out += [_binding(k, SCREEN_ACTIONS[k.id]) for k in (*SCREEN_KEYS, *PANE_KEYS)]
    return out


def server_holds_gpus(state: ControllerState) -> bool:
    """The server this console deployed still serves: its memory is held between trials."""
    return state.deployed is not None and state.deployed.serving


def gpus_only(previous: ControllerState, state: ControllerState) -> bool:
    """Whether ``state`` differs from ``previous`` only by a GPU sample (the live line and
    the trial's GPU figures): the GPU line is all there is to redraw."""
    if state.gpus == previous.gpus:
        return False
    trial = state.trial
    if trial is not None and previous.trial is not None and trial.gpu != previous.trial.gpu:
        trial = replace(trial, gpu=previous.trial.gpu)
    return replace(state, gpus=previous.gpus, trial=trial) == previous


class MainScreen(Screen[None]):
    """The console's one working screen."""

    BINDINGS: ClassVar[list[BindingType]] = _command_bindings()

    current_pane: reactive[str] = reactive("journal")
    """The pane shown in compact layout (and focused in the wide one)."""

    compact: reactive[bool] = reactive(False)

    def __init__(self, classify: LineClassifier | None = None) -> None:
        super().__init__(id="main")
        self._classify = classify
        self._state = ControllerState()
        self._trial_index: int | None = None
        self._now = 0.0
        """The clock at the header's last refresh (the journal's trial separator counts with it)."""
        self._rendered = False
        self._queued = ""
        """The edit queued for after the running trial, as the message line says it."""

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="status")
        yield PoolLanes(id="lanes")
        yield GpuLine(id="gpus")
        yield CrashBanner(id="crash-banner")
        with Container(id="body"):
            yield JournalPane(self._classify, id="journal", classes="pane")
            with Vertical(id="side", classes="pane") as side:
                side.border_title = "Benchmark"
                side.can_focus = True  # 2 focuses it visibly in the wide layout
                yield BoxPanel(id="box-panel")
                yield BenchPanel(id="bench")
                with Horizontal(id="charts"):
                    yield ThroughputChart(id="chart-aggregate")
                    yield SingleRequestChart(id="chart-single")
            yield TrialsPane(id="trials", classes="pane")
        yield MessageLine(id="message-line")
        yield KeyBar(id="keybar")

    def on_mount(self) -> None:
        self.query_one("#crash-banner", CrashBanner).display = False
        self._apply_size(self.app.size.width, self.app.size.height)
        self._show_pane(self.current_pane)
        self._layout_changed()
        self.query_one("#journal-log").focus()

    def on_screen_suspend(self) -> None:
        """A dialog opened over the console: its keys are the dialog's, so the footer's
        (``s pause`` under the quit dialog's ``s``) are hidden behind it, keeping their row."""
        self.query_one(KeyBar).add_class("-behind-dialog")

    def on_screen_resume(self) -> None:
        self.query_one(KeyBar).remove_class("-behind-dialog")

    # ----------------------------------------------------------------------------------------
    # Rendering
    # ----------------------------------------------------------------------------------------

    @property
    def state(self) -> ControllerState:
        return self._state

    def render_state(self, state: ControllerState, now: float) -> None:
        """Draw a new snapshot (the app calls this for every ``StateChanged``)."""
        if state is self._state and self._rendered:
            return  # a log flood republishes the same snapshot; nothing to redraw
        if self._rendered and gpus_only(self._state, state):
            self._state = state  # a GPU sample: its line, not every pane (2 a second)
            self.query_one(GpuLine).show(state.gpus, held=server_holds_gpus(state))
            return
        self._rendered = True
        previous, self._state = self._state, state
        if available(state) != available(previous) or len(state.lanes) != len(previous.lanes):
            self.refresh_bindings()  # the keys that apply now are exactly those enabled
        if focused_box(state) != focused_box(previous):
            self.journal.reset()  # the pane now follows another box: its lines follow
            self._trial_index = None if state.trial is None else state.trial.index
        self._mark_trial_start(state)
        with self.app.batch_update():
            self.refresh_header(now)
            self.query_one(GpuLine).show(state.gpus, held=server_holds_gpus(state))
            banner = crash_view(state)
            self.query_one(CrashBanner).show(banner)
            self.set_class(banner is not None, "-banner")
            if banner is not None and previous.pending is None and state.pending is not None:
                self.message_line.clear()  # the banner says it all now
            self._show_notice(state, previous, banner is not None)
            self._show_keys()
            box = self.query_one(BoxPanel)
            box.show(box_panel(state))
            box.display = box_shown(state)
            # once trials exist the charts need the side pane's rows more than the probe's
            # facts do: the panel keeps its first lines (the stylesheet's -has-trials)
            self.set_class(bool(state.trials), "-has-trials")
            self.query_one(BenchPanel).show(adapt.bench_view(state))
            chart = adapt.chart_view(state)
            self.query_one(ThroughputChart).show(chart)
            self.query_one(SingleRequestChart).show(chart)
            trials = self.query_one(TrialsPane)
            trials.show_rows(adapt.trial_rows(state))
            trials.show_details(adapt.trial_details(state, trials.selected_key))
            trials.show_levels(adapt.levels_view(state))

    def _show_notice(self, state: ControllerState, previous: ControllerState, banner: bool) -> None:
        """A new warning or error the screen does not already show goes to the message
        line (``present.notices``); routine news is in the header and the tables."""
        notice = state.notice
        if notice is None or notice == previous.notice:
            return
        base = state.plan.base if state.plan is not None else None
        text = message_for(notice, base, banner=banner)
        if text is not None:
            self.say(text, notice.level)

    def _show_keys(self) -> None:
        """The footer's input: what applies now, what the banner lists, the layout."""
        banner = self.query_one(CrashBanner).display
        self.query_one(KeyBar).keys_now = KeyBarState(
            available=available(self._state),
            banner=BANNER_COMMANDS if banner else frozenset(),
            pool=len(self._state.lanes) > 1,
            compact=self.compact,
        )

    @property
    def message_line(self) -> MessageLine:
        return self.query_one(MessageLine)

    def say(self, text: str, severity: str = "information") -> None:
        """Ask the app to show ``text`` on the message line (it records every message)."""
        self.post_message(Say(text, severity))

    def show_message(
        self, text: str, severity: str = "information", timeout: float | None = 10.0
    ) -> None:
        """Draw one line on the message line (the app routes every message here)."""
        self.message_line.say(text, severity, timeout)

    def show_queued(self, text: str) -> None:
        """Keep saying which edit is queued (empty: none is)."""
        if text == self._queued:
            return
        said, self._queued = self._queued, text
        if text:
            self.show_message(text, "information", timeout=None)
        elif said and self.message_line.text == " ".join(said.split()):
            self.message_line.clear()

    def refresh_header(self, now: float) -> None:
        self._now = now
        self.query_one(StatusHeader).show(adapt.header_view(self._state, now))
        self.query_one(PoolLanes).lanes = lane_views(self._state, now)

    def _mark_trial_start(self, state: ControllerState) -> None:
        """Put a separator in the journal when a new trial begins (its log follows)."""
        trial = state.trial
        if trial is None or trial.index == self._trial_index:
            return
        self._trial_index = trial.index
        now = max(self._now, state.phase_since)
        label = adapt.trial_forms(state, adapt.state_glance(state, now))[-1]
        self.journal.append([f"──── {label}: {config_summary(trial.effective)} ────"])

    @property
    def journal(self) -> JournalPane:
        return self.query_one(JournalPane)

    @on(TrialsPane.Selected)
    def _trial_selected(self, event: TrialsPane.Selected) -> None:
        self.query_one(TrialsPane).show_details(adapt.trial_details(self._state, event.key))

    # ----------------------------------------------------------------------------------------
    # Layout
    # ----------------------------------------------------------------------------------------

    def on_resize(self, event: Resize) -> None:
        self._apply_size(event.size.width, event.size.height)

    def _apply_size(self, width: int, height: int) -> None:
        self.compact = width < COMPACT_WIDTH or height < COMPACT_HEIGHT

    def watch_compact(self, compact: bool) -> None:
        self.set_class(compact, "-compact")
        if self.is_mounted:
            self._layout_changed()

    def _layout_changed(self) -> None:
        self.query_one(CrashBanner).rows = COMPACT_ROWS if self.compact else WIDE_ROWS
        self._show_keys()

    def watch_current_pane(self, pane: str) -> None:
        self._show_pane(pane)

    def _show_pane(self, pane: str) -> None:
        for name in PANES:
            self.query_one(f"#{name}").set_class(name == pane, "-current")

    def action_pane(self, pane: str) -> None:
        self.current_pane = pane
        target = {"journal": "#journal-log", "side": "#side", "trials": "#trials-table"}[pane]
        widget = self.query_one(target)
        if widget.focusable:
            widget.focus()

    # ----------------------------------------------------------------------------------------
    # Intents
    # ----------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """State-dependent commands are enabled (and in the footer) only while available."""
        if action == "command":
            if parameters[0] in ON_ARRIVAL and isinstance(self.focused, Input):
                return False  # a text box has the key first: there it is text
            return parameters[0] in available(self._state)
        if action == "next_box":
            return next_box(self._state) is not None  # a pool of more than one box
        return True

    async def action_command(self, command: str) -> None:
        done = getattr(self, f"_do_{command.replace('-', '_')}")()
        if inspect.isawaitable(done):
            await done  # an ON_ARRIVAL command: the keys behind it wait for it

    def action_unavailable(self, key: str) -> None:
        """A state-dependent key pressed when none of its commands applies: say so."""
        names = " / ".join(c.label for c in COMMANDS if c.binding == key)
        phase = self._state.phase.value.replace("_", " ")
        self.say(f"{key} ({names}) does not apply now ({phase}).")

    def _send(self, intent: Intent) -> None:
        self.message_line.clear()  # what it said is about before this decision
        self.post_message(SendIntent(intent))

    def _ask(self, command: str, intent: Intent) -> None:
        """A key that changes the box: the app names the target and asks first."""
        self.message_line.clear()
        trials = self.query_one(TrialsPane)
        key = trials.selected_key
        selected = int(key) if key is not None and key.isdigit() else None
        self.post_message(RequestAction(command, intent, selected))

    def _do_deploy(self) -> None:
        config = deploy_target(self._state)
        if config is not None:
            self._ask("deploy", DeployConfig(config=config))

    def _do_bench(self) -> None:
        self._send(BenchmarkOnly())

    def _do_sweep(self) -> None:
        self._send(StartSweep())

    def _do_pause(self) -> None:
        self._send(Pause())

    _do_unpause = _do_pause

    def _do_continue(self) -> None:
        self._send(Resume(choice=ResumeChoice.RESUME_NEXT))

    _do_resume = _do_continue

    def _decide(self, choice: ResumeChoice) -> None:
        self._send(Resume(choice=choice))

    def _do_retry(self) -> None:
        self._decide(ResumeChoice.RETRY_SAME)

    def _do_skip(self) -> None:
        self._ask("skip", Resume(choice=ResumeChoice.SKIP))

    def _do_rollback(self) -> None:
        self._ask("rollback", Resume(choice=ResumeChoice.ROLLBACK))

    def _do_cancel(self) -> None:
        self._ask("cancel", Cancel())

    async def _do_edit(self) -> None:
        await self.app.run_action("open_editor")  # the app's: it pushes the editor

    def _do_crash_details(self) -> None:
        view = crash_view(self._state)
        if view is not None:
            self.post_message(OpenCrashDetails(view))

    def action_follow(self) -> None:
        self.journal.toggle_follow()
        if self.compact:
            self.current_pane = "journal"

    def action_search(self) -> None:
        if self.compact:
            self.current_pane = "journal"
        self.journal.open_search()

    def action_next_box(self) -> None:
        """Show the next box of the pool: its journal, header and keys."""
        box = next_box(self._state)
        if box is not None:
            self._send(FocusBox(box=box))

    def action_diff(self) -> None:
        """Open the diff pane: at the selected trial when the trials table has the focus."""
        trials = self.query_one(TrialsPane)
        selected = trials.selected_key if trials.table.has_focus else None
        self.post_message(OpenDiff(selected))

    def action_help(self) -> None:
        self.post_message(OpenHelp())

    def action_quit_console(self) -> None:
        self.post_message(RequestQuit())
