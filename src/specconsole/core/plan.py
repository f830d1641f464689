"""Sweep plans: the TOML file that says what to try, how to measure it and when to stop.

Why a plan file: the seed workflow is "try steps 1, 2, 3, 4, 5, 10 at topk 1 and benchmark
each at concurrency 1/4/16/32/64". Writing that down once (base configuration, the axes to
vary, the ladder, the strategy, budgets, crash policy) makes a sweep repeatable, resumable
and reviewable, and lets the console, the headless mode and the tests run the very same thing.

Parsing is pure (text in, ``SweepPlan`` out) and strict: an unknown key, a wrong type or an
impossible value raises ``PlanError`` whose message names the TOML key and the fix, never a
``KeyError`` from deep inside a sweep. Example (see ``examples/demo-sweep.toml``)::

    name = "steps sweep"

    [host]                       # core.profile: where the box is
    transport = "ssh"
    alias = "gpu-box"

    [service]                    # core.profile: how the server runs there
    kind = "systemd"
    unit = "sglang.service"

    [server]                     # the base ServerConfig (SGLang's argument names)
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
front end substitutes both at run time with :func:`resolve_placeholders` (useful when the
"remote" box is this machine, as with the simulator). The port is chosen once per session:
the session records it and a resumed session reuses it (``session.store``).
"""

from __future__ import annotations

import itertools
import math
import tomllib
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from enum import Enum, StrEnum
from typing import Any
from urllib.parse import urlsplit

from specconsole.core.bounds import PLAN_LIMITS, limit_problem
from specconsole.core.config import (
    FIELD_KINDS,
    KEY_ALIASES,
    ConfigError,
    FieldKind,
    ServerConfig,
    config_from_table,
    config_to_table,
    parse_field,
)
from specconsole.core.goalparse import goal_document, parse_goal
from specconsole.core.objective import DEFAULT_GOAL, Goal, ObjectiveError
from specconsole.core.pool import Box, PoolError, parse_boxes
from specconsole.core.ports import BenchApi, BenchSpec, Placement
from specconsole.core.profile import Profile, ProfileError, TransportKind, parse_profile
from specconsole.core.slo import Slo


class CrashPolicy(StrEnum):
    """What happens after a crash."""

    PAUSE = "pause"
    """Wait for the user's decision (``ResumeChoice``)."""
    AUTO = "auto"
    """Record it and continue with the next planned trial."""


class PlanError(ValueError):
    """The plan is wrong; the message names the key and how to fix it."""


class StrategyKind(StrEnum):
    """How the next trial is chosen (see ``core.strategy``)."""

    GRID = "grid"
    """Every combination of the axes, in order."""
    BOUNDARY = "boundary"
    """Walk an integer axis upwards; after a crash at b with success at a, bisect (a, b) to
    find the largest value that loads; values above a crash are not tried."""
    PLATEAU = "plateau"
    """Walk an axis upwards while single-request tok/s gains at least ``min_gain_pct`` and
    peak aggregate tok/s does not fall; stop at the plateau."""
    OPTIMIZE = "optimize"
    """Sample-efficient constrained search over every axis (``core.optimize``): learns where
    loads crash, skips configurations predicted not to load, stops on convergence."""


