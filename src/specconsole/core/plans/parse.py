"""Plan files: the TOML file that says what to try, how to measure it and when to stop.

Why a plan file: the seed workflow is "try steps 1, 2, 3, 4, 5, 10 at topk 1 and benchmark
each at concurrency 1/4/16/32/64". Writing that down once (base configuration, the axes to
vary, the ladder, the strategy, budgets, crash policy) makes a sweep repeatable, resumable
and reviewable, and lets the console, the headless mode and the tests run the very same thing.

Parsing is pure (text in, :class:`~specconsole.core.plans.plan.SweepPlan` out) and strict: an
unknown key, a wrong type or an impossible value raises ``PlanError`` whose message names the
TOML key and the fix, never a ``KeyError`` from deep inside a sweep; the per-section rules
live in :mod:`specconsole.core.plans.tables`. Example (see ``examples/demo-sweep.toml``)::

    name = "steps sweep"

    [host]                       # core.plans.profile: where the box is
    transport = "ssh"
    alias = "gpu-box"

    [service]                    # core.plans.profile: how the server runs there
    kind = "systemd"
    unit = "sglang.service"

    [server]                     # the base ServerConfig, in the engine's own names
    model_path = "Qwen/Qwen3.5-122B-A10B"
    speculative_algorithm = "EAGLE3"
    tp_size = 4

    [sweep]
    strategy = "boundary"        # grid | boundary | plateau
    axis = "speculative_num_steps"
    on_crash = "pause"           # pause | auto
    max_trials = 20
    max_wall_minutes = 240
    load_timeout = 900           # seconds

    [sweep.axes]
    speculative_num_steps = [1, 2, 3, 4, 5, 10]
    speculative_eagle_topk = [1]

    [bench]                      # BenchSpec, plus where the load runs
    ladder = [1, 4, 16, 32, 64]
    placement = "forward"        # forward (default) | direct | remote

Placeholders: ``{python}`` in ``launcher``, ``extra_args``, ``env`` values and
``working_directory`` stands for "the Python interpreter running specconsole", and
``[server] port = "auto"`` for "a free loopback port" (local transport only; ``{port}`` in
``[service] run_dir`` is the server's port, so two such sweeps never share a run folder); the
front end substitutes both at run time with
:func:`specconsole.core.plans.placeholders.resolve_placeholders` (useful when the
"remote" box is this machine, as with the simulator). The port is chosen once per session:
the session records it and a resumed session reuses it (``session.store``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from enum import Enum
from typing import Any

from specconsole.core.config.bounds import parse_choice
from specconsole.core.config.inputs import load_toml
from specconsole.core.config.issues import Issue
from specconsole.core.config.model import ServerConfig, key_name
from specconsole.core.engine.registry import EngineNotFound, get_engine
from specconsole.core.plans.goalparse import goal_document, parse_goal
from specconsole.core.plans.objective import DEFAULT_GOAL, ObjectiveError
from specconsole.core.plans.placeholders import port_in_run_dir
from specconsole.core.plans.plan import (
    AUTO_PORT,
    DEFAULT_PRUNE_MARGIN_PCT,
    FINALLY_CHOICES,
    CrashPolicy,
    PlanError,
    StrategyKind,
    SweepPlan,
)
from specconsole.core.plans.pool import PoolError, parse_boxes
from specconsole.core.plans.profile import (
    Profile,
    ProfileError,
    TransportKind,
    parse_profile,
    profile_for_engine,
)
from specconsole.core.plans.ratespec import RateSpecError, parse_rate_search, rate_search_document
from specconsole.core.plans.schema import check_shape, table_keys
from specconsole.core.plans.tables import (
    check_keys,
    parse_axes,
    parse_bench,
    parse_placement,
    plan_number,
    server_config_from_table,
    server_config_to_table,
)
from specconsole.core.ports import BenchApi, BenchSpec, Placement

PLAN_TABLES = _TOP_KEYS = set(table_keys("plan"))
"""Top-level keys of a plan (declared in ``core.plans.schema``). ``[ui]`` belongs to the
console (theme...) and is ignored here, so one file can be both the console's profile and a
plan."""
_SWEEP_KEYS = set(table_keys("sweep"))


_LOOPBACK_OR_ANY = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0", "::", ""})
"""Server hosts that, seen from another machine, do not name the box."""


def _server_table(
    document: Mapping[str, Any], profile: Profile, notes: list[Issue]
) -> tuple[ServerConfig, bool]:
    """The base configuration and whether its port is ``"auto"`` (then left at the default
    until resolved)."""
    table = document["server"]
    if not (isinstance(table, Mapping) and table.get("port") == AUTO_PORT):
        return server_config_from_table(table, notes=notes), False
    if profile.host.transport is not TransportKind.LOCAL:
        raise PlanError(
            '[server] port = "auto" picks a free port on this machine, so it needs '
            '[host] transport = "local"; for a remote box give the port number, e.g. '
            "port = 30000"
        )
    without_port = {k: v for k, v in table.items() if k != "port"}
    return server_config_from_table(without_port, notes=notes), True


def engine_api(bench: BenchSpec, base: ServerConfig, table: Any) -> BenchSpec:
    """``[bench] api`` for the base's engine: unset, the first API it serves (llama.cpp and
    vLLM have no SGLang ``/generate``); set to one it does not serve, a PlanError."""
    try:
        apis = get_engine(base.engine).endpoints.apis
    except EngineNotFound:
        return bench
    if not apis or bench.api.value in apis:
        return bench
    if isinstance(table, Mapping) and "api" in table:
        raise PlanError(
            f"[bench] api = {bench.api.value!r}: {get_engine(base.engine).title} does not serve "
            f"it; use one of {', '.join(repr(a) for a in apis)}"
        )
    return replace(bench, api=BenchApi(apis[0]))


def parse_plan(document: Mapping[str, Any], *, source: str = "") -> SweepPlan:
    """Build a ``SweepPlan`` from a parsed TOML document. The declared shape decides what is
    a plan (every table, key and value type: ``core.plans.schema``); when it refuses one, the
    table's own reader, where it refuses too, says why in its more specific words (a URL that
    is not a server URL, a port that is not a port number)."""
    try:
        check_shape(document)
    except PlanError as shape:
        try:
            _read_plan(document, source)
        except PlanError:
            raise
        except Exception:  # a reader handed a value of the wrong type: the shape's sentence
            raise shape from None
        raise shape from None
    return _read_plan(document, source)


def _read_plan(document: Mapping[str, Any], source: str) -> SweepPlan:
    """Each table's values, and the rules between them."""
    check_keys(document, _TOP_KEYS, "plan")
    if "server" not in document:
        raise PlanError('the plan needs a [server] table with at least model_path = "..."')
    try:
        profile = parse_profile(document)
    except ProfileError as exc:
        raise PlanError(str(exc)) from None
    try:
        boxes = parse_boxes(document, profile)
    except PoolError as exc:
        raise PlanError(str(exc)) from None
    if boxes and "hosts" in document:
        profile = boxes[0].profile
    notes: list[Issue] = []
    base, auto_port = _server_table(document, profile, notes)
    profile = profile_for_engine(profile, base.engine)
    boxes = tuple(replace(b, profile=profile_for_engine(b.profile, base.engine)) for b in boxes)
    if not auto_port:
        profile = port_in_run_dir(profile, base.port)
    bench = engine_api(parse_bench(document.get("bench", {})), base, document.get("bench", {}))
    placement, bench_url = parse_placement(document.get("bench", {}))
    if (
        placement is Placement.DIRECT
        and bench_url is None
        and profile.host.transport is not TransportKind.LOCAL
        and base.host in _LOOPBACK_OR_ANY
    ):
        raise PlanError(
            f'[bench] placement = "direct" benchmarks from this machine, which cannot reach '
            f"the box's {base.host or 'unset'} host: give [bench] url = "
            '"http://BOX:PORT" (the server as this machine reaches it) or use '
            'placement = "forward"'
        )
    sweep = document.get("sweep", {})
    if not isinstance(sweep, Mapping):
        raise PlanError("[sweep] must be a table")
    check_keys(sweep, _SWEEP_KEYS, "[sweep]")
    axes = parse_axes(sweep.get("axes", {}), base, notes)
    kw: dict[str, Any] = {}
    for key, enum in (("strategy", StrategyKind), ("on_crash", CrashPolicy)):
        if key in sweep:
            kw[key] = parse_choice(enum, sweep[key], f"[sweep] {key}", PlanError)
    axis_names = [name for name, _values in axes]
    if "axis" in sweep:
        axis = key_name(base.engine, sweep["axis"]) if isinstance(sweep["axis"], str) else None
        axis = axis if axis in axis_names else sweep["axis"]
        if axis not in axis_names:
            raise PlanError(
                f"[sweep] axis = {axis!r} is not one of [sweep.axes] "
                f"({', '.join(axis_names) or 'none defined'}); add it there"
            )
        kw["axis"] = axis
    if "min_gain_pct" in sweep:
        kw["min_gain_pct"] = float(plan_number(sweep["min_gain_pct"], "[sweep] min_gain_pct"))
    if "max_trials" in sweep:
        kw["max_trials"] = plan_number(sweep["max_trials"], "[sweep] max_trials", integer=True)
    if "max_wall_minutes" in sweep and "max_wall_s" in sweep:
        raise PlanError("[sweep] give max_wall_minutes or max_wall_s, not both")
    if "max_wall_minutes" in sweep:
        kw["max_wall_s"] = 60.0 * plan_number(sweep["max_wall_minutes"], "[sweep] max_wall_minutes")
    if "max_wall_s" in sweep:
        kw["max_wall_s"] = float(plan_number(sweep["max_wall_s"], "[sweep] max_wall_s"))
    if "load_timeout" in sweep:
        kw["load_timeout_s"] = float(plan_number(sweep["load_timeout"], "[sweep] load_timeout"))
    for key in ("skip_infeasible", "start_at_base", "prune", "baseline"):
        if key in sweep:
            if not isinstance(sweep[key], bool):
                raise PlanError(f"[sweep] {key} must be true or false")
            kw[key] = sweep[key]
    if "min_kv_tokens" in sweep:
        kw["min_kv_tokens"] = plan_number(
            sweep["min_kv_tokens"], "[sweep] min_kv_tokens", integer=True
        )
    try:
        goal = parse_goal(sweep.get("objective"), sweep.get("constraints"))
        goal.check_ladder(bench.ladder)
    except ObjectiveError as exc:
        raise PlanError(str(exc)) from None
    kw["goal"] = goal
    try:
        kw["rate_search"] = parse_rate_search(sweep.get("rate_search"), goal, bench.ladder)
    except RateSpecError as exc:
        raise PlanError(str(exc)) from None
    for key, minimum in (("patience", 0), ("startup_trials", -1), ("seed", -1)):
        if key in sweep:
            kw[key] = plan_number(sweep[key], f"[sweep] {key}", integer=True, minimum=minimum)
    if "finally" in sweep:
        if sweep["finally"] not in FINALLY_CHOICES:
            raise PlanError(
                f"[sweep] finally = {sweep['finally']!r} is not valid; use one of "
                + ", ".join(repr(c) for c in FINALLY_CHOICES)
            )
        kw["finally_action"] = sweep["finally"]
    if "prune_margin_pct" in sweep:
        kw["prune_margin_pct"] = float(
            plan_number(sweep["prune_margin_pct"], "[sweep] prune_margin_pct", minimum=-1e-12)
        )
    if "noise_pct" in sweep:
        kw["noise_pct"] = float(
            plan_number(sweep["noise_pct"], "[sweep] noise_pct", minimum=-1e-12)
        )
    if "what_if_accept_length" in sweep:
        kw["what_if_accept"] = _accept_lengths(sweep["what_if_accept_length"])
    strategy = kw.get("strategy", StrategyKind.GRID)
    if "proof_dataset" in sweep:
        kw["proof_dataset"] = _proof_dataset(sweep["proof_dataset"], strategy)
    if strategy is StrategyKind.PER_LEVEL:
        if not axes:
            raise PlanError(
                '[sweep] strategy = "per_level" needs [sweep.axes] with the draft lengths to '
                "measure per level, e.g. speculative_num_steps = [1, 2, 3, 4, 5]"
            )
        if kw.get("prune"):
            raise PlanError(
                '[sweep] strategy = "per_level" reads every level of every candidate: '
                "remove prune = true"
            )
    if strategy in (StrategyKind.OPTIMIZE, StrategyKind.STAGED):
        if not axes:
            raise PlanError(
                f'[sweep] strategy = "{strategy.value}" needs [sweep.axes] with the axes to '
                "search, e.g. speculative_num_steps = { min = 1, max = 10 }"
            )
        kw.setdefault("skip_infeasible", True)  # a predicted crash is not deployed by default
    elif strategy is not StrategyKind.GRID:
        if not axes:
            raise PlanError(
                f'[sweep] strategy = "{strategy.value}" needs [sweep.axes] with the axis to walk'
            )
        walk = kw.get("axis", axis_names[0])
        values = dict(axes)[walk]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            raise PlanError(
                f'[sweep] strategy = "{strategy.value}" walks {walk!r}, which must be numeric'
            )
        if strategy is StrategyKind.BOUNDARY and not all(isinstance(v, int) for v in values):
            raise PlanError(f'[sweep] strategy = "boundary" bisects {walk!r}: use integers')
    for key in ("name", "description"):
        if key in document and not isinstance(document[key], str):
            raise PlanError(f"{key} must be a string")
    return SweepPlan(
        base=base,
        axes=axes,
        bench=bench,
        bench_placement=placement,
        bench_url=bench_url,
        profile=profile,
        auto_port=auto_port,
        name=str(document.get("name", "")),
        description=str(document.get("description", "")),
        source=source,
        boxes=boxes,
        notices=tuple(notes),
        **kw,
    )


