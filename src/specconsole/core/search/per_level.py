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
   schedule column, compared with each level's best static and the single best static;
5. the edge proof (``core.search.proof.edges``): the schedule measured just below and above
   each edge, beside the statics it switches between; a cliff is merged away and the
   adjusted schedule proven again (bounded);
6. the engine's own adaptive mode, with its defaults and over the schedule's lengths
   (``core.search.proof.contest``), each a trial on the ladder;
7. with ``[sweep] proof_dataset``, the schedule, its statics and the adaptive contender
   over its lengths measured again on that workload.

Levels from where speculation stops paying (the per-level table's break-even, beyond the
noise) draft nothing in the derived schedule where the engine can say so.

``[sweep] what_if_accept_length`` (any strategy, last): every static candidate that loaded
is measured again with its engine's acceptance fixed at each length (``Engine.fix_acceptance``:
SGLang's ``SGLANG_SIMULATE_ACC_LEN``, vLLM's synthetic rejection sampler, llama.cpp's
``--spec-synth-len``) — what the same box would do with a draft that accepts that much. Such
trials are what-ifs (``Role.WHAT_IF``): never a level's best, never the sweep's best.

Pure, like every strategy: the next trial is a function of the plan and the records.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from specconsole.core.config.issues import Issue, Severity
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.validation import validate
from specconsole.core.engine.registry import EngineNotFound, engine_for
from specconsole.core.engine.schedule import LevelPick, Role
from specconsole.core.measure.trials import Remeasure, TrialRecord, TrialStatus
from specconsole.core.plans.objective import Goal
from specconsole.core.plans.plan import StrategyKind, SweepPlan
from specconsole.core.search.contenders import identity, not_to_propose
from specconsole.core.search.levels import LevelTable, level_table, role_of
from specconsole.core.search.proof.contest import contenders
from specconsole.core.search.proof.edges import (
    MAX_ROUNDS,
    Round,
    check_round,
    merge,
    top_level,
)
from specconsole.core.search.proof.remeasure import EDGE, WORKLOAD, remeasured

__all__ = [
    "Next",
    "baseline_config",
    "best_picks",
    "derive",
    "extra_trial",
    "final_schedule",
    "next_config",
    "picks",
    "rounds",
    "schedule_for",
    "workload_configs",
]

Next = tuple[ServerConfig, str] | tuple[ServerConfig, str, Remeasure]
"""A proposal: the configuration, why, and how it is re-measured (when it is)."""


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
    return _picks(level_table(trials, goal, noise_pct), off=False)


def _picks(table: LevelTable, off: bool) -> tuple[LevelPick, ...]:
    """The table's per-level bests; with ``off``, the baseline from where speculation stops
    paying (its break-even) — where the baseline was measured."""
    stop = table.stops_paying if off else None
    out = []
    for row in table.rows:
        if row.best is None:
            continue
        chosen = row.best
        if stop is not None and row.concurrency >= stop and row.baseline is not None:
            chosen = row.baseline
        out.append(LevelPick(row.concurrency, chosen.trial.config))
    return tuple(out)


def derive(plan: SweepPlan, trials: Sequence[TrialRecord]) -> ServerConfig | Issue | None:
    """The schedule the per-level bests make, the engine's refusal, or None before any level
    was measured. From where speculation stops paying it drafts nothing, where the engine
    can say so (else the levels' bests stand). A release the plan declares is checked here
    (a refusal names the field and the fix); the box's release when the trial is validated."""
    table = level_table(trials, plan.goal, plan.noise_pct)
    plain = _picks(table, off=False)
    if table.stops_paying is not None:
        off = schedule_for(plan.base, _picks(table, off=True))
        if isinstance(off, ServerConfig):
            return off
    return schedule_for(plan.base, plain)


def _derived_picks(plan: SweepPlan, trials: Sequence[TrialRecord]) -> tuple[LevelPick, ...]:
    """The picks :func:`derive` used."""
    table = level_table(trials, plan.goal, plan.noise_pct)
    if table.stops_paying is not None:
        off = _picks(table, off=True)
        if isinstance(schedule_for(plan.base, off), ServerConfig):
            return off
    return _picks(table, off=False)


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


def _on_ladder(trials: Sequence[TrialRecord], config: ServerConfig) -> TrialRecord | None:
    """``config``'s latest decided trial on the plan's ladder and workload."""
    key = identity(config)
    ran = [
        t
        for t in trials
        if identity(t.config) == key
        and t.remeasure is None
        and t.status is not TrialStatus.CANCELLED
    ]
    return ran[-1] if ran else None


