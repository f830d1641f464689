"""The Textual application: wiring between the controller bridge, the screens and the themes.

``make_app`` is the one factory the CLI (``specconsole tui``/``demo``), the tests, the
snapshot fixtures and the benchmarks all use, so what is tested is what users run. The app
owns exactly three things: the bridge (controller → messages), the current theme, and the
translation of UI decisions into intents (``send_intent``). Everything a pane shows is
computed by ``ui.adapt`` from the latest ``ControllerState``.

With a box (``BoxOps``) the app also guards the box: the session's first deploy is shown as
a diff and confirmed before its intent is sent (``ui.deploy_gate``), and quitting after a
finished sweep carries out ``[sweep] finally`` before leaving (``ui.leaving``). Keys that
throw something away ask once, naming their target, and an edit applied while a trial runs
is queued rather than lost (``ui.asking``). Every ``notify`` goes to the main screen's
message line instead of a toast: it never covers the journal or a dialog.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.widget import AwaitMount
from textual.worker import Worker, WorkerState

from specconsole.core.machine.intents import Intent, Quit, Resume
from specconsole.core.machine.state import CapacityPrediction, ControllerState, ResumeChoice
from specconsole.paths import themes_dir
from specconsole.present.keyboard.keys import CHOICE_COMMANDS
from specconsole.present.leaving import finally_due, server_down_message
from specconsole.startup import release_collection
from specconsole.ui.asking import EditQueue, ask, deploys
from specconsole.ui.bridge import BoxOps, ControllerBridge, ControllerHandle
from specconsole.ui.controller_worker import STOP_SERVER_TIMEOUT_S, ControllerWorker
from specconsole.ui.deploy_gate import DeployGate, open_diff_pane
from specconsole.ui.leaving import Leaving
from specconsole.ui.messages import (
    IntentSent,
    LogBatch,
    OpenCrashDetails,
    OpenDiff,
    OpenHelp,
    RequestAction,
    RequestQuit,
    Say,
    SendIntent,
    StateChanged,
    StateView,
)
from specconsole.ui.screens.crash import CrashScreen
from specconsole.ui.screens.help import HelpScreen
from specconsole.ui.screens.main import MainScreen
from specconsole.ui.screens.quit import LeavingScreen, QuitChoice, QuitScreen
from specconsole.ui.theme import choose_theme
from specconsole.ui.themed import ThemedApp

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig
    from specconsole.ui.form import Validator
    from specconsole.ui.viewmodels import CrashView, LineClassifier

Clock = Callable[[], float]
"""Wall-clock seconds, like ``time.time``; tests pass a fixed one."""


class SpecConsoleApp(ThemedApp):
    """specconsole's console."""

    CSS_PATH: ClassVar[list[str]] = [str(themes_dir() / "specconsole.tcss")]  # type: ignore[misc]
    ENABLE_COMMAND_PALETTE: ClassVar[bool] = False
    TITLE = "specconsole"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "quit_now", "quit", show=False, priority=True),
    ]

    def __init__(
        self,
        controller: ControllerHandle,
        *,
        theme: str = "dark",
        clock: Clock = time.time,
        classify: LineClassifier | None = None,
        validate: Validator | None = None,
        predict: Callable[[ServerConfig, ControllerState], CapacityPrediction | None] | None = None,
        run_controller: Callable[[], Awaitable[object]] | None = None,
        tick_interval: float | None = 1.0,
        box: BoxOps | None = None,
        confirm_first_deploy: bool = True,
        initial_intents: Sequence[Intent] = (),
    ) -> None:
        # NO_COLOR: the terminal's own colours (Textual's NoColor filter), not a black
        # screen painted by the mono palette through its Monochrome filter.
        super().__init__(theme, ansi_color=True if "NO_COLOR" in os.environ else None)
        self._controller = controller
        self._clock = clock
        self._classify = classify
        self._validate = validate
        self._predict = predict
        self._controller_run = ControllerWorker(self, run_controller)
        self._tick_interval = tick_interval
        self._bridge = ControllerBridge(controller, self.post_message)
        self._state = controller.state
        self.sent_intents: list[Intent] = []
        """Every intent this app sent, oldest first (observable in tests)."""
        self._box = box
        self._gate = DeployGate(self, box, self._send_now, confirm=confirm_first_deploy)
        self._initial_intents = tuple(initial_intents)
        self._leaving: Leaving | None = None
        self.final_message = ""
        """What the box was left in, for the launcher to print once the console has closed."""
        self.final_failed = False
        """``finally`` changed the box and it does not serve (the exit code says so)."""
        self.interrupted = False
        """The console was left by ``ctrl+c`` (an interrupt, exit code 130), not by ``q``."""
        self.messages: list[str] = []
        """Every message shown on the message line, oldest first (observable in tests)."""
        self._queue = EditQueue(self.send_intent, self._say)

    # ----------------------------------------------------------------------------------------
    # Lifecycle
    # ----------------------------------------------------------------------------------------

    def on_mount(self) -> None:
        self.set_class(self.theme_key == "mono", "-mono")
        self.push_screen(MainScreen(self._classify))
        self.call_after_refresh(release_collection)  # the first frame is up: collect again
        self._bridge.start()
        # After the first frame: the controller's first steps (reaching the box, its HTTP
        # client) must not hold the console's first paint back. Intents sent before it runs
        # wait in its queue. (Nothing starts when the controller runs elsewhere.)
        self.call_after_refresh(self._controller_run.start)
        if self._tick_interval:
            self.set_interval(self._tick_interval, self._tick)
        for intent in self._initial_intents:  # e.g. --start: through the first-deploy gate
            self.send_intent(intent)

    async def on_unmount(self) -> None:
        await self._bridge.stop()
        await self._controller_run.torn_down()  # Textual cancelled it but does not wait

    def _tick(self) -> None:
        screen = self._main_screen
        if screen is not None:
            screen.refresh_header(self._clock())

    @property
    def _main_screen(self) -> MainScreen | None:
        """The main screen; None once the console is closing (Textual is removing its panes
        while the bridge's last batch and the controller's teardown still arrive). Closing
        starts with ``exit()`` or, when the app is torn down without it (a test's
        ``run_test`` ending), with Textual's shutdown marking the app not running before it
        prunes the screens pane by pane."""
        if self._exit or not self.is_running:
            return None
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                return screen if screen.is_attached else None
        return None

    @property
    def state(self) -> ControllerState:
        """The latest snapshot the UI has rendered."""
        return self._state

    @property
    def bridge(self) -> ControllerBridge:
        return self._bridge

    # ----------------------------------------------------------------------------------------
    # Controller → UI
    # ----------------------------------------------------------------------------------------

    @on(StateChanged)
    def _state_changed(self, message: StateChanged) -> None:
        state = self._state = message.state
        now = self._clock()
        for screen in self.screen_stack:  # the main screen, and a dialog that shows state
            if not screen.is_attached:  # the console is closing
                continue
            if isinstance(screen, StateView):  # the editor too: ctrl+s deploys or queues
                screen.render_state(state, now)
        self._queue.offer(state)
        main = self._main_screen
        if main is not None:
            main.show_queued(self._queue.sentence)

    # ----------------------------------------------------------------------------------------
    # The message line (instead of toasts)
    # ----------------------------------------------------------------------------------------

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification goes to the main screen's message line: one line, never over
        the journal's last lines or a dialog (thread-safe, as ``App.notify`` is)."""
        text = f"{title}: {message}" if title else message
        self.post_message(Say(text, severity))

    @on(Say)
    def _say_requested(self, message: Say) -> None:
        self._say(message.text, message.severity)

    def _say(self, text: str, severity: str = "information") -> None:
        self.messages.append(text)
        main = self._main_screen
        if main is not None:
            main.show_message(text, severity)

    @on(LogBatch)
    def _log_batch(self, message: LogBatch) -> None:
        screen = self._main_screen
        if screen is None:
            return
        lines: Sequence[str] = message.lines
        if message.dropped:
            lines = [f"… {message.dropped:,} lines skipped (the UI fell behind) …", *lines]
        screen.journal.append(lines)

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.name == "controller" and event.state is WorkerState.ERROR:
            error = event.worker.error
            self.notify(
                f"The controller stopped: {error!r}. The server was left as it is.",
                severity="error",
                timeout=30,
            )

    # ----------------------------------------------------------------------------------------
    # UI → controller
    # ----------------------------------------------------------------------------------------

    @on(SendIntent)
    def _send_requested(self, message: SendIntent) -> None:
        self.send_intent(message.intent)

    @on(RequestAction)
    def _action_requested(self, message: RequestAction) -> None:
        self.request_action(message.command, message.intent, message.selected)

    def request_action(self, command: str, intent: Intent, selected: int | None = None) -> None:
        """A key that changes the box: asked first when the key table says so."""
        gate_asks = not self._gate.open and deploys(self._state, intent)
        ask(
            self,
            lambda: self._state,
            command,
            intent,
            self.send_intent,
            self._say,
            selected=selected,
            gate_asks=gate_asks,
        )

    @on(OpenCrashDetails)
    def _crash_details_requested(self, message: OpenCrashDetails) -> None:
        self.open_crash_details(message.view)

    @on(OpenHelp)
    def _help_requested(self) -> None:
        self.open_help()

    @on(OpenDiff)
    def _diff_requested(self, message: OpenDiff) -> None:
        """The diff pane; before the session's first deploy it leads with the preview of
        the next one, rendered on the box (``ui.deploy_gate.open_diff_pane``)."""
        self.run_worker(
            open_diff_pane(self, self._box, self._state, message.selected, self._clock()),
            group="diff-preview",
            exclusive=True,
            exit_on_error=False,
        )

    @on(RequestQuit)
    def _quit_requested(self) -> None:
        self.request_quit()

    @on(LeavingScreen.ForceQuit)
    def _force_quit(self) -> None:
        if self._leaving is not None:
            self._leaving.force()

    def send_intent(self, intent: Intent) -> None:
        """Stamp ``intent`` with the clock, hand it to the controller and announce it; the
        session's first deploy is confirmed first (``DeployGate``)."""
        if not intent.at:
            intent = dataclasses.replace(intent, at=self._clock())
        self._gate.submit(self._state, intent)

    def _send_now(self, intent: Intent) -> None:
        self._controller.send(self._stamp(intent))

    def _stamp(self, intent: Intent) -> Intent:
        if not intent.at:
            intent = dataclasses.replace(intent, at=self._clock())
        self.sent_intents.append(intent)
        self.post_message(IntentSent(intent))
        return intent

    def predict_capacity(self, config: ServerConfig) -> CapacityPrediction | None:
        predict = self._predict or _core_checks().predict_capacity
        return predict(config, self._state)

    def suggest_next(self) -> tuple[ServerConfig | None, str] | None:
        """The plan's next configuration (else the optimiser's) and its reason; ``(None,
        why)`` while it is not known yet."""
        checks = _core_checks()
        try:
            proposal = checks.suggest_next(self._state)
        except checks.NotKnownYet as exc:
            return None, str(exc)
        return None if proposal is None else (proposal.config, proposal.reason)

    async def action_open_editor(self) -> None:
        """``e`` on the main screen, run when the key arrives (a priority binding): the keys
        behind it in the app's queue wait until the editor is mounted with its first field
        focused, so every key typed after ``e`` edits the form, in order (issue 42)."""
        mounted = self.open_editor()
        if mounted is not None:
            await mounted

    def open_editor(self) -> AwaitMount | None:
        """Push the parameter editor (``ui.editing``): on the queued edit, else on the
        configuration being tried or deployed. Returns what awaits its mounting (None: no
        configuration to edit)."""
        from specconsole.ui.editing import apply_edit, make_editor  # with its first opening

        editor = make_editor(
            lambda: self._state,
            self._queue,
            validate=self._validate or _core_checks().validate_config,
            predict=self.predict_capacity,
            suggest=self.suggest_next,
            withdraw=self._withdraw_queued,
        )
        if editor is None:
            self.notify("No configuration to edit: open a plan or profile.", severity="warning")
            return None

        def applied(config: ServerConfig | None) -> None:
            if config is None:
                return
            apply_edit(self._state, config, self._queue, self.send_intent)
            main = self._main_screen
            if main is not None:
                main.show_queued(self._queue.sentence)

        return self.push_screen(editor, applied)

    def _withdraw_queued(self) -> None:
        self._queue.withdraw()
        main = self._main_screen
        if main is not None:
            main.show_queued("")

    def open_crash_details(self, view: CrashView) -> None:
        def chosen(choice: ResumeChoice | None) -> None:
            if choice is None:
                return
            if choice is ResumeChoice.EDIT_THEN_DEPLOY:
                self.open_editor()
            else:
                self.request_action(CHOICE_COMMANDS[choice], Resume(choice=choice))

        self.push_screen(CrashScreen(view), chosen)

    def open_help(self) -> None:
        self.push_screen(HelpScreen(pool=len(self._state.lanes) > 1))

    def request_quit(self) -> None:
        """Quit; asks first while a trial runs. The server is stopped only if chosen. After a
        finished sweep ``[sweep] finally`` is carried out first; after a crash the message
        says the server is down and how to roll back."""
        if self._leaving is not None:
            self._leaving.force()
            return
        state = self._state
        if not state.busy and self._box is not None and finally_due(state):
            self._leaving = Leaving(self, self._box, self._left)
            self._leaving.start()
            return
        if not state.busy:
            if self._box is not None:
                self.final_message = server_down_message(state, self._box.rollback_command) or ""
            self._quit(stop_server=False)
            return

        def chosen(choice: QuitChoice | None) -> None:
            if choice is QuitChoice.LEAVE_RUNNING:
                self._quit(stop_server=False)
            elif choice is QuitChoice.STOP_SERVER:
                self._quit(stop_server=True)

        self.push_screen(QuitScreen(self._state, self._clock()), chosen)

    def _quit(self, *, stop_server: bool) -> None:
        self.send_intent(Quit(stop_server=stop_server))
        if not stop_server or not self._controller_run.running:
            if stop_server:
                self.final_message = "Asked the controller to stop the server on the box."
            self.exit()
            return
        # Stopping the server is the controller's job: let it finish before leaving.
        self.notify("Stopping the server…", timeout=STOP_SERVER_TIMEOUT_S)

        async def wait_then_exit() -> None:
            self.final_message = await self._controller_run.server_stopped()
            self.exit()

        self.run_worker(wait_then_exit(), group="quit", exit_on_error=False)

    def _left(self, message: str, failed: bool) -> None:
        """``finally`` is done (or given up): leave with its outcome."""
        self.final_message, self.final_failed = message, failed
        self._quit(stop_server=False)

    def action_quit_now(self) -> None:
        """ctrl+c: leave at once (an interrupt); the server is left as it is."""
        self.interrupted = True
        if self._leaving is not None:
            self._leaving.force()
            return
        self._quit(stop_server=False)


