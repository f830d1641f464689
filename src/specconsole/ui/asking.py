"""Keys that change the box ask first; edits the phase cannot take now wait in a queue.

Why: a single letter on a production box must say what it is about to do. ``ask`` shows the
confirmation ``present.keyboard.actions`` writes for a key the key table marks ``confirm`` (skip,
roll back, deploy, cancel a trial) and sends the intent only on yes — and only if the
target is still the one named (the controller may have moved on while the dialog was
open). A deploy that will meet the first-deploy gate is not asked twice: the gate shows its
whole diff instead.

``EditQueue`` keeps an edit applied while a trial runs: it says so in a plain sentence,
asks the sweep to pause after the trial (so there is a moment to deploy it), and hands the
deploy over as soon as the phase can take it. A crash in between leaves it queued: the crash
needs a decision first (``e`` opens the queued edit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.app import App

from specconsole.core.machine.intents import DeployConfig, Intent, Pause
from specconsole.core.machine.state import ControllerState, Phase
from specconsole.present.deploys.diffs import deploying_config
from specconsole.present.keyboard.actions import apply_block, confirmation, label, still_valid
from specconsole.present.keyboard.keymap import BY_ID
from specconsole.ui.screens.confirm import ConfirmActionScreen

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig

Say = Callable[[str, str], None]
"""Shows a sentence on the message line (text, severity)."""


def ask(
    app: App[None],
    state: Callable[[], ControllerState],
    command: str,
    intent: Intent,
    send: Callable[[Intent], None],
    say: Say,
    *,
    selected: int | None = None,
    gate_asks: bool = False,
) -> None:
    """Send ``intent`` for ``command``, after a confirmation when the key table asks for
    one (``gate_asks``: the first-deploy gate will show its diff instead)."""
    key = BY_ID.get(command)
    if key is None or not key.confirm or gate_asks:
        send(intent)
        return
    asked = confirmation(state(), command, selected=selected)
    if asked is None:
        say(f"{key.keys} ({key.label}): nothing to act on now.", "information")
        return

    def answered(yes: bool | None) -> None:
        if not yes:
            say(f"{key.label}: not done; nothing changed on the box.", "information")
            return
        changed = still_valid(state(), command, asked)
        if changed is not None:
            say(changed, "warning")
            return
        send(intent)

    app.push_screen(ConfirmActionScreen(asked.title, asked.lines, asked.yes), answered)


def deploys(state: ControllerState, intent: Intent) -> bool:
    """``intent`` would deploy something now (the first-deploy gate asks for those)."""
    return deploying_config(state, intent) is not None


_DEPLOYING = frozenset({Phase.VALIDATING, Phase.DEPLOYING, Phase.RESTARTING, Phase.LOADING})
"""The phases a deploy is under way in (until the server is ready or failed)."""


class EditQueue:
    """At most one edit waiting for the phase to allow a deploy."""

    def __init__(self, send: Callable[[Intent], None], say: Say) -> None:
        self._send = send
        self._say = say
        self.config: ServerConfig | None = None
        """The queued configuration (None: nothing queued)."""
        self.sentence = ""
        """What the message line keeps saying while it waits, and while its deploy is under
        way ("" when nothing is queued or deploying)."""
        self._sent_in: tuple[Phase, float] | None = None
        """The phase (and its start) the queued edit's deploy was sent in (None: none sent)."""

    def put(self, state: ControllerState, config: ServerConfig) -> None:
        """Queue ``config`` (replacing an older one) and pause the sweep after this trial."""
        self.config = config
        if state.sweep_active and not state.pause_requested and state.busy:
            self._send(Pause())
        block = apply_block(state) or "the phase cannot take a deploy now"
        self.sentence = (
            f"Queued {label(state, config)}: {block.split(':', 1)[0]}; it deploys as soon as "
            "that ends (e opens it, ctrl+w there withdraws it)."
        )

    def withdraw(self) -> None:
        """Forget the queued edit and say so."""
        if self.config is not None:
            self._say("Queued edit withdrawn: nothing will be deployed for it.", "information")
        self.withdraw_silently()

    def withdraw_silently(self) -> None:
        """Forget the queued edit (a newer edit was deployed instead)."""
        self.config, self.sentence, self._sent_in = None, "", None

    def offer(self, state: ControllerState) -> None:
        """Deploy the queued edit if ``state`` can take it now."""
        self._deploy_said(state)
        config = self.config
        if config is None or apply_block(state) is not None:
            return
        if state.phase is Phase.AWAITING_DECISION:
            self.sentence = (
                f"Queued {label(state, config)} waits: the crash needs your decision first "
                "(e opens the queued edit)."
            )
            return
        self.sentence = f"Deploying your queued edit {label(state, config)}."
        self.config, self._sent_in = None, (state.phase, state.phase_since)
        self._send(DeployConfig(config=config))

    def _deploy_said(self, state: ControllerState) -> None:
        """Stop saying "Deploying your queued edit" once its deploy is behind (the phase
        moved on since it was sent and is no deploy phase any more)."""
        if self._sent_in is None or self.config is not None:
            return
        if (state.phase, state.phase_since) != self._sent_in and state.phase not in _DEPLOYING:
            self.sentence, self._sent_in = "", None
