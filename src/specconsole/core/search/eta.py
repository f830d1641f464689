"""How long the sweep has left: learnt trial costs and the strategy's remaining trials.

Why one pure function: the console's header, the headless lines, the reports and the
machine's wall-time budget must tell the same story, so they all ask :func:`estimate` (and
:func:`budget_refusal`) with the records they have and the time they were given — no view
keeps its own stopwatch.

* **What a trial costs** (:class:`Costs`) is learnt from this session's records: each
  finished trial's phase stamps split it into loading (validate → ready) and benchmarking
  (ready → recorded), and the gaps between trials (the strategy's decision, the next
  deploy's preparation) are measured too. Outcomes cost differently — a loaded trial the
  whole ladder, a crash about a load, a pruned trial a load and one level, an infeasible or
  invalid one nothing — so each is learnt on its own and, until seen, derived from the
  others. Before this session finished a trial the costs come from the box's last session
  (``ControllerState.eta_prior``) or, failing that, from the plan: a fifth of its
  ``load_timeout`` per load and its ladder's planned work (:func:`guess`); such an estimate
  is marked as a guess.
* **What is left** is found by running the strategy itself forward over imagined outcomes:
  each proposal is predicted to load or not by the capacity predictor
  (``core.search.capacity``), recorded as such, and the strategy asked again — so the
  boundary walk's bisection after a predicted crash is counted, and the grid's and the
  stages' remaining points too. ``optimize`` cannot be run forward cheaply: its remaining
  trials are at least the loads until ``patience`` runs out without an improvement (its
  ``startup`` proposals first), which makes that ETA a lower bound (``at_least``); so is a
  ``plateau`` climb's, which stops at the first flat step it cannot foresee. ``max_trials``
  caps the count; ``max_wall_s`` caps the time.
* **The budget**: with ``max_wall_s``, a trial whose expected cost does not fit in the time
  left is not started; :func:`budget_refusal` gives the reason the sweep's end states. It
  acts only on learnt costs (a guess must not end a sweep before its first trial).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import TYPE_CHECKING

from specconsole.core.measure.stats import mean
from specconsole.core.measure.trials import (
    COUNTED_KINDS,
    Phase,
    Remeasure,
    TrialRecord,
    TrialStatus,
)
from specconsole.core.plans.modes import StrategyKind
from specconsole.core.search.capacity import predict_capacity

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig
    from specconsole.core.plans.plan import SweepPlan

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig

LOAD_PHASES = frozenset({Phase.VALIDATING, Phase.DEPLOYING, Phase.RESTARTING, Phase.LOADING})
"""A trial's stamps until its server is ready: what a load costs."""
BENCH_PHASES = frozenset({Phase.READY, Phase.FLUSHING, Phase.BENCHMARKING, Phase.RECORDING})
"""A trial's stamps from ready to recorded: what its benchmark costs."""
FAILED = frozenset({TrialStatus.CRASHED, TrialStatus.LOAD_TIMEOUT, TrialStatus.FAILED})
SKIPS = frozenset({TrialStatus.INFEASIBLE, TrialStatus.INVALID, TrialStatus.SKIPPED})
GUESS_LOAD_SHARE = 0.2
"""Before anything is measured, a load is guessed at this share of ``load_timeout``."""
GUESS_TOK_S = 50.0
"""Before anything is measured, a request is guessed to stream this many tokens/s."""
MAX_LOOKAHEAD = 500
"""Proposals the forward run makes at most (a grid larger than this is counted, not run)."""


