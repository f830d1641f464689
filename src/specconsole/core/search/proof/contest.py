"""The engine's own adaptive mode on the ladder beside the derived schedule: two contenders.

Why: a user holding a derived schedule compares it with what the engine ships. SGLang's
``--speculative-adaptive`` moves its draft length on an EMA of acceptance; reported gains over
the best static are small on steady traffic (sglang#22246, #23336) and larger when acceptance
swings (#24054). A schedule sweep therefore deploys, after the schedule is proven:

* **(a) the engine's defaults** — its adaptive mode as shipped (SGLang: the release's
  default buckets and candidates);
* **(b) the same lengths** — its adaptive mode given the draft lengths the schedule uses, in
  the schedule's buckets, so the engine's EMA chooses among them at run time where the
  schedule pins one per bucket: the fair comparison.

Each is a trial like any other (``Role.ADAPTIVE``: never a level's best static); the
per-level table shows both beside the schedule, with each one's capacity (the KV the
largest candidate reserves). An engine without an adaptive mode says so
(``Engine.adaptive_contender``'s finding), and the findings repeat it. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specconsole.core.config.issues import Issue
from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.registry import EngineNotFound, engine_for
from specconsole.core.measure.identity import identity
from specconsole.core.measure.trials import TrialRecord, TrialStatus

__all__ = ["CONTENDERS", "Contender", "contenders"]

CONTENDERS: tuple[tuple[str, str, bool], ...] = (
    ("a", "engine adaptive, its defaults", False),
    ("b", "engine adaptive, the schedule's lengths", True),
)
"""(key, what it is, whether it gets the schedule's lengths), in the order they run."""


@dataclass(frozen=True, slots=True)
class Contender:
    """One of the engine's adaptive contenders for a schedule."""

    key: str
    """``a`` (defaults) or ``b`` (the schedule's lengths)."""
    title: str
    config: ServerConfig | None
    """What it deploys (None: the engine has no such mode; :attr:`refusal` says why)."""
    refusal: Issue | None
    trial: TrialRecord | None = None
    """Its latest decided trial (None: not run yet)."""

    @property
    def mode(self) -> str:
        """The engine's words for what it runs (``SGLang's adaptive mode ...``)."""
        if self.config is None:
            return ""
        return engine_for(self.config).adaptive_mode(self.config) or ""


def contenders(
    schedule: ServerConfig | None, trials: Sequence[TrialRecord] = ()
) -> tuple[Contender, ...]:
    """``schedule``'s contenders as its engine makes them, each with its latest decided
    trial among ``trials`` (none for no schedule)."""
    if schedule is None:
        return ()
    try:
        engine = engine_for(schedule)
    except EngineNotFound:
        return ()
    out = []
    for key, title, same in CONTENDERS:
        made = engine.adaptive_contender(schedule, same)
        if isinstance(made, Issue):
            out.append(Contender(key, title, None, made))
            continue
        mine = identity(made)
        ran = [
            t
            for t in trials
            if identity(t.config) == mine
            and t.remeasure is None
            and t.status is not TrialStatus.CANCELLED
        ]
        out.append(Contender(key, title, made, None, ran[-1] if ran else None))
    return tuple(out)