def _accept_lengths(value: Any) -> tuple[float, ...]:
    """``[sweep] what_if_accept_length``: one length or a list, each in [1, 64]."""
    values = value if isinstance(value, list) else [value]
    out: list[float] = []
    for v in values:
        number = plan_number(v, "[sweep] what_if_accept_length", minimum=1.0 - 1e-12)
        if number > 64:
            raise PlanError(
                f"[sweep] what_if_accept_length = {number:g} is above 64 tokens per verify "
                "step; give the accept length to assume, e.g. 4.5"
            )
        out.append(float(number))
    if not out:
        raise PlanError("[sweep] what_if_accept_length is empty; give e.g. 4.5 or [3.5, 4.5]")
    return tuple(out)


def _proof_dataset(value: Any, strategy: StrategyKind) -> str:
    """``[sweep] proof_dataset``: a workload (as ``[bench] dataset``) for a schedule's proof."""
    if strategy is not StrategyKind.PER_LEVEL:
        raise PlanError(
            "[sweep] proof_dataset is the schedule's proof on another workload: it needs "
            'strategy = "per_level" (or remove it)'
        )
    if not isinstance(value, str) or not value.strip():
        raise PlanError(
            '[sweep] proof_dataset must name a workload, e.g. "alternating:coding,prose" '
            '(coding and prose phases) or "prose"'
        )
    return value.strip()