DEFAULT_LOAD_TIMEOUT_S = 15 * 60.0
"""Generous: a 122B model with CUDA graph capture can take minutes to load."""


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
    startup_trials: int = 4
    """Optimize: space-filling proposals before the model-guided ones."""
    seed: int = 0
    """Optimize: the sampler's seed (same seed and records, same proposal)."""
    goal: Goal = DEFAULT_GOAL
    """``[sweep] objective`` and ``constraints``: what "best" means (``core.objective``)."""
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
    """A pool of boxes (``[[hosts]]`` or ``[pool]``, see core.pool); ``()``: one box, the
    ``[host]``/``[service]`` of ``profile``."""

    @property
    def walk_axis(self) -> str | None:
        """The axis boundary/plateau strategies walk."""
        if self.axis is not None:
            return self.axis
        return self.axes[0][0] if self.axes else None

    @property
    def grid_size(self) -> int:
        size = 1
        for _name, values in self.axes:
            size *= len(values)
        return size

    @property
    def estimated_trials(self) -> int:
        """The *n* of "trial i of n": the grid size, capped by ``max_trials``."""
        n = self.grid_size
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
    def derives_draft_tokens(self) -> bool:
        """True when draft tokens follow the steps (``topk == 1``, draft tokens not given).

        SGLang insists on all three tree sizes or none, and with ``topk == 1`` it forces
        ``draft tokens = steps + 1`` anyway; so a plan that sweeps steps at topk 1 without
        naming draft tokens gets them derived per trial.
        """
        names = {name for name, _values in self.axes}
        return (
            "speculative_num_draft_tokens" not in names
            and self.base.speculative_num_draft_tokens is None
        )

    def derive(self, config: ServerConfig) -> ServerConfig:
        """Fill in derived fields (draft tokens = steps + 1 at topk 1, see above)."""
        if (
            self.derives_draft_tokens
            and config.speculative_eagle_topk == 1
            and config.speculative_num_steps is not None
        ):
            return replace(config, speculative_num_draft_tokens=config.speculative_num_steps + 1)
        return config

    def at(self, config: ServerConfig, **values: Any) -> ServerConfig:
        """``config`` with ``values`` applied and derived fields recomputed."""
        return self.derive(replace(config, **values))

    def underived(self, config: ServerConfig) -> ServerConfig:
        """``config`` with derived fields blanked (to compare trials on the axes only)."""
        if self.derives_draft_tokens:
            return replace(config, speculative_num_draft_tokens=None)
        return config

    def grid(self) -> list[ServerConfig]:
        """Every combination of the axes applied to the base, in order."""
        if not self.axes:
            return [self.derive(self.base)]
        names = [name for name, _values in self.axes]
        out: list[ServerConfig] = []
        for combo in itertools.product(*(values for _name, values in self.axes)):
            out.append(self.at(self.base, **dict(zip(names, combo, strict=True))))
        return out


# --------------------------------------------------------------------------------------------
# ServerConfig <-> TOML table
# --------------------------------------------------------------------------------------------

_NUMERIC_KINDS = {FieldKind.INT: "an integer", FieldKind.FLOAT: "a number"}


def _plan_error(where: str, exc: ConfigError) -> PlanError:
    return PlanError(f"{where}: {exc.message} Fix: {exc.fix}")


def _check_toml_typed(name: str, value: Any, where: str) -> None:
    """A plan is a file, not editor text: a quoted number is a mistake to report, not to
    guess at (``core.config.parse_field`` also accepts ``"4"`` for the editor's sake)."""
    kind = FIELD_KINDS.get(KEY_ALIASES.get(name, name))
    if kind in _NUMERIC_KINDS and isinstance(value, str):
        raise PlanError(f"{where} must be {_NUMERIC_KINDS[kind]}, got {value!r}")


def coerce_config_value(name: str, value: Any, where: str) -> Any:
    """One TOML value for ``ServerConfig.<name>`` (an axis value), converted by
    ``core.config.parse_field``; raises PlanError naming ``where``."""
    if name not in FIELD_KINDS:
        known = ", ".join(sorted(FIELD_KINDS))
        raise PlanError(f"{where}: unknown server argument {name!r}; known: {known}")
    _check_toml_typed(name, value, where)
    try:
        return parse_field(name, value)
    except ConfigError as exc:
        raise _plan_error(where, exc) from None


def server_config_from_table(table: Mapping[str, Any], section: str = "server") -> ServerConfig:
    """A ``ServerConfig`` from a TOML table of SGLang argument names (``core.config``'s
    ``config_from_table``, with TOML-typed numbers and errors naming ``[section] key``)."""
    if not isinstance(table, Mapping):
        raise PlanError(f"[{section}] must be a table")
    if "model_path" not in table:
        raise PlanError(
            f'[{section}] model_path is required, e.g. model_path = "Qwen/Qwen3.5-122B-A10B"'
        )
    for key, value in table.items():
        _check_toml_typed(key, value, f"[{section}] {key}")
    try:
        return config_from_table(table)
    except ConfigError as exc:
        key = exc.key.removeprefix("server.")
        raise _plan_error(f"[{section}] {key}", exc) from None


server_config_to_table = config_to_table
"""The inverse of :func:`server_config_from_table` (``core.config.config_to_table``)."""


# --------------------------------------------------------------------------------------------
# Plan parsing
# --------------------------------------------------------------------------------------------

