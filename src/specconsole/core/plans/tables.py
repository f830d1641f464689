"""The TOML tables of a plan file: ``[server]``, ``[bench]`` and ``[sweep.axes]``.

Why its own module: each section has its own strict rules (TOML-typed numbers, ranges
expanded with a cap, ``[bench]`` placement and URL), and they are reused outside plan files:
session records store a ``ServerConfig`` as a ``[server]`` table
(:func:`server_config_from_table` / :func:`server_config_to_table`). Every error is a
``PlanError`` naming the TOML key and the fix. :mod:`specconsole.core.plans.parse` assembles
these into a :class:`~specconsole.core.plans.plan.SweepPlan`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import MISSING, fields
from typing import Any

from specconsole.core.config.bounds import (
    BENCH_BOUNDS,
    MAX_LADDER_LEVELS,
    PLAN_LIMITS,
    bound_problem,
    limit_problem,
    parse_choice,
)
from specconsole.core.config.errors import ConfigError
from specconsole.core.config.inputs import url_problem
from specconsole.core.config.issues import Issue
from specconsole.core.config.model import (
    FIELD_KINDS,
    ServerConfig,
    config_from_table,
    config_to_table,
    deprecation,
    key_name,
    option_fields,
    parse_field,
)
from specconsole.core.config.options import parse_option
from specconsole.core.config.releases import parse_version
from specconsole.core.engine.registry import EngineNotFound, default_engine, get_engine
from specconsole.core.measure.slo import Slo
from specconsole.core.plans.plan import PlanError
from specconsole.core.plans.schema import DERIVED_BENCH_FIELDS, table_keys, unknown_key_message
from specconsole.core.ports import BenchApi, BenchSpec, Placement

# --------------------------------------------------------------------------------------------
# ServerConfig <-> TOML table
# --------------------------------------------------------------------------------------------

_NUMERIC_KINDS = {"int": "an integer", "float": "a number"}


def _plan_error(where: str, exc: ConfigError) -> PlanError:
    return PlanError(f"{where}: {exc.message} Fix: {exc.fix}")


def _plain_kind(engine: str, name: str) -> str | None:
    """The kind of a shared field or of one of ``engine``'s plain keys (``None``: another)."""
    name = key_name(engine, name)
    own = option_fields(engine).get(name)
    if own is not None:
        return own.kind if own.plain else None
    kind = FIELD_KINDS.get(name)
    return kind.value if kind is not None else None


def _check_toml_typed(engine: str, name: str, value: Any, where: str) -> None:
    """A plan is a file, not editor text: a quoted number is a mistake to report, not to
    guess at (``core.config.model.parse_field`` also accepts ``"4"`` for the editor's sake)."""
    kind = _plain_kind(engine, name)
    if kind in _NUMERIC_KINDS and isinstance(value, str):
        raise PlanError(f"{where} must be {_NUMERIC_KINDS[kind]}, got {value!r}")


def coerce_config_value(name: str, value: Any, where: str) -> Any:
    """One TOML value for shared field ``name`` (an axis value), converted by
    ``core.config.model.parse_field``; raises PlanError naming ``where``."""
    if name not in FIELD_KINDS:
        known = ", ".join(sorted(FIELD_KINDS))
        raise PlanError(f"{where}: unknown server argument {name!r}; known: {known}")
    _check_toml_typed("", name, value, where)
    try:
        return parse_field(name, value)
    except ConfigError as exc:
        raise _plan_error(where, exc) from None


def server_config_from_table(
    table: Mapping[str, Any], section: str = "server", notes: list[Issue] | None = None
) -> ServerConfig:
    """A ``ServerConfig`` from a TOML table of its engine's argument names
    (``core.config.model``'s ``config_from_table``, with TOML-typed numbers and errors naming
    ``[section] key``; deprecation notices into ``notes`` when given)."""
    if not isinstance(table, Mapping):
        raise PlanError(f"[{section}] must be a table")
    if "model_path" not in table:
        raise PlanError(
            f'[{section}] model_path is required, e.g. model_path = "Qwen/Qwen3.5-122B-A10B"'
        )
    engine = table.get("engine")
    engine = engine.strip().lower() if isinstance(engine, str) else default_engine()
    for key, value in table.items():
        _check_toml_typed(engine, key, value, f"[{section}] {key}")
    try:
        config = config_from_table(table, notes)
    except ConfigError as exc:
        key = exc.key.removeprefix("server.")
        raise _plan_error(f"[{section}] {key}", exc) from None
    check_release(config.engine, config.engine_version, f"[{section}] engine_version")
    return config