@dataclass(frozen=True, slots=True)
class Costs:
    """Seconds a trial costs by how it ends, and where the figures came from."""

    load_s: float
    """Validate → ready of a trial that loaded."""
    bench_s: float
    """Ready → recorded of a trial that ran its ladder."""
    failed_s: float
    """A crash, load timeout or failed operation, start to record."""
    pruned_s: float
    skip_s: float
    """Infeasible or invalid: nothing deployed."""
    gap_s: float
    """From one trial's record to the next trial's start."""
    source: str
    """``this session (N trials)``, ``the box's last session`` or ``a guess from the plan``."""
    guess: bool = False
    mean_s: float | None = None
    """A finished trial's mean cost, whatever its outcome (the gap included): what a trial
    of a search costs on average when its outcome cannot be foreseen (``optimize``: loads,
    crashes and pruned ones mixed). None: the loaded trial's cost stands in."""

    @property
    def any_s(self) -> float:
        return self.mean_s if self.mean_s is not None else self.ok_s + self.gap_s

    @property
    def ok_s(self) -> float:
        return self.load_s + self.bench_s

    def of(self, status: TrialStatus) -> float:
        """Expected seconds of a trial that ends with ``status``, the gap before it included."""
        if status in SKIPS:
            return self.skip_s + self.gap_s
        if status in FAILED:
            return self.failed_s + self.gap_s
        if status is TrialStatus.PRUNED:
            return self.pruned_s + self.gap_s
        return self.ok_s + self.gap_s


def _span(record: TrialRecord, phases: frozenset[Phase]) -> float:
    return sum(
        max(0.0, s.ended_at - s.started_at)
        for s in record.phases
        if s.phase in phases and s.ended_at is not None
    )


def _end(record: TrialRecord) -> float | None:
    ends = [s.ended_at for s in record.phases if s.ended_at is not None]
    if ends:
        return max(ends)
    return record.finished_at


def _total(record: TrialRecord) -> float | None:
    end = _end(record)
    return None if end is None else max(0.0, end - record.started_at)


def learn(trials: Sequence[TrialRecord], source: str = "") -> Costs | None:
    """Costs from finished trial records (None when no trial loaded or failed yet)."""
    done = [t for t in trials if _end(t) is not None and t.status is not TrialStatus.RUNNING]
    loaded = [t for t in done if t.status in (TrialStatus.OK, TrialStatus.DEGRADED)]
    failed = [t for t in done if t.status in FAILED]
    pruned = [t for t in done if t.status is TrialStatus.PRUNED]
    if not loaded and not failed and not pruned:
        return None
    load = mean([_span(t, LOAD_PHASES) for t in (loaded or pruned)]) if loaded or pruned else None
    bench = mean([_span(t, BENCH_PHASES) for t in loaded]) if loaded else None
    fail = mean([_total(t) or 0.0 for t in failed]) if failed else None
    load = load if load is not None else (fail or 0.0)
    fail = fail if fail is not None else load
    bench = bench if bench is not None else 0.0
    prune = mean([_total(t) or 0.0 for t in pruned]) if pruned else None
    skips = [_total(t) or 0.0 for t in done if t.status in SKIPS]
    gaps = [
        b.started_at - end
        for a, b in pairwise(done)
        if (end := _end(a)) is not None and b.started_at >= end
    ]
    return Costs(
        load_s=load,
        bench_s=bench,
        failed_s=fail,
        pruned_s=prune if prune is not None else load + bench / 5.0,
        skip_s=mean(skips) if skips else 0.0,
        gap_s=mean(gaps) if gaps else 0.0,
        source=source or f"this session ({len(done)} trials)",
        mean_s=mean([_total(t) or 0.0 for t in done]) + (mean(gaps) if gaps else 0.0),
    )


def _bench_guess(plan: SweepPlan) -> float:
    spec = plan.bench
    total = 0.0
    for c in spec.ladder:
        if spec.window == "steady":
            level = (spec.window_s or 2.0) + spec.output_len / GUESS_TOK_S / 4.0
        elif spec.duration_s is not None:
            level = spec.duration_s
        else:
            requests = spec.requests_at(c) or c
            level = requests / c * spec.output_len / GUESS_TOK_S
        total += level + spec.warmup_requests * spec.output_len / GUESS_TOK_S
    return total * spec.repeats