_TOP_KEYS = {
    "name",
    "description",
    "host",
    "hosts",
    "pool",
    "service",
    "server",
    "sweep",
    "bench",
    "ui",
}
"""Top-level keys of a plan. ``[ui]`` belongs to the console (theme...) and is ignored here,
so one file can be both the console's profile and a plan."""
_SWEEP_KEYS = {
    "strategy",
    "axis",
    "axes",
    "min_gain_pct",
    "on_crash",
    "max_trials",
    "max_wall_minutes",
    "max_wall_s",
    "load_timeout",
    "skip_infeasible",
    "min_kv_tokens",
    "objective",
    "constraints",
    "patience",
    "noise_pct",
    "startup_trials",
    "seed",
}


def _check(table: Mapping[str, Any], allowed: set[str], section: str) -> None:
    for key in table:
        if key not in allowed:
            raise PlanError(
                f"{section}: unknown key {key!r}; known keys: {', '.join(sorted(allowed))}"
            )


def _number(value: Any, where: str, *, integer: bool = False, minimum: float = 0.0) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PlanError(f"{where} must be a number, got {value!r}")
    if integer and not isinstance(value, int):
        raise PlanError(f"{where} must be an integer, got {value!r}")
    if problem := limit_problem(where, value, PLAN_LIMITS.get(where, math.inf)):
        raise PlanError(problem)  # inf, NaN, or above core.bounds' limit
    if value <= minimum:
        raise PlanError(f"{where} must be greater than {minimum:g}, got {value!r}")
    return value


_LOOPBACK_OR_ANY = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0", "::", ""})
"""Server hosts that, seen from another machine, do not name the box."""

_BENCH_PLACEMENT_KEYS = {"placement", "url"}
"""``[bench]`` keys that say where the load runs (the rest are ``BenchSpec`` fields)."""


def _parse_placement(table: Mapping[str, Any]) -> tuple[Placement, str | None]:
    placement = Placement.FORWARD
    if "placement" in table:
        try:
            placement = Placement(table["placement"])
        except ValueError:
            choices = ", ".join(repr(p.value) for p in Placement)
            raise PlanError(
                f"[bench] placement = {table['placement']!r} is not valid; use one of {choices}"
            ) from None
    url = table.get("url")
    if url is None:
        return placement, None
    if placement is not Placement.DIRECT:
        raise PlanError(
            f'[bench] url is only used with placement = "direct" (placement is '
            f'"{placement.value}"); remove url or set placement = "direct"'
        )
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise PlanError(
            f"[bench] url = {url!r} is not a server URL; write it as "
            '"http://HOST:PORT", the server as this machine reaches it'
        )
    try:
        parts.port  # noqa: B018 - raises on a port out of range
    except ValueError:
        raise PlanError(f"[bench] url = {url!r} has an invalid port") from None
    return placement, url.rstrip("/")