def check_release(engine: str, version: Any, where: str) -> None:
    """A declared ``engine_version`` is a release number of ``engine``'s: every render reads
    it as one to spell the flags (``core.config.releases``), so a plan saying ``"0"`` is
    refused as it is read, naming ``where`` and the fix, not by a traceback from render."""
    wrong = not_a_release(engine, version)
    if wrong is not None:
        title, newest = wrong
        raise PlanError(
            f"{where}: {version!r} is not a {title} release number. Fix: write the release on "
            f'the box, e.g. engine_version = "{newest}", or remove it (the box is asked before '
            "trial 1)"
        )


def not_a_release(engine: str, version: Any) -> tuple[str, str] | None:
    """(the engine's title, its newest vouched release) when ``version`` is given and is not
    one of ``engine``'s release numbers; None when it is, or when the engine tracks no
    releases (llama.cpp: its box's ``--help`` decides, its rules refuse the key)."""
    if version is None:
        return None
    try:
        engine_def = get_engine(engine)
    except EngineNotFound:
        return None  # the engine key's own error says it
    known = engine_def.releases.known
    try:
        parse_version(str(version))
    except ValueError:
        return (engine_def.title, known[-1]) if known else None
    return None


server_config_to_table = config_to_table
"""The inverse of :func:`server_config_from_table` (``core.config.model.config_to_table``)."""


# --------------------------------------------------------------------------------------------
# Plan parsing


def check_keys(table: Mapping[str, Any], allowed: set[str], section: str) -> None:
    """Refuse a key ``section`` does not know, with the closest known one (a misspelt
    ``[sweeep]`` must not pass as an unrelated error later)."""
    for key in table:
        if key not in allowed:
            raise PlanError(unknown_key_message(section, key, allowed))


def plan_number(value: Any, where: str, *, integer: bool = False, minimum: float = 0.0) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PlanError(f"{where} must be a number, got {value!r}")
    if integer and not isinstance(value, int):
        raise PlanError(f"{where} must be an integer, got {value!r}")
    if problem := limit_problem(where, value, PLAN_LIMITS.get(where, math.inf)):
        raise PlanError(problem)  # inf, NaN, or above core.config.bounds' limit
    if value <= minimum:
        raise PlanError(f"{where} must be greater than {minimum:g}, got {value!r}")
    return value


