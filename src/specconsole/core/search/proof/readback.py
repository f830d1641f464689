"""What the server ran at each level, read back, against what was deployed there.

Why: nobody sees what is in force — vLLM prints neither the resolved per-batch-size K nor the
CUDA-graph mode at start-up (vllm#48494: users read ``/proc/1/cmdline``), it drops the table
with a warning under data parallelism, and SGLang turns its adaptive mode off with one line
when a flag it cannot combine is present. A schedule's proof must not assume its file was
obeyed. So every level records the draft length the engine says it ran
(``CounterAcceptance.drafted_length``: SGLang's ``sglang:spec_num_steps`` gauge read during
the level, or vLLM's draft tokens per draft), and this module sets it beside the length the
configuration deploys at that concurrency by the engine's own routing (``Engine.steps_at``).
A level where they differ by half a step or more is a mismatch: a finding. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specconsole.core.engine.registry import EngineNotFound, engine_for
from specconsole.core.measure.trials import TrialRecord, TrialStatus

__all__ = ["MISMATCH_STEPS", "InForce", "in_force", "mismatches"]

MISMATCH_STEPS = 0.5
"""How far the length the server ran may be from the one deployed (a level's mean: a batch
that dips between waves may run a neighbouring bucket's length for a few steps)."""


@dataclass(frozen=True, slots=True)
class InForce:
    """One level: the draft length deployed there and the one the server said it ran."""

    concurrency: int
    deployed: int | None
    """By the configuration and the engine's routing (None: the engine chooses at run time)."""
    ran: float | None
    """The level's mean, as the server counted it (None: it does not say)."""

    @property
    def mismatch(self) -> bool:
        if self.deployed is None or self.ran is None:
            return False
        return abs(self.ran - self.deployed) >= MISMATCH_STEPS


def in_force(trial: TrialRecord) -> tuple[InForce, ...]:
    """Each measured level of ``trial``: deployed against ran (nothing for a trial that did
    not finish its benchmark)."""
    if trial.status is not TrialStatus.OK:
        return ()
    try:
        engine = engine_for(trial.effective)
    except EngineNotFound:
        return ()
    out = []
    for level in trial.levels:
        ran = level.counters.drafted_length if level.counters is not None else None
        out.append(
            InForce(level.concurrency, engine.steps_at(trial.effective, level.concurrency), ran)
        )
    return tuple(out)


def mismatches(trials: Sequence[TrialRecord]) -> tuple[tuple[TrialRecord, InForce], ...]:
    """Every level where a trial's server ran another draft length than it deployed."""
    return tuple((t, row) for t in trials for row in in_force(t) if row.mismatch)
