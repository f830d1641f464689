"""The main screen: header, crash banner, journal, benchmark panel, charts and trials.

It renders ``ControllerState`` snapshots (through ``ui.adapt``) and turns keys into intents
(through the app's ``send_intent``); it never calls the controller itself. Layout adapts to
the terminal: from 100×30 up every pane is on screen (journal and benchmark side by side,
trials below); below that the panes are stacked and *switched* with ``1``/``2``/``3`` so
nothing is cut off at 80×24.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal, Vertical
from textual.events import Resize
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer

from specconsole.core.events import (
    BenchmarkOnly,
    Cancel,
    DeployConfig,
    Pause,
    Resume,
    StartSweep,
)
from specconsole.core.state import ControllerState, Phase, ResumeChoice
from specconsole.ui import adapt
from specconsole.ui.viewmodels import LineClassifier
from specconsole.ui.widgets.bench import BenchPanel
from specconsole.ui.widgets.chart import SingleRequestChart, ThroughputChart
from specconsole.ui.widgets.crash import CrashBanner
from specconsole.ui.widgets.header import StatusHeader
from specconsole.ui.widgets.journal import JournalPane
from specconsole.ui.widgets.trials import TrialsPane

if TYPE_CHECKING:
    from specconsole.ui.app import SpecConsoleApp

COMPACT_WIDTH = 100
COMPACT_HEIGHT = 30
"""Below either, panes switch instead of sharing the screen."""

NOTIFY_LEVELS: dict[str, SeverityLevel] = {"warning": "warning", "error": "error"}
"""Controller notice levels shown as notifications, and how."""

PANES: tuple[str, ...] = ("journal", "side", "trials")
"""Pane ids in switch order (keys 1, 2, 3)."""


class MainScreen(Screen[None]):
    """The console's one working screen."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "d",
            "deploy",
            "deploy",
            id="deploy",
            tooltip="deploy the configuration shown in the header as the next trial",
        ),
        Binding(
            "b",
            "bench",
            "bench",
            id="bench",
            tooltip="benchmark what is deployed now (no deploy, no restart)",
        ),
        Binding(
            "s",
            "sweep",
            "sweep",
            id="sweep",
            tooltip="start the plan's sweep; while it runs, pause it after this trial",
        ),
        Binding(
            "e",
            "edit",
            "edit",
            id="edit",
            tooltip="edit the launch parameters; apply deploys them as the next trial",
        ),
        Binding(
            "r",
            "resume",
            "resume",
            id="resume",
            tooltip="after a crash or pause: continue with the next planned trial",
        ),
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
        Binding("question_mark", "help", "help", id="help", tooltip="this help"),
        Binding(
            "q",
            "quit_console",
            "quit",
            id="quit",
            tooltip="leave; asks while a trial runs; the server keeps running",
        ),
        Binding(
            "t",
            "decide('retry_same')",
            "retry",
            show=False,
            id="retry",
            tooltip="after a crash: deploy the same configuration again",
        ),
        Binding(
            "k",
            "decide('skip')",
            "skip",
            show=False,
            id="skip",
            tooltip="after a crash: skip the next planned configuration",
        ),
        Binding(
            "o",
            "decide('rollback')",
            "roll back",
            show=False,
            id="rollback",
            tooltip="after a crash: redeploy the last configuration that loaded",
        ),
        Binding(
            "c",
            "crash_details",
            "crash details",
            show=False,
            id="crash-details",
            tooltip="the whole crash report: cause, log excerpt, suggested fixes",
        ),
        Binding(
            "x",
            "cancel_trial",
            "cancel trial",
            show=False,
            id="cancel",
            tooltip="abandon the running trial (the server is left as it is)",
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

    @property
    def console_app(self) -> SpecConsoleApp:
        from specconsole.ui.app import SpecConsoleApp

        app = self.app
        assert isinstance(app, SpecConsoleApp)
        return app

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="status")
        yield CrashBanner(id="crash-banner")
        with Container(id="body"):
            yield JournalPane(self._classify, id="journal", classes="pane")
            with Vertical(id="side", classes="pane") as side:
                side.border_title = "Benchmark"
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
        notice = state.notice
        # Warnings and errors pop up; routine news ("trial 4: ...") is already on screen.
        if notice is not None and notice != previous.notice and notice.level in NOTIFY_LEVELS:
            self.notify(notice.text, severity=NOTIFY_LEVELS[notice.level], timeout=8)
        self._mark_trial_start(state)
        with self.app.batch_update():
            self.refresh_header(now)
            self.query_one(CrashBanner).show(adapt.crash_view(state))
            self.query_one(BenchPanel).show(adapt.bench_view(state))
            chart = adapt.chart_view(state)
            self.query_one(ThroughputChart).show(chart)
            self.query_one(SingleRequestChart).show(chart)
            trials = self.query_one(TrialsPane)
            trials.show_rows(adapt.trial_rows(state))
            trials.show_details(adapt.trial_details(state, trials.selected_key))

    def refresh_header(self, now: float) -> None:
        self.query_one(StatusHeader).show(adapt.header_view(self._state, now))

    def _mark_trial_start(self, state: ControllerState) -> None:
        """Put a separator in the journal when a new trial begins (its log follows)."""
        trial = state.trial
        if trial is None or trial.index == self._trial_index:
            return
        self._trial_index = trial.index
        total = state.trial_total
        label = f"trial {trial.index + 1}" + (f"/{total}" if total else "")
        self.journal.append([f"──── {label}: {adapt.config_summary(trial.config)} ────"])

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

    def action_deploy(self) -> None:
        config = self._state.current_config
        if config is None and self._state.plan is not None:
            # Nothing tried or deployed yet: the plan's first configuration (its base alone
            # may leave the swept fields unset).
            grid = self._state.plan.grid()
            config = grid[0] if grid else self._state.plan.base
        if config is None:
            self.notify(
                "Nothing to deploy yet: press e to edit a configuration.", severity="warning"
            )
            return
        self.console_app.send_intent(DeployConfig(config=config))

    def action_bench(self) -> None:
        self.console_app.send_intent(BenchmarkOnly())

    def action_sweep(self) -> None:
        state = self._state
        if state.phase is Phase.PAUSED or (state.sweep_active and state.phase is Phase.CANCELLED):
            self.console_app.send_intent(Resume(choice=ResumeChoice.RESUME_NEXT))
        elif state.sweep_active and state.phase not in (Phase.DONE, Phase.IDLE):
            self.console_app.send_intent(Pause())
        else:
            self.console_app.send_intent(StartSweep())

    def action_resume(self) -> None:
        state = self._state
        if state.pending is not None or state.phase in (Phase.PAUSED, Phase.CANCELLED):
            self.console_app.send_intent(Resume(choice=ResumeChoice.RESUME_NEXT))
        else:
            self.notify("Nothing to resume: no crash or pause is waiting.", severity="information")

    def action_decide(self, choice: str) -> None:
        decision = ResumeChoice(choice)
        pending = self._state.pending
        if pending is None:
            self.notify("No crash is waiting for a decision.", severity="information")
            return
        if decision not in pending.choices:
            label = decision.value.replace("_", " ")
            self.notify(f"{label} is not possible now.", severity="warning")
            return
        self.console_app.send_intent(Resume(choice=decision))

    def action_cancel_trial(self) -> None:
        if not self._state.busy:
            self.notify("No trial is running.", severity="information")
            return
        self.console_app.send_intent(Cancel())

    def action_edit(self) -> None:
        self.console_app.open_editor()

    def action_crash_details(self) -> None:
        view = adapt.crash_view(self._state)
        if view is None:
            self.notify("No crash to show.", severity="information")
            return
        self.console_app.open_crash_details(view)

    def action_follow(self) -> None:
        self.journal.toggle_follow()
        if self.compact:
            self.current_pane = "journal"

    def action_search(self) -> None:
        if self.compact:
            self.current_pane = "journal"
        self.journal.open_search()

    def action_help(self) -> None:
        self.console_app.open_help()

    def action_quit_console(self) -> None:
        self.console_app.request_quit()
