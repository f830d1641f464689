"""SGLang's Decode and Prefill events built straight from their canonical match.

Why its own module: these two lines are most of a busy SGLang log, and building their frozen
events through the dataclass ``__init__`` cost more than matching them. The core's
:func:`~specconsole.core.logs.build.positional_builder` makes a constructor that fills the
slots by position; this module names SGLang's fields in the order of its canonical lines
(:mod:`.logstats`). The events are the same ones the keyword path makes
(``tests/core/test_logparse_build.py`` compares them).
"""

from __future__ import annotations

import re

from specconsole.core.logs.build import positional_builder
from specconsole.core.logs.events import DecodeStats, PrefillStats

__all__ = ["decode_event", "prefill_event"]

_BUILD_DECODE = positional_builder(
    DecodeStats,
    (
        "timestamp",
        "rank",
        "running_req",
        "num_tokens",
        "token_usage",
        "accept_len",
        "accept_rate",
        "cuda_graph",
        "gen_throughput",
        "queue_req",
    ),
)


def decode_event(m: re.Match[str], ts: str | None, rank: str | None) -> DecodeStats | None:
    """The event of a canonical Decode line straight from its match (no dict, no keywords,
    no per-field ``object.__setattr__``: the hot path of a busy log), ``None`` when a number
    does not convert."""
    g = m.groups()
    try:
        return _BUILD_DECODE(
            ts,
            rank,
            int(g[0]),
            int(g[1]),
            float(g[2]),
            float(g[3]) if g[3] is not None else None,
            float(g[4]) if g[4] is not None else None,
            g[5] == "True",
            float(g[6]),
            int(g[7]),
        )
    except ValueError:
        return None


_BUILD_PREFILL = positional_builder(
    PrefillStats,
    (
        "timestamp",
        "rank",
        "new_seq",
        "new_token",
        "cached_token",
        "token_usage",
        "running_req",
        "queue_req",
        "pending_token",
        "cuda_graph",
        "input_throughput",
    ),
)


def prefill_event(m: re.Match[str], ts: str | None, rank: str | None) -> PrefillStats | None:
    """Like :func:`decode_event`, for the canonical Prefill line."""
    g = m.groups()
    try:
        return _BUILD_PREFILL(
            ts,
            rank,
            int(g[0]),
            int(g[1]),
            int(g[2]),
            float(g[3]),
            int(g[4]),
            int(g[5]),
            int(g[6]),
            g[7] == "True",
            float(g[8]),
        )
    except ValueError:
        return None
