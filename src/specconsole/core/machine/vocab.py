"""Small value types that both the machine's events and its state carry.

Why apart from :mod:`.state`: an event such as ``Resume`` or ``PoolChanged`` carries a
``ResumeChoice`` or a ``PoolView``, and the state keeps deferred intents; with these types in
the state module, events and state imported each other. Here they sit below both.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig
    from specconsole.core.measure.trials import TrialRecord

__all__ = ["ConnectionState", "PoolView", "ResumeChoice"]


class ResumeChoice(StrEnum):
    """The user's decision after a crash (or to continue a paused/cancelled sweep)."""

    RESUME_NEXT = "resume_next"
    """Continue with the next configuration the strategy picks."""
    RETRY_SAME = "retry_same"
    """Deploy the crashed configuration again."""
    EDIT_THEN_DEPLOY = "edit_then_deploy"
    """Deploy the (edited) configuration carried by the intent."""
    SKIP = "skip"
    """Record the next planned configuration as skipped and continue after it."""
    ROLLBACK = "rollback"
    """Redeploy the last good configuration so the box serves again, then pause."""


class ConnectionState(StrEnum):
    """Reachability of the box, as the runtime last saw it."""

    UNKNOWN = "unknown"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    LOST = "lost"


@dataclass(frozen=True, slots=True)
class PoolView:
    """What one box of a pool knows about the others (kept current by the orchestrator)."""

    box: str
    """This box's name."""
    trials: tuple[TrialRecord, ...] = ()
    """Trials the other boxes of this box's group recorded (on this box's port)."""
    running: tuple[ServerConfig, ...] = ()
    """Configurations running on the other boxes right now (on this box's port)."""
    indices: int = 0
    """Trial indices the rest of the pool has used (recorded or running, any group)."""
    counted: int = 0
    """Of those, the ones that count against ``[sweep] max_trials``."""
