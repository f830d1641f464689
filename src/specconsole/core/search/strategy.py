"""Choosing the next trial of a sweep from the plan and the trials so far.

Why a pure function of (plan, records): the choice must survive a restart. Because the next
trial depends only on what is recorded in ``trials.jsonl``, a resumed session picks up
exactly where it stopped, and every strategy is testable as records in, configuration out.

Strategies (``core.plans.plan.StrategyKind``):

* ``grid``: every combination of the axes in order (the last axis varies fastest).
* ``boundary``: answers "what is the largest value of this integer axis that loads?". The
  listed values are walked upwards; once a value fails (crash, load timeout, predicted
  infeasible, invalid) while a smaller one worked, the integers strictly between the largest
  success *a* and the smallest failure *b* are bisected until *b = a + 1*. Listed values above
  a failure are not tried. With several axes, each combination of the *other* axes is walked
  on its own.
* ``optimize``: a constrained, model-guided search over every axis (``core.search.optimize``).
* ``staged``: the capacity axes first, then the speculative axes on the winner
  (``core.search.staged``).
* ``schedule``: every static candidate, the baseline, then the configuration that drafts each
  level's best length at its batch sizes (``core.search.per_level``). After any strategy's
  own trials come the baseline (``[sweep] baseline``) and the acceptance what-ifs.
* ``plateau``: walk the axis upwards while single-request tok/s gains at least
  ``min_gain_pct`` percent over the previous success and peak aggregate tok/s does not fall;
  stop that walk at the first flat or worse step, or at a failure.

Trial outcomes: ``ok`` counts as success; ``crashed``, ``load_timeout``, ``infeasible``,
``invalid`` and ``failed`` count as failure; ``cancelled`` trials do not count (resume tries
them again) and ``skipped`` configurations are never proposed again. A ``pruned`` trial
(``core.search.prune``) is neither: it loaded, so it is never proposed again, but it lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from specconsole.core.config.model import ServerConfig, set_values
from specconsole.core.measure.trials import Remeasure, TrialRecord, TrialStatus
from specconsole.core.plans.plan import StrategyKind, SweepPlan
from specconsole.core.plans.verdict import assess
from specconsole.core.search import per_level, staged

SUCCESS: frozenset[TrialStatus] = frozenset({TrialStatus.OK})
FAILURE: frozenset[TrialStatus] = frozenset(
    {
        TrialStatus.CRASHED,
        TrialStatus.LOAD_TIMEOUT,
        TrialStatus.INFEASIBLE,
        TrialStatus.INVALID,
        TrialStatus.FAILED,
    }
)


@dataclass(frozen=True, slots=True)
class Proposal:
    """The next configuration to try and why."""

    config: ServerConfig
    reason: str
    remeasure: Remeasure | None = None
    """Set when the trial measures an already measured configuration again under other
    benchmark settings (``strategy = "per_level"``'s proof: its edges, another workload)."""


@dataclass(frozen=True, slots=True)
class _Walk:
    """One line of the walk axis: the other axes fixed at ``key``."""

    key: tuple[Any, ...]
    base: ServerConfig
    values: tuple[Any, ...]
    """Listed values, ascending."""


def _outcomes(
    trials: Iterable[TrialRecord], skipped: Iterable[ServerConfig]
) -> tuple[dict[ServerConfig, TrialStatus], set[ServerConfig]]:
    """Latest decisive status per configuration, and the configurations not to propose."""
    status: dict[ServerConfig, TrialStatus] = {}
    for t in trials:
        if t.status in SUCCESS or t.status in FAILURE:
            status[t.config] = t.status
    blocked = set(status) | set(skipped)
    for t in trials:
        if t.status in (TrialStatus.SKIPPED, TrialStatus.DEGRADED, TrialStatus.PRUNED):
            blocked.add(t.config)  # degraded: inconclusive; pruned: loaded, and lost
    return status, blocked


def _walks(plan: SweepPlan) -> list[_Walk]:
    axis = plan.walk_axis
    assert axis is not None
    others = [name for name, _v in plan.axes if name != axis]
    values = tuple(sorted(dict(plan.axes)[axis]))
    seen: dict[tuple[Any, ...], _Walk] = {}
    for cfg in plan.grid():
        key = tuple(getattr(cfg, n) for n in others)
        if key not in seen:
            seen[key] = _Walk(key=key, base=cfg, values=values)
    return list(seen.values())


def _at(plan: SweepPlan, walk: _Walk, axis: str, value: Any) -> ServerConfig:
    return plan.at(walk.base, **{axis: value})


def next_trial(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    skipped: Iterable[ServerConfig] = (),
    pending: Iterable[ServerConfig] = (),
) -> Proposal | None:
    """The next configuration the plan's strategy wants, or None when the sweep is complete.

    ``pending`` are configurations running elsewhere right now (other boxes of a pool). They
    are never proposed again, and each strategy assumes an outcome for them — the
    *constant liar* that turns a sequential strategy into a batch one: the grid and the
    plateau climb just move on; the boundary walk assumes they load (walking upwards past
    them, or bisecting above them), so N boxes split the interval instead of waiting.
    A strategy with a model (``optimize``) gets the same list to fantasise over.
    """
    skipped, pending = list(skipped), list(pending)
    own = _own_next(plan, trials, skipped, pending)
    if own is not None or pending:
        return own  # the extras wait until the strategy's own trials are all decided
    extra = per_level.extra_trial(plan, trials, skipped, pending)
    return None if extra is None else Proposal(*extra)


def _own_next(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    skipped: list[ServerConfig],
    pending: list[ServerConfig],
) -> Proposal | None:
    """The strategy's own next trial (the baseline and what-ifs come after: ``extra``)."""
    if plan.strategy is StrategyKind.OPTIMIZE:
        from specconsole.core.search import optimize  # Optuna and NumPy: only when searched

        suggestion = optimize.suggest(plan, trials, skipped, pending)
        return None if suggestion is None else Proposal(suggestion.config, suggestion.reason)
    if plan.strategy is StrategyKind.STAGED:
        picked = staged.next_config(plan, trials, skipped, pending)
        return None if picked is None else Proposal(*picked)
    if plan.strategy is StrategyKind.PER_LEVEL:
        picked = per_level.next_config(plan, trials, skipped, pending)
        return None if picked is None else Proposal(*picked)
    status, blocked = _outcomes(trials, skipped)
    pending = [cfg for cfg in pending if cfg not in status]
    blocked.update(pending)
    if plan.strategy is StrategyKind.BOUNDARY:
        status.update({cfg: TrialStatus.OK for cfg in pending})
    if plan.strategy is StrategyKind.GRID or plan.walk_axis is None:
        grid = plan.grid()
        for i, cfg in enumerate(grid):
            if cfg not in blocked:
                return Proposal(cfg, f"grid point {i + 1} of {len(grid)}")
        return None
    axis = plan.walk_axis
    for walk in _walks(plan):
        proposal = (
            _next_boundary(plan, walk, axis, status, blocked)
            if plan.strategy is StrategyKind.BOUNDARY
            else _next_plateau(plan, walk, axis, status, blocked, trials)
        )
        if proposal is not None:
            return proposal
    return None


def _next_boundary(
    plan: SweepPlan,
    walk: _Walk,
    axis: str,
    status: dict[ServerConfig, TrialStatus],
    blocked: set[ServerConfig],
) -> Proposal | None:
    good, bad = _good_bad(plan, walk, axis, status)
    hi = min(bad) if bad else None
    for v in walk.values:
        if hi is not None and v >= hi:
            break
        cfg = _at(plan, walk, axis, v)
        if cfg not in blocked:
            return Proposal(cfg, f"walk {axis} upwards: {v}")
    if hi is None:
        return None
    below = [g for g in good if g < hi]
    if not below:
        return None  # even the smallest value fails: nothing to bisect
    lo = max(below)
    candidates = [v for v in range(int(lo) + 1, int(hi)) if _at(plan, walk, axis, v) not in blocked]
    if not candidates:
        return None
    mid = (lo + hi) // 2
    pick = min(candidates, key=lambda v: (abs(v - mid), v))
    return Proposal(
        _at(plan, walk, axis, pick),
        f"bisect {axis} between {lo} (loads) and {hi} (fails): try {pick}",
    )


def _good_bad(
    plan: SweepPlan, walk: _Walk, axis: str, status: dict[ServerConfig, TrialStatus]
) -> tuple[list[Any], list[Any]]:
    good: list[Any] = []
    bad: list[Any] = []
    for cfg, st in status.items():
        if not _same_walk(plan, walk, axis, cfg):
            continue
        (good if st in SUCCESS else bad).append(getattr(cfg, axis))
    return good, bad


def _next_plateau(
    plan: SweepPlan,
    walk: _Walk,
    axis: str,
    status: dict[ServerConfig, TrialStatus],
    blocked: set[ServerConfig],
    trials: Sequence[TrialRecord],
) -> Proposal | None:
    latest: dict[ServerConfig, TrialRecord] = {}
    for t in trials:
        if t.status in SUCCESS:
            latest[t.config] = t
    previous: TrialRecord | None = None
    for v in walk.values:
        cfg = _at(plan, walk, axis, v)
        st = status.get(cfg)
        if st is None:
            if cfg in blocked:
                continue
            return Proposal(cfg, f"climb {axis}: {v}")
        if st in FAILURE:
            return None
        record = latest[cfg]
        if previous is not None and _flattened(plan, previous, record):
            return None
        previous = record
    return None


def _flattened(plan: SweepPlan, previous: TrialRecord, current: TrialRecord) -> bool:
    """True when ``current`` gained less than ``min_gain_pct`` or its aggregate fell."""
    s0, s1 = previous.single_request_tok_s, current.single_request_tok_s
    a0, a1 = previous.peak_aggregate_tok_s, current.peak_aggregate_tok_s
    if s0 is None or s1 is None or s0 <= 0:
        return True
    gain = (s1 - s0) / s0 * 100.0
    if gain < plan.min_gain_pct:
        return True
    return a0 is not None and a1 is not None and a1 < a0


def suggest_next(
    plan: SweepPlan, trials: Sequence[TrialRecord], skipped: Iterable[ServerConfig] = ()
) -> Proposal | None:
    """The optimiser's proposal over the plan's axes, whatever the plan's strategy (the
    editor's "suggest next"); None without axes or when nothing is left to try."""
    if not plan.axes:
        return None
    return next_trial(
        replace(plan, strategy=StrategyKind.OPTIMIZE, skip_infeasible=True), trials, skipped
    )


def stop_reason(plan: SweepPlan, trials: Sequence[TrialRecord]) -> str:
    """Why the strategy proposes nothing more (for ``finished_reason``)."""
    if plan.strategy is not StrategyKind.OPTIMIZE:
        return "plan complete"
    from specconsole.core.search import optimize  # Optuna and NumPy: only when searched

    if optimize.converged(plan, trials):
        return f"converged: no improvement beyond the noise in {plan.patience} trials"
    return "search space exhausted"


def findings(plan: SweepPlan, trials: Sequence[TrialRecord]) -> tuple[str, ...]:
    """What the sweep found, one sentence per walk (for reports and headless output); any
    strategy adds the best trial when others are statistically tied with it (repeated
    levels whose confidence intervals overlap), so the report says the difference is not
    shown to be real."""
    verdict = assess(trials, plan.goal)
    if plan.strategy is StrategyKind.OPTIMIZE:
        return (verdict.sentence,)
    if plan.strategy is StrategyKind.STAGED:
        return (*staged.findings(plan, trials), verdict.sentence)
    if plan.strategy is StrategyKind.PER_LEVEL:
        return (*per_level.findings(plan, trials), verdict.sentence)
    repeated = verdict.best is not None and any(lv.repeats > 1 for lv in verdict.best.levels)
    measured = repeated or verdict.noise is not None  # a tie said only where noise was measured
    ties = (verdict.sentence,) if verdict.tied and measured else ()
    if plan.strategy is StrategyKind.GRID or plan.walk_axis is None:
        return ties
    axis = plan.walk_axis
    status, _blocked = _outcomes(trials, ())
    out: list[str] = []
    walks = _walks(plan)
    for walk in walks:
        prefix = ""
        if len(walks) > 1:
            others = [n for n, _v in plan.axes if n != axis]
            prefix = ", ".join(f"{n}={v}" for n, v in zip(others, walk.key, strict=True)) + ": "
        good, bad = _good_bad(plan, walk, axis, status)
        said = axis  # the engine's own key
        if plan.strategy is StrategyKind.BOUNDARY:
            out.append(prefix + _boundary_sentence(said, good, bad))
        else:
            out.append(prefix + _plateau_sentence(plan, walk, axis, status, trials, said))
    return (*out, *ties)


def boundary_result(
    plan: SweepPlan, trials: Sequence[TrialRecord]
) -> tuple[Any | None, Any | None]:
    """(largest value that loads, smallest that fails) on the first walk of the walk axis."""
    axis = plan.walk_axis
    if axis is None:
        return None, None
    status, _blocked = _outcomes(trials, ())
    walk = _walks(plan)[0]
    good, bad = _good_bad(plan, walk, axis, status)
    hi = min(bad) if bad else None
    below = [g for g in good if hi is None or g < hi]
    return (max(below) if below else None), hi


def _boundary_sentence(axis: str, good: list[Any], bad: list[Any]) -> str:
    hi = min(bad) if bad else None
    below = [g for g in good if hi is None or g < hi]
    lo = max(below) if below else None
    if hi is None and lo is None:
        return f"{axis}: nothing tried yet"
    if hi is None:
        return f"{axis}: every value tried loads (largest tried: {lo}); no boundary found"
    if lo is None:
        return f"{axis}: even {hi} fails; nothing smaller was tried"
    if hi - lo == 1:
        return f"{axis}: the largest value that loads is {lo} ({hi} fails)"
    return f"{axis}: the boundary lies between {lo} (loads) and {hi} (fails); not narrowed yet"


def _plateau_sentence(
    plan: SweepPlan,
    walk: _Walk,
    axis: str,
    status: dict[ServerConfig, TrialStatus],
    trials: Sequence[TrialRecord],
    said: str = "",
) -> str:
    said = said or axis
    best: TrialRecord | None = None
    for t in trials:
        if t.status in SUCCESS and _same_walk(plan, walk, axis, t.config):
            s = t.single_request_tok_s or 0.0
            if best is None or s > (best.single_request_tok_s or 0.0):
                best = t
    if best is None:
        return f"{said}: no successful trial"
    value = getattr(best.config, axis)
    speed = best.single_request_tok_s or 0.0
    return (
        f"{said}: best single-request speed at {value} ({speed:.1f} tok/s); gains below "
        f"{plan.min_gain_pct:g}% or a falling aggregate end the climb"
    )


def _same_walk(plan: SweepPlan, walk: _Walk, axis: str, config: ServerConfig) -> bool:
    """True when ``config`` lies on ``walk`` (equal except on the axis and derived fields)."""
    here = plan.underived(set_values(config, **{axis: getattr(walk.base, axis)}))
    return here == plan.underived(walk.base)
