"""The main screen: header, crash banner, journal, benchmark panel, charts and trials.

It renders ``ControllerState`` snapshots (through ``ui.adapt``) and turns keys into intents,
posted to the app as messages (``ui.messages``): it never imports the app or calls the
controller. The keys that apply now come from ``present.keys.available`` (``check_action``),
so the footer lists exactly those; any other command key says why it does nothing. Layout adapts to
the terminal: from 100×30 up every pane is on screen (journal and benchmark side by side,
trials below); below that the panes are stacked and *switched* with ``1``/``2``/``3`` so
nothing is cut off at 80×24.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal, Vertical
from textual.events import Resize
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer

from specconsole.core.machine.events import (
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
from specconsole.present.diffs import deploy_target
from specconsole.present.fleet import focused_box, lane_views, next_box
from specconsole.present.keys import COMMANDS, available
from specconsole.present.labels import config_summary, notice_text
from specconsole.ui import adapt
from specconsole.ui.messages import (
    OpenCrashDetails,
    OpenDiff,
    OpenEditor,
    OpenHelp,
    RequestQuit,
    SendIntent,
)
from specconsole.ui.viewmodels import LineClassifier
from specconsole.ui.widgets.bench import BenchPanel
from specconsole.ui.widgets.box import BoxPanel
from specconsole.ui.widgets.chart import SingleRequestChart, ThroughputChart
from specconsole.ui.widgets.crash import CrashBanner
from specconsole.ui.widgets.fleet import FleetLanes
from specconsole.ui.widgets.header import StatusHeader
from specconsole.ui.widgets.journal import JournalPane
from specconsole.ui.widgets.trials import TrialsPane

COMPACT_WIDTH = 100
COMPACT_HEIGHT = 30
"""Below either, panes switch instead of sharing the screen."""

NOTIFY_LEVELS: dict[str, SeverityLevel] = {"warning": "warning", "error": "error"}
"""Controller notice levels shown as notifications, and how."""

PANES: tuple[str, ...] = ("journal", "side", "trials")
"""Pane ids in switch order (keys 1, 2, 3)."""


TOOLTIPS: dict[str, str] = {
    "deploy": "deploy the configuration shown in the header as the next trial",
    "bench": "benchmark what is deployed now (no deploy, no restart)",
    "sweep": "start the plan's sweep",
    "pause": "pause the sweep after this trial",
    "unpause": "withdraw the pause: the sweep goes on after this trial",
    "continue": "continue the paused sweep with the next planned trial",
    "edit": "edit the launch parameters; apply deploys them as the next trial",
    "resume": "after a crash or pause: continue with the next planned trial",
    "retry": "after a crash: deploy the same configuration again",
    "skip": "after a crash: skip the next planned configuration",
    "rollback": "after a crash: redeploy the last configuration that loaded",
    "crash-details": "the whole crash report: cause, log excerpt, suggested fixes",
    "cancel": "abandon the running trial (the server is left as it is)",
}
"""What each state-dependent command does (``present.keys.COMMANDS`` names them)."""


def _command_bindings() -> list[BindingType]:
    """One binding per command (shown only while it is available: ``check_action``), then
    one fallback per key that says why the key does nothing now, so no key press is lost
    silently."""
    out: list[BindingType] = [
        Binding(c.key, f"command('{c.id}')", c.label, id=c.id, tooltip=TOOLTIPS[c.id])
        for c in COMMANDS
    ]
    keys = dict.fromkeys(c.key for c in COMMANDS)
    out += [Binding(k, f"unavailable('{k}')", "", show=False) for k in keys]
    return out


class MainScreen(Screen[None]):
    """The console's one working screen."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *_command_bindings(),
        Binding(
            "f",
            "follow",
            "follow",
            id="follow",
            tooltip="follow the log / pause it where you are reading",
        ),
        Binding(
            "slash",
            "search",
            "search",
            id="search",
            tooltip="show only log lines containing a word (esc clears)",
        ),
        Binding(
            "n",
            "next_box",
            "next box",
            id="next-box",
            tooltip="pool: show the next box (its journal, header and keys)",
        ),
        Binding(
            "v",
            "diff",
            "diff",
            id="diff",
            tooltip="what each deploy changed on the box: the unit/command diff of the deploy "
            "in progress and of each trial (the one selected in the trials table)",
        ),
        Binding("question_mark", "help", "help", id="help", tooltip="this help"),
        Binding(
            "q",
            "quit_console",
            "quit",
            id="quit",
            tooltip="leave; asks while a trial runs; the server keeps running",
        ),
        Binding(
            "1",
            "pane('journal')",
            "journal",
            show=False,
            id="pane-journal",
            tooltip="show/focus the journal pane",
        ),
        Binding(
            "2",
            "pane('side')",
            "bench+chart",
            show=False,
            id="pane-side",
            tooltip="show/focus the benchmark panel and charts",
        ),
        Binding(
            "3",
            "pane('trials')",
            "trials",
            show=False,
            id="pane-trials",
            tooltip="show/focus the trials table",
        ),
    ]

    current_pane: reactive[str] = reactive("journal")
    """The pane shown in compact layout (and focused in the wide one)."""

    compact: reactive[bool] = reactive(False)

    def __init__(self, classify: LineClassifier) -> None:
        super().__init__(id="main")
        self._classify = classify
        self._state = ControllerState()
        self._trial_index: int | None = None
        self._rendered = False

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="status")
        yield FleetLanes(id="fleet")
        yield CrashBanner(id="crash-banner")
        with Container(id="body"):
            yield JournalPane(self._classify, id="journal", classes="pane")
            with Vertical(id="side", classes="pane") as side:
                side.border_title = "Benchmark"
                yield BoxPanel(id="box-panel")
                yield BenchPanel(id="bench")
                with Horizontal(id="charts"):
                    yield ThroughputChart(id="chart-aggregate")
                    yield SingleRequestChart(id="chart-single")
            yield TrialsPane(id="trials", classes="pane")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#crash-banner", CrashBanner).display = False
        self._apply_size(self.app.size.width, self.app.size.height)
        self._show_pane(self.current_pane)
        self.query_one("#journal-log").focus()

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
        self._rendered = True
        previous, self._state = self._state, state
        if available(state) != available(previous) or len(state.fleet) != len(previous.fleet):
            self.refresh_bindings()  # the footer shows exactly the keys that apply now
        if focused_box(state) != focused_box(previous):
            self.journal.reset()  # the pane now follows another box: its lines follow
            self._trial_index = None if state.trial is None else state.trial.index
        notice = state.notice
        # Warnings and errors pop up; routine news ("trial 4: ...") is already on screen.
        if notice is not None and notice != previous.notice and notice.level in NOTIFY_LEVELS:
            base = state.plan.base if state.plan is not None else None
            self.notify(notice_text(notice, base), severity=NOTIFY_LEVELS[notice.level], timeout=8)
        self._mark_trial_start(state)
        with self.app.batch_update():
            self.refresh_header(now)
            banner = adapt.crash_view(state)
            self.query_one(CrashBanner).show(banner)
            self.set_class(banner is not None, "-banner")
            box = self.query_one(BoxPanel)
            box.show(box_panel(state))
            box.display = box_shown(state)
            self.query_one(BenchPanel).show(adapt.bench_view(state))
            chart = adapt.chart_view(state)
            self.query_one(ThroughputChart).show(chart)
            self.query_one(SingleRequestChart).show(chart)
            trials = self.query_one(TrialsPane)
            trials.show_rows(adapt.trial_rows(state))
            trials.show_details(adapt.trial_details(state, trials.selected_key))

    def refresh_header(self, now: float) -> None:
        self.query_one(StatusHeader).show(adapt.header_view(self._state, now))
        self.query_one(FleetLanes).lanes = lane_views(self._state, now)

    def _mark_trial_start(self, state: ControllerState) -> None:
        """Put a separator in the journal when a new trial begins (its log follows)."""
        trial = state.trial
        if trial is None or trial.index == self._trial_index:
            return
        self._trial_index = trial.index
        total = state.trial_total
        label = f"trial {trial.index + 1}" + (f"/{total}" if total else "")
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

    def watch_current_pane(self, pane: str) -> None:
        self._show_pane(pane)

    def _show_pane(self, pane: str) -> None:
        for name in PANES:
            self.query_one(f"#{name}").set_class(name == pane, "-current")

    def action_pane(self, pane: str) -> None:
        self.current_pane = pane
        target = {"journal": "#journal-log", "side": "#bench", "trials": "#trials-table"}[pane]
        widget = self.query_one(target)
        if widget.focusable:
            widget.focus()

    # ----------------------------------------------------------------------------------------
    # Intents
    # ----------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """State-dependent commands are enabled (and in the footer) only while available."""
        if action == "command":
            return parameters[0] in available(self._state)
        if action == "next_box":
            return next_box(self._state) is not None  # a pool of more than one box
        return True

    def action_command(self, command: str) -> None:
        handler = getattr(self, f"_do_{command.replace('-', '_')}")
        handler()

    def action_unavailable(self, key: str) -> None:
        """A state-dependent key pressed when none of its commands applies: say so."""
        names = " / ".join(c.label for c in COMMANDS if c.key == key)
        phase = self._state.phase.value.replace("_", " ")
        self.notify(f"{key} ({names}) does not apply now ({phase}).", severity="information")

    def _send(self, intent: Intent) -> None:
        self.post_message(SendIntent(intent))

    def _do_deploy(self) -> None:
        config = deploy_target(self._state)
        if config is not None:
            self._send(DeployConfig(config=config))

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
        self._decide(ResumeChoice.SKIP)

    def _do_rollback(self) -> None:
        self._decide(ResumeChoice.ROLLBACK)

    def _do_cancel(self) -> None:
        self._send(Cancel())

    def _do_edit(self) -> None:
        self.post_message(OpenEditor())

    def _do_crash_details(self) -> None:
        view = adapt.crash_view(self._state)
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
