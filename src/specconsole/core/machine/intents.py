"""What a user may ask of the controller, and in which phases the machine accepts it.

Why apart from the outcomes (:mod:`.events`, which re-exports everything here): the console
sends intents and shows the keys that apply now from its first frame on, while the outcomes,
the transition table and its handlers are the controller's, loaded when it starts right after
that frame. So the intents and *where* each is accepted (:data:`ACCEPTED`, the transition
table's intent rows, read by :func:`legal_intents` for the key hints) live here, and
:mod:`.table` attaches *how* each is handled to those very rows (a test checks that both say
the same).

Intents come from the UI or the headless driver and are the only way a user changes anything
(one key = one intent). Every event carries ``at``: the wall-clock time it was observed; the
pure core never reads a clock, which keeps every transition reproducible in tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from specconsole.core.machine.vocab import ResumeChoice
from specconsole.core.measure.trials import BUSY_PHASES, WATCHED_PHASES, Phase

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig
    from specconsole.core.machine.state import ControllerState
    from specconsole.core.plans.plan import CrashPolicy, SweepPlan


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of every machine input."""

    at: float = 0.0
    """Wall-clock seconds when the runtime observed the event."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Intent(Event):
    """Something the user asked for."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FocusBox(Intent):
    """Show this box of the pool in the console (its journal, header and keys); handled by
    the pool's console handle, never by a box's machine."""

    box: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StartSweep(Intent):
    """Start (or continue) the sweep: the strategy picks trial after trial."""

    plan: SweepPlan | None = None
    """The plan to run; None keeps the loaded one."""
    policy: CrashPolicy | None = None
    """Override the plan's crash policy."""
    resume: bool = False
    """Continuing a recorded session: the first trial may reattach to a running server."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Pause(Intent):
    """Pause the sweep once the current trial is recorded (toggle: a second Pause clears it)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Cancel(Intent):
    """Abandon the running trial now (recorded as cancelled). The server is left running."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeployConfig(Intent):
    """Deploy this configuration as the next trial (the editor's apply)."""

    config: ServerConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchmarkOnly(Intent):
    """Benchmark what is deployed now, without deploying or restarting."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Resume(Intent):
    """The one-key resume: a decision after a crash, or continue a paused/cancelled sweep."""

    choice: ResumeChoice = ResumeChoice.RESUME_NEXT
    config: ServerConfig | None = None
    """The edited configuration, for ``EDIT_THEN_DEPLOY``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SetPolicy(Intent):
    """Change the crash policy from now on."""

    policy: CrashPolicy


@dataclass(frozen=True, slots=True, kw_only=True)
class Quit(Intent):
    """Stop the controller. The remote server keeps running unless ``stop_server``."""

    stop_server: bool = False


INTENT_TYPES: tuple[type[Intent], ...] = (
    StartSweep,
    Pause,
    Cancel,
    DeployConfig,
    BenchmarkOnly,
    Resume,
    SetPolicy,
    FocusBox,
    Quit,
)
"""Every intent, for documentation and exhaustive tests."""


# --------------------------------------------------------------------------------------------
# Where each intent is accepted (the transition table's intent rows)
# --------------------------------------------------------------------------------------------

STARTABLE: frozenset[Phase] = frozenset({Phase.IDLE, Phase.DONE, Phase.CANCELLED, Phase.PAUSED})
"""Resting phases a sweep, a deploy or a benchmark may start from."""

ACTIVE: frozenset[Phase] = frozenset(
    {Phase.VALIDATING, Phase.DEPLOYING, Phase.RESTARTING, *WATCHED_PHASES}
)
"""A trial's steps up to its benchmark: a cancel abandons the trial at once."""

FINISHING: frozenset[Phase] = frozenset({Phase.RECORDING, Phase.CRASHED})
"""A trial being recorded (its figures, or its crash): a cancel stops what comes after."""

DECIDING: frozenset[Phase] = frozenset({Phase.PAUSED, Phase.AWAITING_DECISION})
"""The sweep waits for the user: a cancel abandons the sweep."""

ACCEPTED: dict[type[Intent], frozenset[Phase]] = {
    StartSweep: STARTABLE,
    Pause: BUSY_PHASES,
    Cancel: ACTIVE | FINISHING | DECIDING,
    DeployConfig: STARTABLE | {Phase.AWAITING_DECISION},
    BenchmarkOnly: STARTABLE,
    Resume: frozenset({Phase.AWAITING_DECISION, Phase.PAUSED, Phase.CANCELLED}),
}
"""The phases each intent is accepted in (preconditions aside); ``core.machine.table`` gives
each of these rows its handler."""

EVERYWHERE: tuple[type[Intent], ...] = (FocusBox, SetPolicy, Quit)
"""Intents accepted in every phase (``core.machine.table.ANYWHERE``)."""

DEFERRING_PHASES: frozenset[Phase] = frozenset({Phase.CRASHED, Phase.RECORDING})
"""Phases the controller leaves by itself within moments, with a decision likely next: an
intent that is not legal yet is kept and applied after (``handlers.deferral``)."""

DEFERRABLE: tuple[type[Intent], ...] = (Resume, DeployConfig, StartSweep, BenchmarkOnly)
"""Intents worth keeping for the phase after (the others are legal here or meaningless)."""


def legal_intents(state: ControllerState) -> frozenset[type[Intent]]:
    """Intent types the machine accepts (or keeps for later) in this phase, preconditions
    aside: what the key hints show."""
    phase = state.phase
    out = {intent for intent, phases in ACCEPTED.items() if phase in phases}
    out.update(EVERYWHERE)
    if phase in DEFERRING_PHASES:
        out.update(DEFERRABLE)
    return frozenset(out)