def _parse_bench(table: Mapping[str, Any]) -> BenchSpec:
    if not isinstance(table, Mapping):
        raise PlanError("[bench] must be a table, e.g. [bench] then ladder = [1, 4, 16]")
    known = {f.name: f for f in fields(BenchSpec)}
    _check(table, set(known) | _BENCH_PLACEMENT_KEYS | {"dataset"}, "[bench]")
    table = {k: v for k, v in table.items() if k not in _BENCH_PLACEMENT_KEYS}
    kw: dict[str, Any] = {}
    for key, value in table.items():
        where = f"[bench] {key}"
        if key == "ladder":
            if (
                not isinstance(value, list)
                or not value
                or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
            ):
                raise PlanError(f"{where} must be a non-empty list of positive integers")
            for level in value:
                if problem := limit_problem("[bench] ladder level", level, PLAN_LIMITS[where]):
                    raise PlanError(problem)
            kw[key] = tuple(value)
        elif key == "api":
            try:
                kw[key] = BenchApi(value)
            except ValueError:
                choices = ", ".join(repr(m.value) for m in BenchApi)
                raise PlanError(f"{where} = {value!r} is not valid; use one of {choices}") from None
        elif key in ("requests_per_level", "input_len", "output_len", "seed"):
            kw[key] = _number(value, where, integer=True, minimum=0 if key != "seed" else -1)
        elif key == "warmup_requests":
            kw[key] = _number(value, where, integer=True, minimum=-1)
        elif key in ("duration_s", "request_rate", "request_timeout_s", "stall_timeout_s"):
            kw[key] = float(_number(value, where))
        elif key == "temperature":
            kw[key] = float(_number(value, where, minimum=-1e-12))
        elif key == "flush_cache":
            if not isinstance(value, bool):
                raise PlanError(f"{where} must be true or false")
            kw[key] = value
        elif key in ("prompts", "model", "dataset"):
            if not isinstance(value, str) or not value:
                raise PlanError(f"{where} must be a non-empty string")
            kw["prompts" if key == "dataset" else key] = value
        elif key == "range_ratio":
            kw[key] = float(_number(value, where))
            if kw[key] > 1:
                raise PlanError(f"{where} must be in (0, 1]; 1 means fixed lengths")
        elif key == "repeats":
            kw[key] = _number(value, where, integer=True, minimum=0)
        elif key == "percentiles":
            if not isinstance(value, list) or not value:
                raise PlanError(f"{where} must be a list of percentiles, e.g. [50, 90, 99, 99.9]")
            kw[key] = tuple(float(_number(q, where)) for q in value)
            if any(q >= 100 for q in kw[key]):
                raise PlanError(f"{where}: each percentile must be below 100")
        elif key == "slo":
            if not isinstance(value, Mapping):
                raise PlanError(f"{where} must be a table, e.g. slo = {{ ttft_ms = 500 }}")
            try:
                kw[key] = Slo.from_mapping(value, where=where).to_dict()
            except ValueError as exc:
                raise PlanError(str(exc)) from None
        elif key == "api_key":
            if not isinstance(value, str) or not value.startswith("env:") or len(value) < 5:
                raise PlanError(
                    f"{where}: write the environment variable that holds the key, e.g. "
                    f'api_key = "env:SGLANG_API_KEY" (a plan never holds the key itself)'
                )
            kw[key] = value
        elif key == "headers":
            if not isinstance(value, Mapping) or not all(
                isinstance(k, str) and k and isinstance(v, str) for k, v in value.items()
            ):
                raise PlanError(f'{where} must be a table of strings, e.g. {{ X-Team = "a" }}')
            kw[key] = tuple(value.items())
        elif key == "extra_body":
            if not isinstance(value, Mapping):
                raise PlanError(f"{where} must be a table, e.g. extra_body = {{ top_k = 1 }}")
            kw[key] = dict(value)
        elif key == "output_details":
            if not isinstance(value, bool):
                raise PlanError(f"{where} must be true or false")
            kw[key] = value
        else:  # pragma: no cover - every BenchSpec field is handled above
            default = known[key].default
            kw[key] = value if default is MISSING else type(default)(value)
    return BenchSpec(**kw)


def _parse_axes(table: Any, base: ServerConfig) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    if not isinstance(table, Mapping):
        raise PlanError("[sweep.axes] must be a table: speculative_num_steps = [1, 2, 3]")
    axes: list[tuple[str, tuple[Any, ...]]] = []
    for name, values in table.items():
        where = f"[sweep.axes] {name}"
        if name in ("model_path", "description"):
            raise PlanError(f"{where}: {name} cannot be swept; put it in [server]")
        if isinstance(values, Mapping):
            values = _axis_range(values, where)
        if not isinstance(values, list) or not values:
            raise PlanError(
                f"{where} must be a non-empty list of values, e.g. [1, 2, 3], or a range, "
                "e.g. { min = 0.80, max = 0.92, step = 0.02 }"
            )
        coerced = tuple(coerce_config_value(name, v, f"{where}[{i}]") for i, v in enumerate(values))
        if len(set(coerced)) != len(coerced):
            raise PlanError(f"{where} lists a value twice")
        axes.append((name, coerced))
    del base
    return tuple(axes)


MAX_AXIS_VALUES = 1000
"""A range expands to at most this many values (a typo'd step must not eat the memory)."""


def _axis_range(table: Mapping[str, Any], where: str) -> list[Any]:
    """``{ min = 1, max = 10 }`` (integers, step 1) or ``{ min = 0.80, max = 0.92, step =
    0.02 }`` (floats need a step) → the listed values, both ends included."""
    unknown = set(table) - {"min", "max", "step"}
    if unknown or "min" not in table or "max" not in table:
        raise PlanError(
            f"{where}: a range is {{ min = LOW, max = HIGH, step = STEP }} (step optional for "
            f"integers); got keys {', '.join(sorted(table)) or 'none'}"
        )
    lo, hi = table["min"], table["max"]
    step = table.get("step", 1 if isinstance(lo, int) and isinstance(hi, int) else None)
    for key, value in (("min", lo), ("max", hi), ("step", step)):
        if isinstance(value, bool) or not isinstance(value, int | float):
            fix = " (floats need one, e.g. step = 0.02)" if key == "step" else ""
            raise PlanError(f"{where}.{key} must be a number{fix}, got {value!r}")
    if step <= 0 or hi < lo:
        raise PlanError(f"{where}: need min <= max and step > 0 (got {lo}, {hi}, {step})")
    count = round((hi - lo) / step + 1e-9) + 1
    if count > MAX_AXIS_VALUES:
        raise PlanError(
            f"{where}: the range has {count} values (more than {MAX_AXIS_VALUES}); "
            "use a larger step"
        )
    integer = all(isinstance(v, int) for v in (lo, hi, step))
    if integer:
        return [lo + i * step for i in range(count)]
    digits = max(_decimals(lo), _decimals(step))
    return [round(lo + i * step, digits) for i in range(count)]


