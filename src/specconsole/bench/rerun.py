"""When a level is re-run: a link lost mid-level, and waiting for the server to answer again.

Why apart from the ladder engine (:mod:`.engine`): the rule that tells a lost connection (an
SSH forward or the HTTP link dropped mid-level: re-run the level once) from the server's own
answer (HTTP errors, stalls, timeouts: kept as measured) is a decision of its own, and the wait
for the link is bounded in time and count. Standard library only: the remote runner ships it.
"""

from __future__ import annotations

import asyncio

from specconsole.bench.api import RequestFailed
from specconsole.bench.ladder import ClientFactory
from specconsole.core.measure.metrics import LevelMetrics

__all__ = ["LOST_CONNECTION_KINDS", "RERUN_WAIT_S", "answers_again", "lost", "lost_midway"]

LOST_CONNECTION_KINDS = ("connect", "disconnect")
"""Request failures that mean the link was lost, not that the server answered badly."""

RERUN_WAIT_S = 30.0
"""How long a level with lost-connection failures waits for the server to answer again."""

RERUN_POLL_S = 0.5


def lost(level: LevelMetrics) -> int:
    """How many of the level's failures were a lost connection."""
    return sum(level.errors.get(kind, 0) for kind in LOST_CONNECTION_KINDS)


def lost_midway(level: LevelMetrics, before: list[LevelMetrics]) -> bool:
    """True when the level lost a link the benchmark had: some of its failures were a lost
    connection and the server was reached (a request of this level or an earlier one
    completed, or a connection dropped after it was made). A server refused from the first
    request is unreachable, not lost: that fails at once instead of waiting for an answer."""
    if not lost(level):
        return False
    reached = level.completed > 0 or any(lv.completed for lv in before)
    return reached or level.errors.get("disconnect", 0) > 0


async def answers_again(factory: ClientFactory, cancel: asyncio.Event) -> bool:
    """True once the server answers any HTTP request (bounded in time and count)."""
    client = factory(1)
    try:
        for _ in range(int(RERUN_WAIT_S / RERUN_POLL_S)):
            if cancel.is_set():
                return False
            try:
                await client.get_json("/health")
                return True
            except RequestFailed as exc:
                if exc.kind not in (*LOST_CONNECTION_KINDS, "timeout"):
                    return True  # an HTTP answer (even an error): the link is back
            await asyncio.sleep(RERUN_POLL_S)
        return False
    finally:
        await client.aclose()