def _scores(
    plan: SweepPlan, trials: Sequence[TrialRecord]
) -> dict[tuple[int, ServerConfig], float]:
    """Each static's figure over its level's best, by (level, identity)."""
    table = level_table(trials, plan.goal, plan.noise_pct)
    out: dict[tuple[int, ServerConfig], float] = {}
    for row in table.rows:
        if row.best is None or row.best.value <= 0:
            continue
        for t in trials:
            if t.status is TrialStatus.OK and role_of(t) in (Role.STATIC, Role.BASELINE):
                level = next((lv for lv in t.levels if lv.concurrency == row.concurrency), None)
                if level is not None:
                    key = (row.concurrency, identity(t.config))
                    out[key] = max(out.get(key, 0.0), level.output_tok_s / row.best.value)
    return out


def rounds(plan: SweepPlan, trials: Sequence[TrialRecord]) -> tuple[Round, ...]:
    """The schedules proven so far, the derived one first, each with its edge proof; a
    round with cliffs says which edges the next one merged away (``core.search.proof.edges``)."""
    chosen = _derived_picks(plan, trials)
    schedule = schedule_for(plan.base, chosen)
    out: list[Round] = []
    cliffed: set[int] = set()

    def recreates(candidate: tuple[LevelPick, ...]) -> bool:
        made = schedule_for(plan.base, candidate)
        if not isinstance(made, ServerConfig):
            return False
        found = engine_for(made).edges(made, top_level(plan, made))
        return any(e.batch in cliffed for e in found)

    while isinstance(schedule, ServerConfig) and len(out) < MAX_ROUNDS:
        found = check_round(plan, trials, schedule, _on_ladder(trials, schedule), chosen)
        if found.trial is None or found.missing or not found.cliffs or len(out) + 1 >= MAX_ROUNDS:
            out.append(found)
            break
        cliffed |= {c.edge.batch for c in found.cliffs}
        new_picks, merged = merge(chosen, found.cliffs, _scores(plan, trials), recreates)
        adjusted = schedule_for(plan.base, new_picks) if merged else None
        if not isinstance(adjusted, ServerConfig) or identity(adjusted) == identity(schedule):
            out.append(found)
            break
        out.append(replace(found, merged=merged))
        chosen, schedule = new_picks, adjusted
    return tuple(out)


def final_schedule(plan: SweepPlan, trials: Sequence[TrialRecord]) -> ServerConfig | None:
    """The schedule the proof ends with (the derived one, or its last adjustment)."""
    done = rounds(plan, trials)
    return done[-1].schedule if done else None


def workload_configs(plan: SweepPlan, trials: Sequence[TrialRecord]) -> tuple[ServerConfig, ...]:
    """What ``[sweep] proof_dataset`` measures again: the final schedule, the statics it is
    built from and the engine's adaptive contender over its lengths (when it has one)."""
    done = rounds(plan, trials)
    if not plan.proof_dataset or not done:
        return ()
    last = done[-1]
    out = [last.schedule]
    for pick in last.picks:
        if isinstance(pick.config, ServerConfig) and pick.config not in out:
            out.append(pick.config)
    out += [c.config for c in contenders(last.schedule) if c.key == "b" and c.config is not None]
    return tuple(out)


def next_config(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    skipped: Iterable[ServerConfig] = (),
    pending: Iterable[ServerConfig] = (),
) -> Next | None:
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
    if derived is None or isinstance(derived, Issue):
        return None
    if identity(derived) not in blocked:
        said = ", ".join(
            f"c={p.concurrency} #{_number(trials, p)}" for p in _derived_picks(plan, trials)
        )
        return derived, f"schedule: derived from the per-level bests ({said})"
    return _proof_next(plan, trials, blocked)


def _proof_next(
    plan: SweepPlan, trials: Sequence[TrialRecord], blocked: set[ServerConfig]
) -> Next | None:
    """The proof's next trial: the edges (and an adjusted schedule), the engine's adaptive
    contenders, another workload."""
    done = rounds(plan, trials)
    if not done:
        return None
    last = done[-1]
    if last.trial is None:
        before = done[-2] if len(done) > 1 else None
        merged = "; ".join(
            f"edge {e.batch - 1}|{e.batch}: c={lo} takes c={hi}'s static"
            for e, lo, hi in (before.merged if before else ())
        )
        return last.schedule, f"schedule: adjusted after a cliff ({merged}), proven again"
    for config, rungs in last.missing:
        how = Remeasure(EDGE, ladder=rungs)
        if remeasured(trials, config, how) is None:
            said = ", ".join(map(str, rungs))
            return config, f"schedule: edge proof at c={said}", how
    if last.trial.status is not TrialStatus.OK:
        return None
    for contender in contenders(last.schedule, trials):
        config = contender.config
        if config is not None and contender.trial is None and identity(config) not in blocked:
            return config, f"schedule: {contender.title} ({contender.key})"
    for config in workload_configs(plan, trials):
        how = Remeasure(WORKLOAD, dataset=plan.proof_dataset)
        if remeasured(trials, config, how) is None:
            return config, f"schedule: the proof on {plan.proof_dataset}", how
    return None


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
