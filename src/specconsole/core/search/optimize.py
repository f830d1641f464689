"""The ``optimize`` strategy: a constrained, sample-efficient search over every axis.

Why Optuna's TPE, and why here in the core: every trial costs a model load and a ladder
(minutes on the real box), so the next configuration should come from a model of the trials
so far, not from a walk. Optuna's Tree-structured Parzen Estimator handles integer, ordinal
and categorical axes together, takes constraints (``constraints_func``: infeasible trials
never count as good ones, so the region where loads crash is learned and avoided), is seeded
(same seed and records, same proposal) and well kept; a GP sampler would need PyTorch. The
core's contract forbids I/O and UI/SSH/HTTP libraries, not computation: the study is built
in memory from the records on every call (no storage, no threads, no clock), so this module
stays a pure function of (plan, trials) and is tested as records in, configuration out —
exactly like the other strategies. Only this module imports Optuna (an import-linter
contract keeps it so).

How a proposal is made:

1. Every recorded trial whose configuration lies in the plan's space (base + axes; trials of
   earlier strategies included) becomes an observation: ``ok`` → the objective's score with
   the constraints' violation; ``crashed`` / ``load_timeout`` / ``failed`` / ``infeasible``
   / ``invalid`` → infeasible (violation 1); ``pruned`` → the figure that decided it (it
   fell short of the best there, so TPE ranks it low, never as the best). Numeric axes are
   encoded as the index into their sorted values (so TPE sees their order), others as categories
   (``core.search.space``).
2. Without observations the first point is the plan's base configuration (Optuna's
   ``enqueue_trial``; ``start_at_base = false`` leaves it to the sampler), then TPE samples
   a point. For a goal that reads single requests only, the capacity axes are held at the
   base's values until the tree search stalls (``core.search.focus``): TPE sees the other axes.
   The point is *projected* onto the engine's ties (SGLang's: topk 1 ties draft tokens to
   steps + 1) and checked before it is proposed: a point that ``core.config.validation`` rejects,
   that was already tried or skipped, or that ``core.search.capacity`` predicts will not load
   (unless ``skip_infeasible = false``) is told to the sampler as infeasible and another
   point is sampled. The proposal's reason names what was passed over, with the numbers.
3. The search stops (returns None) when ``patience`` trials that cost a load brought no
   improvement beyond the noise (``core.plans.objective.improves``: confidence intervals when
   levels are repeated, plus ``noise_pct``), or when no untried valid configuration is left.
   Before it stops (or with one trial of ``max_trials`` left), a runner-up whose interval
   overlaps the best one's is measured again (``core.search.contenders``).
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    IntDistribution,
)
from optuna.samplers import TPESampler
from optuna.trial import TrialState, create_trial

from specconsole.core.config import validation
from specconsole.core.config.model import ServerConfig
from specconsole.core.measure.trials import TrialRecord, TrialStatus
from specconsole.core.plans.objective import Goal, ObjectiveKind, best, pareto_front
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.plans.verdict import improves, measured_noise
from specconsole.core.search.capacity import predict_capacity
from specconsole.core.search.contenders import contender
from specconsole.core.search.contenders import identity as _identity
from specconsole.core.search.focus import held_axes
from specconsole.core.search.space import (
    Axis,
    decode,
    encode,
    point_label,
    project,
    space,
    values_text,
)

LOADS: frozenset[TrialStatus] = frozenset(
    {
        TrialStatus.OK,
        TrialStatus.CRASHED,
        TrialStatus.LOAD_TIMEOUT,
        TrialStatus.FAILED,
        TrialStatus.PRUNED,
    }
)
"""Outcomes that cost a deploy and a load: they count towards convergence."""
INFEASIBLE: frozenset[TrialStatus] = frozenset(
    {
        TrialStatus.CRASHED,
        TrialStatus.LOAD_TIMEOUT,
        TrialStatus.FAILED,
        TrialStatus.INFEASIBLE,
        TrialStatus.INVALID,
    }
)
MAX_SAMPLES = 150
"""Sampler draws per proposal before falling back to a seeded pick among the untried."""


def good_share(n: int) -> int:
    """TPE's "good" group: the best quarter of the observations (Optuna's default tenth
    leaves a single point in a search of ten trials)."""
    return min(math.ceil(0.25 * n), 25)


TPE_OPTIONS: dict[str, Any] = {"multivariate": False, "gamma": good_share}
"""The sampler's settings beyond seed/startup/constraints, as benchmarks/search_efficiency.py
measured them on both simulator profiles: independent (univariate) TPE needed fewer trials
than multivariate TPE, and a quarter-sized good group fewer than the default tenth."""
_VIOLATION = "violation"
_CONSTRAINTS_KEY = "constraints"
"""Where Optuna's samplers read a trial's constraint values (``optuna.samplers._base``)."""


# --------------------------------------------------------------------------------------------
# Observations
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Observation:
    trial: TrialRecord
    params: dict[str, int]
    values: tuple[float, ...] | None
    """Scores to maximise (None: no figures)."""
    violation: float


def _values(goal: Goal, trial: TrialRecord) -> tuple[float, ...] | None:
    if goal.objective.kind is ObjectiveKind.PARETO:
        got = [m.value(trial) for m in goal.objective.metrics]
        if any(v is None for v in got):
            return None
        return tuple(float(v) * m.sign() for v, m in zip(got, goal.objective.metrics, strict=True))  # type: ignore[arg-type]
    score = goal.objective.score(trial)
    return None if score is None else (score,)


def observations(plan: SweepPlan, trials: Iterable[TrialRecord]) -> list[Observation]:
    axes = space(plan)
    out: list[Observation] = []
    for t in trials:
        scored = t.status in (TrialStatus.OK, TrialStatus.PRUNED)
        if not scored and t.status not in INFEASIBLE:
            continue
        params = encode(plan, axes, t.config)
        if params is None:
            continue
        if t.status is TrialStatus.PRUNED:  # its deciding figure; the constraints unread
            values = _values(plan.goal, t)
            out.append(Observation(t, params, values, 0.0 if values is not None else 1.0))
            continue
        values = _values(plan.goal, t) if t.status is TrialStatus.OK else None
        violation = plan.goal.violation(t) if t.status is TrialStatus.OK else None
        out.append(Observation(t, params, values, 1.0 if violation is None else violation))
    return out


# --------------------------------------------------------------------------------------------
# Convergence
# --------------------------------------------------------------------------------------------


def stale_trials(plan: SweepPlan, trials: Sequence[TrialRecord]) -> int:
    """Trials that cost a load since the last improvement beyond the noise."""
    goal = plan.goal
    noise = measured_noise(trials, goal)
    incumbent: TrialRecord | None = None
    seen: list[TrialRecord] = []
    since = 0
    for t in trials:
        if t.status not in LOADS:
            continue
        if goal.objective.kind is ObjectiveKind.PARETO:
            better = goal.feasible(t) and t in pareto_front([*seen, t], goal)
        else:
            better = improves(t, incumbent, goal, noise_pct=plan.noise_pct, noise=noise)
        seen.append(t)
        if better:
            incumbent, since = t, 0
        else:
            since += 1
    return since


RANDOM_STARTUP = 4
"""Random start-up points when the search does not start at the base."""


def startup(plan: SweepPlan) -> int:
    """Proposals before TPE's: ``startup_trials``, or by default the base alone when the
    search starts at it (TPE's next guesses then tend to the far corners, which bracket
    it) and ``RANDOM_STARTUP`` random points when it does not."""
    if plan.startup_trials is not None:
        return plan.startup_trials
    at_base = plan.start_at_base and encode(plan, space(plan), plan.base) is not None
    return 1 if at_base else RANDOM_STARTUP


def converged(plan: SweepPlan, trials: Sequence[TrialRecord]) -> bool:
    loads = sum(1 for t in trials if t.status in LOADS)
    return loads > startup(plan) and stale_trials(plan, trials) >= plan.patience


# --------------------------------------------------------------------------------------------
# Proposing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Suggestion:
    """The optimiser's next configuration and the one line that explains it."""

    config: ServerConfig
    reason: str