def bench_number(key: str, value: Any, where: str) -> Any:
    """A ``[bench]`` number within ``core.config.bounds.BENCH_BOUNDS[key]`` (the same bound
    ``specconsole bench``'s option has); TOML-typed: an integer field takes no float."""
    bound = BENCH_BOUNDS[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PlanError(f"{where} must be a number, got {value!r}")
    if bound.integer and not isinstance(value, int):
        raise PlanError(f"{where} must be an integer, got {value!r}")
    if problem := bound_problem(where, value, bound):
        raise PlanError(problem)
    return value if bound.integer else float(value)


_BENCH_PLACEMENT_KEYS = {"placement", "url"}  # of core.plans.schema.BENCH_PLACEMENT_KEYS
"""``[bench]`` keys that say where the load runs (the rest are ``BenchSpec`` fields)."""


def parse_placement(table: Mapping[str, Any]) -> tuple[Placement, str | None]:
    placement = Placement.FORWARD
    if "placement" in table:
        placement = parse_choice(Placement, table["placement"], "[bench] placement", PlanError)
    url = table.get("url")
    if url is None:
        return placement, None
    if placement is not Placement.DIRECT:
        raise PlanError(
            f'[bench] url is only used with placement = "direct" (placement is '
            f'"{placement.value}"); remove url or set placement = "direct"'
        )
    if problem := url_problem(url, "[bench] url"):  # the rule bench's URL argument follows
        raise PlanError(f"{problem} (the server as this machine reaches it)")
    return placement, url.rstrip("/")


_DERIVED_BENCH_FIELDS = DERIVED_BENCH_FIELDS


def parse_bench(table: Mapping[str, Any]) -> BenchSpec:
    if not isinstance(table, Mapping):
        raise PlanError("[bench] must be a table, e.g. [bench] then ladder = [1, 4, 16]")
    known = {f.name: f for f in fields(BenchSpec) if f.name not in _DERIVED_BENCH_FIELDS}
    check_keys(table, set(table_keys("bench")), "[bench]")
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
            if len(value) > MAX_LADDER_LEVELS:
                raise PlanError(
                    f"{where} has {len(value)} levels, above the limit of {MAX_LADDER_LEVELS}; "
                    "fix: keep the concurrencies that matter (each level runs for duration_s)"
                )
            for level in value:
                bench_number("ladder", level, "[bench] ladder level")
            kw[key] = tuple(value)
        elif key == "api":
            kw[key] = parse_choice(BenchApi, value, where, PlanError)
        elif key in (
            "requests_per_level",
            "input_len",
            "output_len",
            "seed",
            "warmup_requests",
            "duration_s",
            "request_rate",
            "request_timeout_s",
            "stall_timeout_s",
            "temperature",
            "range_ratio",
            "repeats",
            "window_s",
            "window_tokens",
        ):
            kw[key] = bench_number(key, value, where)
        elif key == "flush_cache":
            if not isinstance(value, bool):
                raise PlanError(f"{where} must be true or false")
            kw[key] = value
        elif key in ("prompts", "model", "dataset"):
            if not isinstance(value, str) or not value:
                raise PlanError(f"{where} must be a non-empty string")
            kw["prompts" if key == "dataset" else key] = value
        elif key == "percentiles":
            if not isinstance(value, list) or not value:
                raise PlanError(f"{where} must be a list of percentiles, e.g. [50, 90, 99, 99.9]")
            kw[key] = tuple(bench_number(key, q, where) for q in value)
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
                    f'api_key = "env:SERVER_API_KEY" (a plan never holds the key itself)'
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
        elif key == "window":
            if value not in ("completed", "steady"):
                raise PlanError(
                    f'{where} must be "completed" (bench_serving\'s metrics over finished '
                    'requests) or "steady" (a steady-state window of streamed tokens), got '
                    f"{value!r}"
                )
            kw[key] = value
        elif key == "output_details":
            if not isinstance(value, bool):
                raise PlanError(f"{where} must be true or false")
            kw[key] = value
        else:  # pragma: no cover - every BenchSpec field is handled above
            default = known[key].default
            kw[key] = value if default is MISSING else type(default)(value)
    # no output_len: a dataset's recorded answers set each request's (bench_serving's ShareGPT
    # default); an explicit one fixes them all
    kw["output_len_from_dataset"] = "output_len" not in table
    return _checked_window(BenchSpec(**kw))


def _checked_window(spec: BenchSpec) -> BenchSpec:
    """Refuse ``[bench]`` keys that contradict the measurement window."""
    if spec.window != "steady":
        if spec.window_s is not None or spec.window_tokens is not None:
            raise PlanError(
                '[bench] window_s / window_tokens only apply with window = "steady"; add '
                'window = "steady" or remove them'
            )
        return spec
    clashes = [
        key
        for key in ("request_rate", "duration_s", "requests_per_level")
        if getattr(spec, key) is not None
    ]
    if clashes:
        raise PlanError(
            f'[bench] {", ".join(clashes)} cannot be combined with window = "steady" (each '
            "level keeps c streams in flight and ends with its window: window_s, "
            'window_tokens); remove them or use window = "completed"'
        )
    return spec


def parse_axes(
    table: Any, base: ServerConfig, notes: list[Issue] | None = None
) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """The axes, each named by its key (an axis under a key's former name is read as the key,
    with a deprecation notice into ``notes``)."""
    if not isinstance(table, Mapping):
        raise PlanError("[sweep.axes] must be a table of key = [values], e.g. port = [1, 2]")
    axes: list[tuple[str, tuple[Any, ...]]] = []
    for written, values in table.items():
        where = f"[sweep.axes] {written}"
        name = _axis_name(base.engine, written, notes)
        if name in ("model_path", "description"):
            raise PlanError(f"{where}: {name} cannot be swept; put it in [server]")
        if isinstance(values, Mapping):
            values = _axis_range(values, where)
        if not isinstance(values, list) or not values:
            raise PlanError(
                f"{where} must be a non-empty list of values, e.g. [1, 2, 3], or a range, "
                "e.g. { min = 0.80, max = 0.92, step = 0.02 }"
            )
        coerced = tuple(_axis_value(base, name, v, f"{where}[{i}]") for i, v in enumerate(values))
        if len(set(coerced)) != len(coerced):
            raise PlanError(f"{where} lists a value twice")
        axes.append((name, coerced))
    return tuple(axes)


def _axis_value(base: ServerConfig, name: str, value: Any, where: str) -> Any:
    """An axis value of a shared field, or of one of the base engine's keys
    (``core.config.options``: SGLang's ``speculative_num_steps``, llama.cpp's
    ``spec_draft_n_max``)."""
    own = option_fields(base.engine)
    if name not in own:
        coerced = coerce_config_value(name, value, where)
        if name == "engine_version":
            check_release(base.engine, coerced, where)
        return coerced
    _check_toml_typed(base.engine, name, value, where)
    if (
        own[name].kind in ("int", "float")
        and isinstance(value, str)
        and value not in own[name].choices
    ):
        raise PlanError(f"{where} must be a number, got {value!r}")
    try:
        return parse_option(own[name], value, key=where)
    except ConfigError as exc:
        raise _plan_error(where, exc) from None


def _axis_name(engine: str, written: Any, notes: list[Issue] | None) -> Any:
    """An axis's key: a former name of one of ``engine``'s keys as that key (noticed)."""
    if not isinstance(written, str):
        return written
    name = key_name(engine, written)
    field = option_fields(engine).get(name)
    if field is not None and written in field.former:
        if notes is not None:
            notes.append(deprecation(engine, written, name, "[sweep.axes]"))
        return name
    return written


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
