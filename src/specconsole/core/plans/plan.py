"""The sweep plan as data: what to try, how to measure it and when to stop.

Why its own module: nearly every package (the machine, strategies, the runtime, sessions,
reports, the console) needs :class:`SweepPlan` and its enums, while only the front ends read
plan files. Keeping the model apart from the TOML reader (:mod:`specconsole.core.plans.parse`,
which documents the file format), the per-section table parsers
(:mod:`specconsole.core.plans.tables`) and placeholder resolution
(:mod:`specconsole.core.plans.placeholders`) keeps each concern small and lets the model be imported
without the parser's dependencies.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from specconsole.core.config.concepts import Concept
from specconsole.core.config.issues import Issue
from specconsole.core.config.model import ServerConfig, option_fields, set_values
from specconsole.core.config.ties import apply_ties, engine_ties
from specconsole.core.plans.modes import CrashPolicy, StrategyKind  # also named from here
from specconsole.core.plans.objective import DEFAULT_GOAL, Goal
from specconsole.core.plans.pool import Box
from specconsole.core.plans.profile import Profile
from specconsole.core.plans.ratespec import RateSearchSpec
from specconsole.core.ports import BenchSpec, Placement


class PlanError(ValueError):
    """The plan is wrong; the message names the key and how to fix it."""


DEFAULT_PRUNE_MARGIN_PCT = 5.0
"""A single benchmark run of the same configuration varies by a few percent (on the
simulated seed box, 2-4 % between sessions with a short steady window), so a candidate is
pruned only when it falls clearly below the best, not within that noise."""


SPECULATIVE_PREFIXES: tuple[str, ...] = ("speculative_", "spec_", "draft_")
"""An axis whose name starts so is about the draft (SGLang's and vLLM's ``speculative_*``,
an engine's own ``spec_*``/``draft_*`` options); every other axis is a capacity axis (the
``staged`` strategy searches those first)."""


_DRAFT_CONCEPTS = frozenset(
    {Concept.METHOD, Concept.DRAFT_MODEL, Concept.DRAFT_LENGTH, Concept.DRAFT_SHAPE}
)


def speculative_axis(name: str, engine: str | None = None) -> bool:
    """Whether axis ``name`` is about the draft: by the concept ``engine`` declares for it
    (vLLM's ``num_speculative_tokens``), else by its name."""
    if engine is not None:
        field = option_fields(engine).get(name)
        if field is not None and field.concept:
            return field.concept in _DRAFT_CONCEPTS
    return name.startswith(SPECULATIVE_PREFIXES)


PRUNING_STRATEGIES: frozenset[StrategyKind] = frozenset(
    {StrategyKind.OPTIMIZE, StrategyKind.STAGED}
)
"""Strategies that prune by default (``[sweep] prune``): searches, whose losers need no full
ladder; a grid, boundary or plateau walk keeps its table complete."""


DEFAULT_LOAD_TIMEOUT_S = 15 * 60.0
"""Generous: a 122B model with CUDA graph capture can take minutes to load."""


AUTO_PORT = "auto"
"""``[server] port = "auto"``: a free loopback port, chosen once per session."""


FINALLY_CHOICES = ("best", "original", "last", "stop")
"""``[sweep] finally``: what the box serves once the sweep has finished (controller.finish)."""


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """A parsed plan. ``axes`` keep their order: the grid varies the last axis fastest."""

    base: ServerConfig
    axes: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    """(ServerConfig field name, values to try), in file order."""
    bench: BenchSpec = field(default_factory=BenchSpec)
    bench_placement: Placement = Placement.FORWARD
    """``[bench] placement``: where the load is generated (docs/benchmark.md)."""
    bench_url: str | None = None
    """``[bench] url`` (direct only): the server as the console host reaches it; default the
    ``[server]`` host and port."""
    strategy: StrategyKind = StrategyKind.GRID
    axis: str | None = None
    """The axis boundary/plateau walk (default: the first axis)."""
    min_gain_pct: float = 3.0
    """Plateau: the smallest single-request gain (percent) worth another step."""
    on_crash: CrashPolicy = CrashPolicy.PAUSE
    max_trials: int | None = None
    max_wall_s: float | None = None
    load_timeout_s: float = DEFAULT_LOAD_TIMEOUT_S
    skip_infeasible: bool = False
    """Skip (record as infeasible) configurations the capacity predictor says will not load;
    otherwise only warn."""
    min_kv_tokens: int | None = None
    """Capacity below which a configuration counts as not loading (default: one full-length
    request, ``bench.input_len + bench.output_len``)."""
    patience: int = 8
    """Optimize: stop after this many loaded (or crashed) trials without an improvement
    beyond the noise."""
    noise_pct: float = 1.0
    """Optimize: an improvement must clear the incumbent by this percentage (on top of the
    confidence intervals, when levels are repeated)."""
    startup_trials: int | None = None
    """Optimize: proposals before the model-guided ones (default: the base alone when the
    search starts at it, else 4 random points)."""
    start_at_base: bool = True
    """Optimize: the first proposal of a search without observations is the base
    configuration (the launch the user knows), not a random point."""
    seed: int = 0
    """Optimize: the sampler's seed (same seed and records, same proposal)."""
    goal: Goal = DEFAULT_GOAL
    """``[sweep] objective`` and ``constraints``: what "best" means (``core.plans.objective``)."""
    finally_action: str = "best"
    """``[sweep] finally``: one of :data:`FINALLY_CHOICES` (``best`` by ``goal``)."""
    prune: bool | None = None
    """``[sweep] prune``: benchmark a candidate first where the objective is decided and stop
    it there when it falls short of the best beyond the noise (None: the strategy's default,
    :attr:`pruning`)."""
    prune_margin_pct: float = DEFAULT_PRUNE_MARGIN_PCT
    """``[sweep] prune_margin_pct``: how far (percent of the best's figure) a candidate must
    fall short at the lead level to be pruned, on top of the best's own repeat spread."""
    rate_search: RateSearchSpec | None = None
    """``[sweep.rate_search]`` when the objective is ``max_rate_under_slo`` (else None)."""
    name: str = ""
    description: str = ""
    profile: Profile = field(default_factory=Profile)
    auto_port: bool = False
    """``[server] port = "auto"`` not resolved yet: ``base.port`` is only the default until
    :func:`resolve_placeholders` is given a ``port`` (a free loopback port of this machine)."""
    source: str = ""
    """The TOML text the plan was parsed from (kept with the session for resume)."""
    placeholders: tuple[tuple[str, str], ...] = ()
    """The ``{name}`` values :func:`resolve_placeholders` substituted (``python``…), so a
    session can re-resolve its plan text into exactly what ran (reports, resume)."""
    boxes: tuple[Box, ...] = ()
    """A pool of boxes (``[[hosts]]`` or ``[pool]``, see core.plans.pool); ``()``: one box, the
    ``[host]``/``[service]`` of ``profile``."""
    baseline: bool | None = None
    """``[sweep] baseline``: measure the base without speculation too (None: the strategy's
    default, :attr:`wants_baseline`)."""
    what_if_accept: tuple[float, ...] = ()
    """``[sweep] what_if_accept_length``: accept lengths at which every static candidate that
    loaded is measured again with its engine's acceptance fixed (a what-if, never mixed with
    the measured acceptance)."""
    proof_dataset: str = ""
    """``[sweep] proof_dataset`` (``strategy = "per_level"``): another workload the schedule's
    proof also runs on — the schedule, the statics it is built from and the engine's
    adaptive contender over its lengths, measured again there (``alternating:coding,prose``:
    high- and low-acceptance phases); '' none."""
    notices: tuple[Issue, ...] = field(default=(), compare=False)
    """What reading the plan noticed without refusing it: a key under its former name (an old
    vLLM plan's ``speculative_num_steps``, read as ``num_speculative_tokens``), a key its
    engine retired. ``validate``, the plan loader and the pre-flight say each one."""

    @property
    def wants_baseline(self) -> bool:
        """Whether the sweep measures the base without speculation: ``baseline`` when given,
        else whenever a schedule is asked for."""
        return (
            self.baseline if self.baseline is not None else self.strategy is StrategyKind.PER_LEVEL
        )

    @property
    def walk_axis(self) -> str | None:
        """The axis boundary/plateau strategies walk."""
        if self.axis is not None:
            return self.axis
        return self.axes[0][0] if self.axes else None

    @property
    def pruning(self) -> bool:
        """Whether trials are pruned: ``prune`` when given, else on for the searches
        (``optimize``, ``staged``) and off for the walks (seed tables stay complete)."""
        return self.prune if self.prune is not None else self.strategy in PRUNING_STRATEGIES

    @property
    def grid_size(self) -> int:
        size = 1
        for _name, values in self.axes:
            size *= len(values)
        return size

    @property
    def estimated_trials(self) -> int:
        """The *n* of "trial i of n": the grid size (a staged plan's two stages, which add
        up: core.search.staged), each static candidate again per what-if acceptance, the
        baseline and a schedule when asked for, capped by ``max_trials``."""
        n = self.grid_size
        if self.strategy is StrategyKind.STAGED:
            stages = [1, 1]
            for name, values in self.axes:
                stages[speculative_axis(name)] *= len(values)
            n = stages[0] + stages[1] - 1
        n *= 1 + len(self.what_if_accept)
        n += int(self.wants_baseline) + int(self.strategy is StrategyKind.PER_LEVEL)
        if self.max_trials is not None:
            n = min(n, self.max_trials)
        return n

    @property
    def minimum_capacity(self) -> int:
        """KV tokens below which a configuration is predicted not to load."""
        if self.min_kv_tokens is not None:
            return self.min_kv_tokens
        return self.bench.input_len + self.bench.output_len

    @property
    def derived_keys(self) -> frozenset[str]:
        """The keys its engine derives (``core.config.ties``: SGLang's draft tokens = steps +
        1 at topk 1) that the plan leaves to it: neither an axis nor set in the base. A plan
        that sweeps steps at topk 1 without naming draft tokens gets them derived per trial.
        """
        names = {name for name, _values in self.axes}
        return frozenset(
            tie.key
            for tie in engine_ties(self.base.engine)
            if tie.key not in names and getattr(self.base, tie.key) is None
        )

    def derive(self, config: ServerConfig) -> ServerConfig:
        """Fill in derived keys (see :attr:`derived_keys`)."""
        derived = self.derived_keys
        return apply_ties(config, derived) if derived else config

    def at(self, config: ServerConfig, **values: Any) -> ServerConfig:
        """``config`` with ``values`` applied and derived fields recomputed."""
        return self.derive(set_values(config, **values))

    def underived(self, config: ServerConfig) -> ServerConfig:
        """``config`` with derived keys blanked (to compare trials on the axes only)."""
        derived = self.derived_keys
        return set_values(config, **dict.fromkeys(derived)) if derived else config

    def grid(self) -> list[ServerConfig]:
        """Every combination of the axes applied to the base, in order."""
        if not self.axes:
            return [self.derive(self.base)]
        names = [name for name, _values in self.axes]
        out: list[ServerConfig] = []
        for combo in itertools.product(*(values for _name, values in self.axes)):
            out.append(self.at(self.base, **dict(zip(names, combo, strict=True))))
        return out
