"""Keys an engine derives from others: set up front, so a sweep compares what really runs.

Why: some engines overwrite a key from others as they start — SGLang with ``topk`` 1 verifies
``steps + 1`` draft tokens whatever ``speculative_num_draft_tokens`` says. A plan that sweeps
the steps without naming the draft tokens gets them derived per trial, two points that differ
only in the derived key are one configuration, and a label shows the key only where the tie
does not hold. An engine declares each such tie (``Engine.ties``, optional); the plan and the
search apply them through this module without knowing any engine's key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from specconsole.core.engine.registry import EngineNotFound, get_engine

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig

__all__ = ["Tie", "apply_ties", "engine_ties"]


@dataclass(frozen=True, slots=True)
class Tie:
    """One derived key: ``key`` follows ``sources`` while ``holds`` is true of a
    configuration, with the value ``value`` gives (``None``: nothing to derive yet)."""

    key: str
    sources: tuple[str, ...]
    holds: Callable[[ServerConfig], bool]
    value: Callable[[ServerConfig], Any]


def engine_ties(engine: str) -> tuple[Tie, ...]:
    """The ties ``engine`` declares (none for an engine without, or not registered)."""
    try:
        return tuple(getattr(get_engine(str(engine)), "ties", ()))
    except EngineNotFound:
        return ()


def apply_ties(config: ServerConfig, keys: frozenset[str] | None = None) -> ServerConfig:
    """``config`` with each tie that holds applied (only those deriving one of ``keys``,
    when given)."""
    for tie in engine_ties(config.engine):
        if keys is not None and tie.key not in keys:
            continue
        if tie.holds(config):
            value = tie.value(config)
            if value is not None:
                config = dataclasses.replace(config, **{tie.key: value})
    return config
