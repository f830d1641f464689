"""What a transport tells its listener about the link: connected, lost, reconnected, failed.

Why apart from the SSH transport: the controller listens to any transport's link, and
importing these words must not import asyncssh (a local box never needs it, and the console's
start-up must not pay for it).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

__all__ = ["ConnectionEvent", "ConnectionListener"]


class ConnectionEvent(StrEnum):
    """What the transport tells its listener about the link."""

    CONNECTED = "connected"
    LOST = "lost"
    RECONNECTED = "reconnected"
    FAILED = "failed"
    """Reconnecting gave up; operations raise ConnectionLost until a later call succeeds."""


ConnectionListener = Callable[[ConnectionEvent, str], None]