def _constraints(trial: optuna.trial.FrozenTrial) -> tuple[float]:
    return (float(trial.user_attrs.get(_VIOLATION, 0.0)),)


def _study(
    plan: SweepPlan,
    obs: Sequence[Observation],
    running: Sequence[dict[str, int]],
    free: Sequence[Axis],
) -> optuna.Study:
    pareto = plan.goal.objective.kind is ObjectiveKind.PARETO
    directions = ["maximize", "maximize"] if pareto else ["maximize"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ExperimentalWarning for multivariate / constraints
        sampler = TPESampler(
            seed=plan.seed,
            n_startup_trials=startup(plan),
            constraints_func=_constraints,
            warn_independent_sampling=False,
            **TPE_OPTIONS,
        )
        study = optuna.create_study(directions=directions, sampler=sampler)
    distributions = {a.name: _distribution(a) for a in free}
    floor = _floor(obs, len(directions))
    for o in obs:
        values = o.values if o.values is not None else floor
        study.add_trial(
            create_trial(
                state=TrialState.COMPLETE,
                params={n: o.params[n] for n in distributions},
                distributions=distributions,
                values=list(values),
                user_attrs={_VIOLATION: o.violation},
                system_attrs={_CONSTRAINTS_KEY: (o.violation,)},
            )
        )
    for params in running:  # constant liar: TPE counts running points as bad ones
        study.add_trial(
            create_trial(
                state=TrialState.RUNNING,
                params={n: params[n] for n in distributions},
                distributions=distributions,
            )
        )
    return study


def _ask(trial: optuna.Trial, free: Sequence[Axis]) -> dict[str, int]:
    return {
        a.name: trial.suggest_int(a.name, 0, len(a.values) - 1)
        if a.numeric
        else trial.suggest_categorical(a.name, tuple(range(len(a.values))))
        for a in free
    }


def _distribution(axis: Axis) -> BaseDistribution:
    """Numeric axes as the index into their sorted values (so TPE sees their order)."""
    if axis.numeric:
        return IntDistribution(0, len(axis.values) - 1)
    return CategoricalDistribution(tuple(range(len(axis.values))))


def _floor(obs: Sequence[Observation], n: int) -> tuple[float, ...]:
    """The value infeasible points carry: the worst figure seen (TPE ranks them by
    violation anyway)."""
    seen = [o.values for o in obs if o.values is not None]
    if not seen:
        return (0.0,) * n
    return tuple(min(v[i] for v in seen) for i in range(n))


def _tell(study: optuna.Study, trial: optuna.Trial, floor: tuple[float, ...], v: float) -> None:
    trial.set_user_attr(_VIOLATION, v)
    study.tell(trial, list(floor))


def suggest(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    skipped: Iterable[ServerConfig] = (),
    pending: Iterable[ServerConfig] = (),
) -> Suggestion | None:
    """The next configuration to try, or None (converged or nothing left to try).

    ``pending`` are configurations running on other boxes of a pool right now: never
    proposed again, and in the study as running trials (Optuna's constant liar)."""
    pending = list(pending)
    done = converged(plan, trials)
    loads = sum(1 for t in trials if t.status in LOADS)
    last = plan.max_trials is not None and loads >= plan.max_trials - 1
    if done or last:
        again = contender(plan, trials, pending)
        if again is not None:
            return Suggestion(again.config, f"optimize {again.reason}")
    if done:
        return None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    axes = space(plan)
    obs = observations(plan, trials)
    tried = {_identity(t.config) for t in trials if t.status is not TrialStatus.CANCELLED}
    tried |= {_identity(c) for c in skipped}
    tried |= {_identity(c) for c in pending}
    running = [p for p in (encode(plan, axes, c) for c in pending) if p is not None]
    stale = stale_trials(plan, trials)
    at_base = {a.name: a.index_of(getattr(plan.base, a.name)) for a in axes}
    hold = {
        n: i
        for n in held_axes(
            plan.goal, plan.bench.ladder, list(at_base), stale, plan.patience, plan.base.engine
        )
        if (i := at_base[n]) is not None
    }
    free = [a for a in axes if a.name not in hold]
    study = _study(plan, obs, running, free)
    start = encode(plan, axes, plan.base) if plan.start_at_base else None
    first = start is not None and not obs
    if first and start is not None:  # the launch the user knows, then what TPE makes of it
        study.enqueue_trial({a.name: start[a.name] for a in free})
    floor = _floor(obs, len(study.directions))
    passed: list[str] = []
    invalid = duplicate = 0
    minimum = plan.minimum_capacity
    for _ in range(MAX_SAMPLES):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trial = study.ask()
            params = _ask(trial, free) | hold
        config = decode(plan, axes, params)  # type: ignore[arg-type]
        if _identity(config) in tried:
            duplicate += 1
            known = next((o for o in obs if _identity(o.trial.config) == _identity(config)), None)
            if known is not None and known.values is not None:
                trial.set_user_attr(_VIOLATION, known.violation)
                study.tell(trial, list(known.values))
            else:
                _tell(study, trial, floor, 1.0)
            continue
        if validation.errors(validation.validate(config)):
            invalid += 1
            _tell(study, trial, floor, 1.0)
            continue
        prediction = predict_capacity(trials, config, minimum_tokens=minimum)
        if not prediction.feasible and plan.skip_infeasible:
            passed.append(
                f"{point_label(plan, config)}: predicted "
                f"{prediction.predicted_tokens:,} KV tokens < {minimum:,}"
            )
            _tell(study, trial, floor, 1.0)
            continue
        how = "TPE" if len(obs) >= startup(plan) else "random start"
        how = "the base configuration first" if first and trial.number == len(running) else how
        if hold:
            shown = values_text(config, sorted(hold))
            how += f"; {shown} held at the base while the goal reads single requests"
        return Suggestion(
            config, _explain(plan, trials, obs, config, how, prediction.reason, passed, invalid)
        )
    return _fallback(plan, trials, axes, tried, passed)


def _fallback(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    axes: Sequence[Axis],
    tried: set[ServerConfig],
    passed: list[str],
) -> Suggestion | None:
    """The sampler keeps returning tried points: a seeded pick among the untried valid
    configurations predicted to load (None when there is none)."""
    rng = random.Random(plan.seed * 1_000_003 + len(trials))
    pool: list[ServerConfig] = []
    seen: set[ServerConfig] = set()
    for config in plan.grid():
        config = project(plan, config)
        key = _identity(config)
        if key in tried or key in seen or validation.errors(validation.validate(config)):
            continue
        seen.add(key)
        p = predict_capacity(trials, config, minimum_tokens=plan.minimum_capacity)
        if p.feasible or not plan.skip_infeasible:
            pool.append(config)
    if not pool:
        return None
    config = rng.choice(pool)
    text = f"optimize: the sampler repeats itself; seeded pick among {len(pool)} untried"
    if passed:
        text += f"; skipped: predicted infeasible {passed[0]}"
    return Suggestion(config, text)


def _distance(axes: Sequence[Axis], a: dict[str, int], b: dict[str, int]) -> float:
    total = 0.0
    for ax in axes:
        if ax.numeric:
            span = max(len(ax.values) - 1, 1)
            total += abs(a[ax.name] - b[ax.name]) / span
        else:
            total += 0.0 if a[ax.name] == b[ax.name] else 1.0
    return total


def _explain(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    obs: Sequence[Observation],
    config: ServerConfig,
    how: str,
    capacity: str,
    passed: Sequence[str],
    invalid: int,
) -> str:
    """One line: how the point was chosen, what the nearest trials say, the best so far,
    the capacity prediction and what was passed over."""
    axes = space(plan)
    params = encode(plan, axes, config) or {}
    parts = [f"optimize ({how})"]
    near = sorted(obs, key=lambda o: (_distance(axes, params, o.params), o.trial.index))[:4]
    if near and params:
        scored = [o for o in near if o.values is not None and o.violation == 0.0]
        if scored:
            weights = [1.0 / (0.05 + _distance(axes, params, o.params)) for o in scored]
            guess = sum(w * o.values[0] for w, o in zip(weights, scored, strict=True)) / sum(
                weights
            )  # type: ignore[index]
            parts.append(f"nearby trials suggest ~{abs(guess):,.0f}")
        loads = sum(1 for o in near if o.trial.status is TrialStatus.OK)
        parts.append(f"{loads}/{len(near)} nearest loaded")
    incumbent = _incumbent(plan, trials)
    if incumbent is not None:
        score = plan.goal.objective.score(incumbent)
        if score is not None:
            parts.append(f"best so far {abs(score):,.0f} (trial {incumbent.index + 1})")
    if capacity and not capacity.startswith("not enough data"):
        parts.append(capacity)
    if invalid:
        parts.append(f"{invalid} sample{'s' if invalid > 1 else ''} rejected by validation")
    if passed:
        more = f" (+{len(passed) - 1} more)" if len(passed) > 1 else ""
        parts.append(f"skipped: predicted infeasible {passed[0]}{more}")
    return "; ".join(parts)


def _incumbent(plan: SweepPlan, trials: Sequence[TrialRecord]) -> TrialRecord | None:
    return best(trials, plan.goal)


def space_size(plan: SweepPlan) -> int:
    """Distinct valid configurations of the plan's space (after SGLang's topk-1 tie)."""
    seen = {
        _identity(project(plan, c))
        for c in plan.grid()
        if not validation.errors(validation.validate(project(plan, c)))
    }
    return len(seen)


__all__ = [
    "Axis",
    "Observation",
    "Suggestion",
    "converged",
    "decode",
    "encode",
    "observations",
    "point_label",
    "project",
    "space",
    "space_size",
    "stale_trials",
    "suggest",
]