def guess(plan: SweepPlan) -> Costs:
    """Costs from the plan alone: a fifth of ``load_timeout`` per load, the ladder's work."""
    load = plan.load_timeout_s * GUESS_LOAD_SHARE
    bench = _bench_guess(plan)
    return Costs(
        load_s=load,
        bench_s=bench,
        failed_s=load,
        pruned_s=load + bench / max(1, len(plan.bench.ladder)),
        skip_s=0.0,
        gap_s=0.0,
        source="a guess from the plan's load_timeout and ladder",
        guess=True,
    )


def costs(plan: SweepPlan, trials: Sequence[TrialRecord], prior: Costs | None = None) -> Costs:
    """This session's costs once a trial finished; before, the box's last session's
    (``prior``) or the plan's guess — both marked as a guess."""
    learnt = learn(trials)
    if learnt is not None:
        return learnt
    if prior is not None:
        return replace(prior, source="the box's last session", guess=True)
    return guess(plan)


def _as_planned(trials: Sequence[TrialRecord]) -> list[TrialRecord]:
    """The records as the plan asked for them: a proposal is a requested configuration,
    and a trial run before the box's release was known left out flags (``portable``)
    that its request names — compared as requested, its capacity still counts."""
    return [replace(t, normalized=None) for t in trials]


def predicted_status(
    plan: SweepPlan, trials: Sequence[TrialRecord], config: ServerConfig
) -> TrialStatus:
    """How a proposal is expected to end: skipped or crashed when the capacity predictor
    says it will not load, else loaded."""
    prediction = predict_capacity(_as_planned(trials), config, minimum_tokens=plan.minimum_capacity)
    if prediction.feasible:
        return TrialStatus.OK
    return TrialStatus.INFEASIBLE if plan.skip_infeasible else TrialStatus.CRASHED


def _imagined(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    config: ServerConfig,
    status: TrialStatus,
    remeasure: Remeasure | None = None,
) -> TrialRecord:
    """A record of an outcome not yet seen (its capacity as predicted, so later proposals
    are predicted from it as from a measured one; a re-measure recorded as one, so it is
    not proposed again)."""
    prediction = predict_capacity(_as_planned(trials), config, minimum_tokens=plan.minimum_capacity)
    loaded = status is TrialStatus.OK
    return TrialRecord(
        index=len(trials),
        config=config,
        status=status,
        capacity=prediction.predicted_tokens if loaded else None,
        remeasure=remeasure,
    )


@dataclass(frozen=True, slots=True)
class Ahead:
    """The trials a strategy is expected to run still, with their expected outcomes."""

    statuses: tuple[TrialStatus, ...]
    at_least: bool
    """A lower bound (optimize's patience, a plateau's unforeseeable stop)."""


def ahead(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    skipped: Iterable[ServerConfig] = (),
    limit: int | None = None,
) -> Ahead:
    """The remaining trials after ``trials`` (the running one included in them), at most
    ``limit`` (``max_trials`` left)."""
    cap = MAX_LOOKAHEAD if limit is None else max(0, min(limit, MAX_LOOKAHEAD))
    if plan.strategy is StrategyKind.OPTIMIZE:
        from specconsole.core.search import optimize  # Optuna: only for an optimize plan

        loads = sum(1 for t in trials if t.status in optimize.LOADS)
        left = max(plan.patience - optimize.stale_trials(plan, trials), 0)
        left = max(left, optimize.startup(plan) - loads)
        if optimize.converged(plan, trials):
            left = 0
        return Ahead((TrialStatus.OK,) * min(left, cap), at_least=True)
    from specconsole.core.search.strategy import next_trial  # with the first estimate

    imagined = list(trials)
    skipped = list(skipped)
    out: list[TrialStatus] = []
    while len(out) < cap:
        proposal = next_trial(plan, imagined, skipped)
        if proposal is None:
            break
        status = predicted_status(plan, imagined, proposal.config)
        out.append(status)
        imagined.append(_imagined(plan, imagined, proposal.config, status, proposal.remeasure))
    return Ahead(tuple(out), at_least=plan.strategy is StrategyKind.PLATEAU)