def make_app(
    controller: ControllerHandle,
    *,
    theme: str | None = None,
    clock: Clock = time.time,
    validate: Validator | None = None,
    predict: Callable[[ServerConfig, ControllerState], CapacityPrediction | None] | None = None,
    run_controller: Callable[[], Awaitable[object]] | None = None,
    tick_interval: float | None = 1.0,
    box: BoxOps | None = None,
    confirm_first_deploy: bool = True,
    initial_intents: Sequence[Intent] = (),
) -> SpecConsoleApp:
    """Build the console for ``controller``.

    Args:
        controller: anything satisfying ``ControllerHandle`` (the runtime, or a test double).
        theme: ``dark``, ``light`` or ``mono``; None picks by ``NO_COLOR`` (mono) or dark.
        clock: wall-clock source for elapsed times (fixed in snapshot tests).
        validate: the engine's validation rules for the editor (default: the core's).
        predict: KV-capacity predictor for the editor (default: the core's).
        run_controller: coroutine function run as the app's controller worker, if the
            controller is not already running elsewhere.
        tick_interval: header refresh period in seconds (None: only on state changes).
        box: the box's own operations (first-deploy diff, ``finally`` on quit); None leaves
            both out (test doubles, the pool).
        confirm_first_deploy: with a box, show the session's first deploy as a diff and ask
            before sending it (off only for the demo's simulated box on this machine).
        initial_intents: sent once the console runs (``--start``), through the same gate.
    """
    return SpecConsoleApp(
        controller,
        theme=choose_theme(theme),
        clock=clock,
        validate=validate,
        predict=predict,
        run_controller=run_controller,
        tick_interval=tick_interval,
        box=box,
        confirm_first_deploy=confirm_first_deploy,
        initial_intents=initial_intents,
    )


def _core_checks() -> ModuleType:
    """The core's validation rules, KV-capacity predictor and next suggestion for the editor
    (``ui.editor_checks``), loaded when the editor first asks: they bring the engine's rules
    and the search, which the console's first frame does not use."""
    from specconsole.ui import editor_checks

    return editor_checks