def _plain(value: Any) -> Any:
    """Dataclass field values as TOML values (enums → strings, tuples → lists)."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _table(obj: Any) -> dict[str, Any]:
    return {
        f.name: _plain(getattr(obj, f.name))
        for f in fields(obj)
        if getattr(obj, f.name) is not None
    }


def _bench_keys_left_out(plan: SweepPlan) -> set[str]:
    """``[bench]`` fields the document leaves out: the headers (written as a table), the
    derived ``output_len_from_dataset``, and ``output_len`` when a dataset's answers set it
    (a plan without ``output_len`` reads back as the same spec)."""
    out = {"headers", "output_len_from_dataset"}
    if plan.bench.output_len_from_dataset:
        out.add("output_len")
    return out


def plan_document(plan: SweepPlan) -> dict[str, Any]:
    """The plan as a TOML document that :func:`parse_plan` reads back to an equal plan
    (used when a plan was built in code and has no ``source`` text to keep)."""
    sweep: dict[str, Any] = {
        "strategy": plan.strategy.value,
        "min_gain_pct": plan.min_gain_pct,
        "on_crash": plan.on_crash.value,
        "load_timeout": plan.load_timeout_s,
        "skip_infeasible": plan.skip_infeasible,
        "finally": plan.finally_action,
        "axes": {name: _plain(values) for name, values in plan.axes},
    }
    if plan.axis is not None:
        sweep["axis"] = plan.axis
    if plan.max_trials is not None:
        sweep["max_trials"] = plan.max_trials
    if plan.max_wall_s is not None:
        sweep["max_wall_s"] = plan.max_wall_s
    if plan.min_kv_tokens is not None:
        sweep["min_kv_tokens"] = plan.min_kv_tokens
    if plan.strategy is StrategyKind.OPTIMIZE:
        sweep.update(
            patience=plan.patience,
            noise_pct=plan.noise_pct,
            start_at_base=plan.start_at_base,
            seed=plan.seed,
        )
        if plan.startup_trials is not None:
            sweep["startup_trials"] = plan.startup_trials
    if plan.goal != DEFAULT_GOAL:
        sweep.update(goal_document(plan.goal))
    if plan.prune is not None:
        sweep["prune"] = plan.prune
    if plan.baseline is not None:
        sweep["baseline"] = plan.baseline
    if plan.what_if_accept:
        sweep["what_if_accept_length"] = list(plan.what_if_accept)
    if plan.proof_dataset:
        sweep["proof_dataset"] = plan.proof_dataset
    if plan.prune_margin_pct != DEFAULT_PRUNE_MARGIN_PCT:
        sweep["prune_margin_pct"] = plan.prune_margin_pct
    if plan.rate_search is not None:
        sweep["rate_search"] = rate_search_document(plan.rate_search)
    left_out = _bench_keys_left_out(plan)
    return {
        "name": plan.name,
        "description": plan.description,
        "host": _table(plan.profile.host),
        "service": _table(plan.profile.service),
        "server": {
            **server_config_to_table(plan.base),
            **({"port": AUTO_PORT} if plan.auto_port else {}),
        },
        "sweep": sweep,
        "bench": {
            **{k: v for k, v in _table(plan.bench).items() if k not in left_out},
            **({"headers": dict(plan.bench.headers)} if plan.bench.headers else {}),
            "placement": plan.bench_placement.value,
            **({} if plan.bench_url is None else {"url": plan.bench_url}),
        },
    }


def loads_plan(text: str) -> SweepPlan:
    """Parse plan TOML text."""
    document = load_toml(text, "the plan", PlanError)
    return parse_plan(document, source=text)