@dataclass(frozen=True, slots=True)
class Eta:
    """The sweep's expected end, for every view."""

    remaining_s: float
    trials_left: int
    """Trials still to start (the running one not included)."""
    at_least: bool
    guess: bool
    basis: str
    """Where the costs came from (``this session (2 trials)`` …)."""
    capped: bool = False
    """The wall-time budget ends the sweep before the strategy would."""


def _current_left(costs_: Costs, current: TrialRecord, now: float) -> float:
    """What the running trial still needs: its expected cost less the time it has run."""
    status = TrialStatus.OK
    if current.predicted is not None and not current.predicted.feasible:
        status = TrialStatus.CRASHED
    expected = costs_.of(status) - costs_.gap_s
    return max(0.0, expected - max(0.0, now - current.started_at))


def estimate(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    *,
    now: float,
    started_at: float | None = None,
    current: TrialRecord | None = None,
    prior: Costs | None = None,
    skipped: Iterable[ServerConfig] = (),
    counted_before: int = 0,
) -> Eta:
    """The time left until the sweep ends, at wall-clock ``now``. ``current`` is the trial
    in progress (not in ``trials``); ``started_at`` when this run of the sweep began (the
    wall-time budget counts from there); ``counted_before`` trials of other boxes of a pool
    that count against ``max_trials``."""
    c = costs(plan, trials, prior)
    known = list(trials)
    left_now = 0.0
    if current is not None:
        left_now = _current_left(c, current, now)
        status = predicted_status(plan, trials, current.config)
        known.append(_imagined(plan, trials, current.config, status))
    limit = None
    if plan.max_trials is not None:
        counted = counted_before + sum(1 for t in known if t.kind in COUNTED_KINDS)
        limit = max(0, plan.max_trials - counted)
    rest = ahead(plan, known, skipped, limit)
    if plan.strategy is StrategyKind.OPTIMIZE:  # outcomes unforeseen: the mean trial's cost
        remaining = left_now + len(rest.statuses) * c.any_s
    else:
        remaining = left_now + sum(c.of(s) for s in rest.statuses)
    capped = False
    if plan.max_wall_s is not None and started_at is not None:
        wall_left = max(0.0, plan.max_wall_s - (now - started_at))
        if remaining > wall_left:
            remaining, capped = wall_left, True
    return Eta(
        remaining_s=remaining,
        trials_left=len(rest.statuses),
        at_least=rest.at_least,
        guess=c.guess,
        basis=c.source,
        capped=capped,
    )


def budget_refusal(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    config: ServerConfig,
    *,
    now: float,
    started_at: float | None,
    prior: Costs | None = None,
) -> str:
    """Why ``config`` is not started ('' when it may be): with ``max_wall_s`` and learnt
    costs (this session's or the box's last), its expected cost exceeds the time left."""
    if plan.max_wall_s is None or started_at is None:
        return ""
    c = learn(trials) or (None if prior is None else replace(prior, guess=True))
    if c is None:
        return ""
    need = c.of(predicted_status(plan, trials, config))
    left = plan.max_wall_s - (now - started_at)
    if need <= left:
        return ""
    return (
        f"max wall time: the next trial needs about {need:,.0f} s and {max(left, 0.0):,.0f} s "
        f"of the {plan.max_wall_s / 60:g} min budget are left (trial costs from {c.source})"
    )


__all__ = [
    "Ahead",
    "Costs",
    "Eta",
    "ahead",
    "budget_refusal",
    "costs",
    "estimate",
    "guess",
    "learn",
    "predicted_status",
]
