"""The ``per_level`` strategy, the baseline and the acceptance what-if: a sweep that ends in one
configuration drafting each level's best length at that level's batch sizes, proven on the
ladder.

Why: the per-level table (``core.search.levels``) says steps 5 for one request and steps 3
for 64; a server that can switch its draft length by batch size (SGLang's adaptive mode,
vLLM's per-batch-size K) can run both. The derivation is generic — the per-level bests in,
one configuration out — and the engine says it in its own words (``Engine.schedule``) or
says why it cannot. ``strategy = "per_level"`` runs, in order:

1. every static candidate of the axes (the grid, the last axis fastest);
2. the baseline: the base without speculation (``Engine.without_speculation``;
   ``[sweep] baseline``, on by default here, adds it to any strategy, after its own trials);
3. the schedule, derived from the per-level bests once 1 and 2 are decided (nothing of them
   left to run here or on another box) — recorded like any trial, so resuming derives the
   same one;
4. the proof is that trial's benchmark on the same ladder: the per-level table then has a
   schedule column, compared with each level's best static and the single best static.

``[sweep] what_if_accept_length`` (any strategy, last): every static candidate that loaded
is measured again with its engine's acceptance fixed at each length (``Engine.fix_acceptance``:
SGLang's ``SGLANG_SIMULATE_ACC_LEN``, vLLM's synthetic rejection sampler, llama.cpp's
``--spec-synth-len``) — what the same box would do with a draft that accepts that much. Such
trials are what-ifs (``Role.WHAT_IF``): never a level's best, never the sweep's best.

Pure, like every strategy: the next trial is a function of the plan and the records.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from specconsole.core.config.issues import Issue, Severity
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.validation import validate
from specconsole.core.engine.registry import EngineNotFound, engine_for
from specconsole.core.engine.schedule import LevelPick, Role
from specconsole.core.measure.trials import TrialRecord, TrialStatus
from specconsole.core.plans.objective import Goal
from specconsole.core.plans.plan import StrategyKind, SweepPlan
from specconsole.core.search.contenders import identity, not_to_propose
from specconsole.core.search.levels import level_table, role_of

__all__ = [
    "baseline_config",
    "best_picks",
    "derive",
    "extra_trial",
    "findings",
    "next_config",
    "picks",
    "schedule_for",
]


def baseline_config(plan: SweepPlan) -> ServerConfig:
    """The base without speculation, in its engine's words."""
    return engine_for(plan.base).without_speculation(plan.base)


def picks(plan: SweepPlan, trials: Sequence[TrialRecord]) -> tuple[LevelPick, ...]:
    """Each level's best static configuration (or the baseline), in ladder order."""
    return best_picks(trials, plan.goal, plan.noise_pct)


def best_picks(
    trials: Sequence[TrialRecord], goal: Goal, noise_pct: float = 1.0
) -> tuple[LevelPick, ...]:
    """Each level's best static configuration under ``goal`` (``core.search.levels``)."""
    table = level_table(trials, goal, noise_pct)
    return tuple(
        LevelPick(row.concurrency, row.best.trial.config)
        for row in table.rows
        if row.best is not None
    )


def derive(plan: SweepPlan, trials: Sequence[TrialRecord]) -> ServerConfig | Issue | None:
    """The schedule the per-level bests make, the engine's refusal, or None before any level
    was measured. A release the plan declares is checked here (a refusal names the field
    and the fix); the box's release is checked when the trial is validated."""
    return schedule_for(plan.base, picks(plan, trials))


def schedule_for(base: ServerConfig, chosen: Sequence[LevelPick]) -> ServerConfig | Issue | None:
    """``base``'s engine's schedule for the per-level ``chosen`` (None: nothing chosen), or
    its refusal; the configuration's own rules checked (``sim predict --schedule`` too)."""
    if not chosen:
        return None
    try:
        result = engine_for(base).schedule(chosen)
    except EngineNotFound as exc:
        return Issue(None, Severity.ERROR, str(exc), "install the engine's package.")
    if isinstance(result, Issue):
        return result
    errors = [i for i in validate(result) if i.blocking]
    return errors[0] if errors else result


def next_config(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    skipped: Iterable[ServerConfig] = (),
    pending: Iterable[ServerConfig] = (),
) -> tuple[ServerConfig, str] | None:
    """The next trial of ``strategy = "per_level"`` and its reason (None: done)."""
    pending = list(pending)
    blocked = not_to_propose(trials, skipped, pending)
    grid = plan.grid()
    for i, config in enumerate(grid):
        if identity(config) not in blocked:
            return config, f"schedule: static candidate {i + 1} of {len(grid)}"
    baseline = baseline_config(plan)
    if plan.wants_baseline and identity(baseline) not in blocked:
        return baseline, "schedule: the baseline (no speculation)"
    if pending:
        return None  # the last candidates run elsewhere: the per-level bests are not known
    derived = derive(plan, trials)
    if derived is None or isinstance(derived, Issue) or identity(derived) in blocked:
        return None
    said = ", ".join(f"c={p.concurrency} #{_number(trials, p)}" for p in picks(plan, trials))
    return derived, f"schedule: derived from the per-level bests ({said})"


def _number(trials: Sequence[TrialRecord], pick: LevelPick) -> int:
    return next((t.index + 1 for t in trials if t.config == pick.config), 0)


def extra_trial(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    skipped: Iterable[ServerConfig] = (),
    pending: Iterable[ServerConfig] = (),
) -> tuple[ServerConfig, str] | None:
    """What any strategy runs after its own trials: the baseline (``[sweep] baseline``) and
    the what-if acceptances of the static candidates that loaded."""
    blocked = not_to_propose(trials, skipped, pending)
    if plan.wants_baseline and plan.strategy is not StrategyKind.PER_LEVEL:
        baseline = baseline_config(plan)
        if identity(baseline) not in blocked:
            return baseline, "the baseline (no speculation)"
    if not plan.what_if_accept:
        return None
    engine = engine_for(plan.base)
    loaded = [t.config for t in trials if t.status is TrialStatus.OK and role_of(t) is Role.STATIC]
    for length in plan.what_if_accept:
        for config in dict.fromkeys(loaded):  # each configuration once, in trial order
            fixed = engine.fix_acceptance(config, length)
            if isinstance(fixed, Issue) or identity(fixed) in blocked:
                continue
            return fixed, f"what-if: accept length fixed at {length:g}"
    return None


def findings(plan: SweepPlan, trials: Sequence[TrialRecord]) -> tuple[str, ...]:
    """How the schedule came about: derived (and which trial runs it) or refused, and why."""
    if plan.strategy is not StrategyKind.PER_LEVEL:
        return ()
    derived = derive(plan, trials)
    if derived is None:
        return ("schedule: no level measured yet",)
    if isinstance(derived, Issue):
        where = f"{derived.field}: " if derived.field else ""
        return (f"schedule not derived: {where}{derived.message} Fix: {derived.fix}",)
    ran = next((t for t in trials if identity(t.config) == identity(derived)), None)
    if ran is None:
        return ("schedule: derived, not run yet",)
    outcome = "benchmarked" if ran.status is TrialStatus.OK else ran.status.value
    return (f"schedule: derived from the per-level bests, trial {ran.index + 1} ({outcome})",)