def _decimals(value: float) -> int:
    text = repr(float(value))
    return len(text.split(".")[1]) if "." in text and "e" not in text else 6


AUTO_PORT = "auto"
"""``[server] port = "auto"``: a free loopback port, chosen once per session."""


def _server_table(document: Mapping[str, Any], profile: Profile) -> tuple[ServerConfig, bool]:
    """The base configuration and whether its port is ``"auto"`` (then left at the default
    until resolved)."""
    table = document["server"]
    if not (isinstance(table, Mapping) and table.get("port") == AUTO_PORT):
        return server_config_from_table(table), False
    if profile.host.transport is not TransportKind.LOCAL:
        raise PlanError(
            '[server] port = "auto" picks a free port on this machine, so it needs '
            '[host] transport = "local"; for a remote box give the port number, e.g. '
            "port = 30000"
        )
    return server_config_from_table({k: v for k, v in table.items() if k != "port"}), True


def _port_in_run_dir(profile: Profile, port: int) -> Profile:
    """``{port}`` in ``[service] run_dir`` is the server's port, so servers of plans on
    different ports (two demos at once) keep their runs, PID files and logs apart."""
    run_dir = profile.service.run_dir
    if "{port}" not in run_dir:
        return profile
    return replace(
        profile, service=replace(profile.service, run_dir=run_dir.replace("{port}", str(port)))
    )


def parse_plan(document: Mapping[str, Any], *, source: str = "") -> SweepPlan:
    """Build a ``SweepPlan`` from a parsed TOML document."""
    _check(document, _TOP_KEYS, "plan")
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
    base, auto_port = _server_table(document, profile)
    if not auto_port:
        profile = _port_in_run_dir(profile, base.port)
    bench = _parse_bench(document.get("bench", {}))
    placement, bench_url = _parse_placement(document.get("bench", {}))
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
    _check(sweep, _SWEEP_KEYS, "[sweep]")
    axes = _parse_axes(sweep.get("axes", {}), base)
    kw: dict[str, Any] = {}
    if "strategy" in sweep:
        try:
            kw["strategy"] = StrategyKind(sweep["strategy"])
        except ValueError:
            raise PlanError(
                f"[sweep] strategy = {sweep['strategy']!r} is not valid; "
                "use one of 'grid', 'boundary', 'plateau', 'optimize'"
            ) from None
    if "on_crash" in sweep:
        try:
            kw["on_crash"] = CrashPolicy(sweep["on_crash"])
        except ValueError:
            raise PlanError(
                f"[sweep] on_crash = {sweep['on_crash']!r} is not valid; use 'pause' or 'auto'"
            ) from None
    axis_names = [name for name, _values in axes]
    if "axis" in sweep:
        axis = sweep["axis"]
        if axis not in axis_names:
            raise PlanError(
                f"[sweep] axis = {axis!r} is not one of [sweep.axes] "
                f"({', '.join(axis_names) or 'none defined'}); add it there"
            )
        kw["axis"] = axis
    if "min_gain_pct" in sweep:
        kw["min_gain_pct"] = float(_number(sweep["min_gain_pct"], "[sweep] min_gain_pct"))
    if "max_trials" in sweep:
        kw["max_trials"] = _number(sweep["max_trials"], "[sweep] max_trials", integer=True)
    if "max_wall_minutes" in sweep and "max_wall_s" in sweep:
        raise PlanError("[sweep] give max_wall_minutes or max_wall_s, not both")
    if "max_wall_minutes" in sweep:
        kw["max_wall_s"] = 60.0 * _number(sweep["max_wall_minutes"], "[sweep] max_wall_minutes")
    if "max_wall_s" in sweep:
        kw["max_wall_s"] = float(_number(sweep["max_wall_s"], "[sweep] max_wall_s"))
    if "load_timeout" in sweep:
        kw["load_timeout_s"] = float(_number(sweep["load_timeout"], "[sweep] load_timeout"))
    if "skip_infeasible" in sweep:
        if not isinstance(sweep["skip_infeasible"], bool):
            raise PlanError("[sweep] skip_infeasible must be true or false")
        kw["skip_infeasible"] = sweep["skip_infeasible"]
    if "min_kv_tokens" in sweep:
        kw["min_kv_tokens"] = _number(sweep["min_kv_tokens"], "[sweep] min_kv_tokens", integer=True)
    try:
        goal = parse_goal(sweep.get("objective"), sweep.get("constraints"))
        goal.check_ladder(bench.ladder)
    except ObjectiveError as exc:
        raise PlanError(str(exc)) from None
    kw["goal"] = goal
    for key, minimum in (("patience", 0), ("startup_trials", -1), ("seed", -1)):
        if key in sweep:
            kw[key] = _number(sweep[key], f"[sweep] {key}", integer=True, minimum=minimum)
    if "noise_pct" in sweep:
        kw["noise_pct"] = float(_number(sweep["noise_pct"], "[sweep] noise_pct", minimum=-1e-12))
    strategy = kw.get("strategy", StrategyKind.GRID)
    if strategy is StrategyKind.OPTIMIZE:
        if not axes:
            raise PlanError(
                '[sweep] strategy = "optimize" needs [sweep.axes] with the axes to search, '
                "e.g. speculative_num_steps = { min = 1, max = 10 }"
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
        **kw,
    )


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


def plan_document(plan: SweepPlan) -> dict[str, Any]:
    """The plan as a TOML document that :func:`parse_plan` reads back to an equal plan
    (used when a plan was built in code and has no ``source`` text to keep)."""
    sweep: dict[str, Any] = {
        "strategy": plan.strategy.value,
        "min_gain_pct": plan.min_gain_pct,
        "on_crash": plan.on_crash.value,
        "load_timeout": plan.load_timeout_s,
        "skip_infeasible": plan.skip_infeasible,
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
            startup_trials=plan.startup_trials,
            seed=plan.seed,
        )
    if plan.goal != DEFAULT_GOAL:
        sweep.update(goal_document(plan.goal))
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
            **{k: v for k, v in _table(plan.bench).items() if k != "headers"},
            **({"headers": dict(plan.bench.headers)} if plan.bench.headers else {}),
            "placement": plan.bench_placement.value,
            **({} if plan.bench_url is None else {"url": plan.bench_url}),
        },
    }


def loads_plan(text: str) -> SweepPlan:
    """Parse plan TOML text."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"the plan is not valid TOML: {exc}") from None
    return parse_plan(document, source=text)


# --------------------------------------------------------------------------------------------
# Placeholders
# --------------------------------------------------------------------------------------------


def _subst(text: str, values: Mapping[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def resolve_config_placeholders(config: ServerConfig, values: Mapping[str, str]) -> ServerConfig:
    """Substitute ``{python}``-style placeholders in the fields that may hold paths."""
    return replace(
        config,
        launcher=_subst(config.launcher, values),
        extra_args=tuple(_subst(a, values) for a in config.extra_args),
        env=tuple((k, _subst(v, values)) for k, v in config.env),
        working_directory=(
            None if config.working_directory is None else _subst(config.working_directory, values)
        ),
    )


def resolve_placeholders(plan: SweepPlan, values: Mapping[str, str]) -> SweepPlan:
    """The plan with placeholders resolved in its base configuration and string axes, and an
    ``"auto"`` port set to ``values["port"]`` (a port already chosen is kept)."""
    port = values.get("port")
    values = {k: v for k, v in values.items() if k != "port"}  # not a {name} in strings
    axes = tuple(
        (
            name,
            tuple(_subst(v, values) if isinstance(v, str) else v for v in vals),
        )
        for name, vals in plan.axes
    )
    base = resolve_config_placeholders(plan.base, values)
    used = dict(plan.placeholders)
    used.update(values)
    placeholders = tuple(sorted(used.items()))
    if not plan.auto_port or port is None:
        return replace(plan, base=base, axes=axes, placeholders=placeholders)
    base = replace(base, port=int(port))
    profile = _port_in_run_dir(plan.profile, base.port)
    return replace(
        plan, base=base, axes=axes, profile=profile, auto_port=False, placeholders=placeholders
    )
