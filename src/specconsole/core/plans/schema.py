"""The plan file's shape, declared once: its tables, their keys and each key's TOML type.

Why: the keys a plan may hold were listed by hand in several modules (``parse``'s top-level
and ``[sweep]`` keys, ``profile``'s and ``pool``'s, ``tables``' ``[bench]`` keys), and an
editor had no way to know them. Here the shape is declared once — ``[host]``, ``[service]``
and ``[bench]`` from the dataclasses they fill (their fields *are* the keys), ``[sweep]`` in
:data:`SWEEP_KEYS`, ``[server]`` from each registered engine's own keys — and three things
are built from it: the key sets the parser checks (:func:`table_keys`), a strict check of a
whole document's shape before any value is read (:func:`check_shape`, with the library's
error turned into the plan's own sentence: the TOML key, the value, the fix and the closest
known key), and the JSON Schema editors complete and check plan files with
(:func:`plan_json_schema`, committed as ``docs/plan-schema.json`` by
``scripts/plan-schema.py``; a test fails when it is stale).

The library is msgspec (README, "Dependencies": measured against pydantic by
``benchmarks/plan_schema_libs.py`` — a fraction of the import and declaration cost, faster
validation, and a path to the failing key, from which the product builds its own message).
It is imported only when a plan is checked or the schema exported, never by the console's
first frame. Values' ranges and the rules between keys stay with the modules that read them
(``tables``, ``profile``, ``pool``, ``goalparse``, ``ratespec``, each engine's options),
which turn a shaped document into a :class:`~specconsole.core.plans.plan.SweepPlan`.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import fields
from enum import Enum
from functools import cache
from typing import Any, Literal

from specconsole.core.config.inputs import did_you_mean
from specconsole.core.plans.modes import FORMER_STRATEGIES
from specconsole.core.plans.plan import FINALLY_CHOICES, CrashPolicy, PlanError, StrategyKind
from specconsole.core.plans.pool import BOX_KEYS, POOL_KEYS
from specconsole.core.plans.profile import HostProfile, ServiceProfile
from specconsole.core.ports import BenchSpec, Placement

Number = int | float
"""A TOML number where a float is meant: ``load_timeout = 900`` is as good as ``900.0``."""

AxisValues = list[Any] | dict[str, Number]
"""``[sweep.axes]``: a list of values, or a range ``{ min, max, step }``."""

SWEEP_KEYS: dict[str, tuple[Any, str]] = {
    "strategy": (
        Literal[(*(s.value for s in StrategyKind), *FORMER_STRATEGIES)],  # type: ignore[misc]
        "How the next trial is chosen (schedule: the former name of per_level).",
    ),
    "axis": (str, "The axis a boundary or plateau walk follows (one of [sweep.axes])."),
    "axes": (dict[str, AxisValues], "The [server] keys to vary: a list or a range."),
    "min_gain_pct": (Number, "A plateau walk stops below this single-request gain (%)."),
    "on_crash": (
        Literal[tuple(c.value for c in CrashPolicy)],  # type: ignore[misc]
        "pause: wait for r; auto: record the crash and go on.",
    ),
    "max_trials": (int, "Stop after this many trials."),
    "max_wall_minutes": (Number, "Stop after this many minutes (or max_wall_s)."),
    "max_wall_s": (Number, "Stop after this many seconds (or max_wall_minutes)."),
    "load_timeout": (Number, "Seconds a server may take to load before the trial fails."),
    "skip_infeasible": (bool, "Skip configurations predicted not to load."),
    "min_kv_tokens": (int, "Skip configurations whose KV cache holds fewer tokens."),
    "objective": (str | dict[str, Any], "What the best trial maximises."),
    "constraints": (str | list[str], "Bounds a trial must hold to count."),
    "patience": (int, "optimize: trials without improvement before it stops."),
    "noise_pct": (Number, "optimize: gains below this are noise (%)."),
    "startup_trials": (int, "optimize: random trials before the model steers."),
    "start_at_base": (bool, "optimize: measure the base configuration first."),
    "seed": (int, "optimize: the sampler's seed."),
    "finally": (
        Literal[FINALLY_CHOICES],  # type: ignore[valid-type]
        "What the server does after the sweep.",
    ),
    "prune": (bool, "Stop benchmarking a candidate clearly below the best."),
    "prune_margin_pct": (Number, "How far below the best a pruned candidate must be (%)."),
    "rate_search": (dict[str, Number], "max_rate_under_slo: the request rates probed."),
    "baseline": (bool, "Also measure the base without speculation."),
    "what_if_accept_length": (
        Number | list[Number],
        "Accept lengths to re-measure every static candidate at.",
    ),
    "proof_dataset": (str, "per_level: another workload the schedule's proof also runs on."),
}
"""The ``[sweep]`` table: each key's TOML type and one line of help."""

TOP_KEYS: dict[str, tuple[Any, str]] = {
    "name": (str, "The sweep's name."),
    "description": (str, "What the sweep is for."),
    "host": (dict[str, Any], "Where the box is (a single box)."),
    "hosts": (list[dict[str, Any]], "A pool: one table per box."),
    "pool": (dict[str, Any], "A pool of one host's aliases or slots."),
    "service": (dict[str, Any], "How the server runs on the box."),
    "server": (dict[str, Any], "The base configuration, in its engine's own keys."),
    "sweep": (dict[str, Any], "What to vary and when to stop."),
    "bench": (dict[str, Any], "How each trial is measured."),
    "ui": (dict[str, Any], "The console's own settings (theme); not read by the sweep."),
}
"""The plan's top-level keys (``[ui]`` belongs to the console and is ignored by a sweep, so
one file can be both the console's profile and a plan)."""

BENCH_PLACEMENT_KEYS: dict[str, tuple[Any, str]] = {
    "placement": (
        Literal[tuple(p.value for p in Placement)],  # type: ignore[misc]
        "Where the load generator runs.",
    ),
    "url": (str, 'The server as this machine reaches it (placement = "direct").'),
    "dataset": (str, "A prompt set or dataset file (the same as prompts)."),
}
DERIVED_BENCH_FIELDS: frozenset[str] = frozenset(
    {"output_len_from_dataset", "spec_counters", "lead", "chat_template"}
)
"""BenchSpec fields a plan does not write: they follow from the keys it does (or, for the
speculative-decoding counters and the chat template, from the trial's engine and model)."""

_TOML_SPECIAL: dict[tuple[str, str], Any] = {
    ("bench", "headers"): dict[str, str],
    ("bench", "slo"): dict[str, Number | str],
    ("bench", "window"): Literal["completed", "steady"],
}
"""Fields whose TOML shape is not their Python type's (headers are a table of strings)."""


def toml_type(hint: Any, *, one_or_many: bool = False) -> Any:
    """The TOML-facing type of a dataclass field's type: an enum is its values, a tuple a
    list (``one_or_many``: or one item alone, as ``[host]``/``[service]`` read
    ``identity_files = "~/.ssh/id"``), a float any number, ``None`` left out (a plan omits a
    key rather than nulling it)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        kept = [toml_type(a, one_or_many=one_or_many) for a in args if a is not type(None)]
        out = kept[0]
        for other in kept[1:]:
            out = out | other
        return out
    if isinstance(hint, type) and issubclass(hint, Enum):
        return Literal[tuple(m.value for m in hint)]
    if hint is float:
        return Number
    if origin is tuple:
        item = toml_type(args[0]) if args else Any
        return item | list[item] if one_or_many else list[item]
    if origin in (dict, Mapping):
        return dict[str, toml_type(args[1]) if args and args[1] is not Any else Any]
    if hint in (int, str, bool):
        return hint
    return Any


_ONE_OR_MANY_TABLES = frozenset({"host", "service"})
"""Tables whose list keys also take one string (``core.plans.profile``'s ``_str_tuple``)."""


def _dataclass_keys(cls: type, table: str, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    one_or_many = table in _ONE_OR_MANY_TABLES
    return {
        f.name: (
            _TOML_SPECIAL.get((table, f.name)) or toml_type(hints[f.name], one_or_many=one_or_many),
            "",
        )
        for f in fields(cls)
        if f.name not in skip
    }


@cache
def table_keys(table: str) -> dict[str, tuple[Any, str]]:
    """A table's keys (``"sweep"``, ``"host"``, …, ``"plan"`` for the top level): each key's
    TOML type and help. The parsers check keys against these."""
    declared: dict[str, Callable[[], dict[str, tuple[Any, str]]]] = {
        "plan": lambda: TOP_KEYS,
        "sweep": lambda: SWEEP_KEYS,
        "pool": lambda: POOL_KEYS,
        "hosts": lambda: {**_dataclass_keys(HostProfile, "host"), **BOX_KEYS},
        "host": lambda: _dataclass_keys(HostProfile, "host"),
        "service": lambda: _dataclass_keys(ServiceProfile, "service"),
        "bench": lambda: {
            **_dataclass_keys(BenchSpec, "bench", DERIVED_BENCH_FIELDS),
            **BENCH_PLACEMENT_KEYS,
        },
    }
    return dict(declared[table]())


# --------------------------------------------------------------------------------------------
# The library's declaration, and its errors in the plan's words
# --------------------------------------------------------------------------------------------

_SECTIONS = ("host", "service", "sweep", "bench", "pool")


@cache
def plan_struct() -> Any:
    """The msgspec Struct of a plan's shape (``[server]`` and ``[ui]`` are checked by their
    own readers: the server's keys depend on its engine)."""
    import msgspec

    def struct(name: str, keys: Mapping[str, tuple[Any, str]]) -> Any:
        return msgspec.defstruct(
            name,
            [(k, t | None, None) for k, (t, _help) in keys.items()],
            forbid_unknown_fields=True,
            kw_only=True,
        )

    tables = {t: struct(t.title(), table_keys(t)) for t in _SECTIONS}
    tables["hosts"] = list[struct("Box", table_keys("hosts"))]  # type: ignore[assignment]
    top = [
        (key, tables.get(key, t) | None, None)
        for key, (t, _help) in TOP_KEYS.items()
        if key not in ("server", "ui")
    ]
    top += [("server", dict[str, Any] | None, None), ("ui", dict[str, Any] | None, None)]
    return msgspec.defstruct("Plan", top, forbid_unknown_fields=True, kw_only=True)


_PATH = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<key>[^`]*)`")
_EXPECTED = re.compile(r"^Expected `(?P<want>[^`]*)`, got `(?P<got>[^`]*)`")
_WANT_WORDS = {
    "int": "an integer",
    "float": "a number",
    "int | float": "a number",
    "bool": "true or false",
    "str": "a string",
    "array": "a list",
    "object": "a table",
    "object | array": "a list or a table",
    "array | object": "a list or a table",
    "str | object": "a string or a table",
    "array | int | float": "a number or a list",
    "int | float | array": "a number or a list",
}
_GOT_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "array": list, "object": dict}


def _steps(path: str, document: Mapping[str, Any], got: str) -> list[str | int]:
    """The path's keys; msgspec writes a table's key as ``[...]``: it is the first key of
    that table whose value has the type msgspec got."""
    steps: list[str | int] = []
    for part in re.findall(r"\.[A-Za-z_][\w-]*|\[\d+\]|\[\.\.\.\]", path):
        if part == "[...]":
            table = _lookup(document, steps)
            kind = _GOT_TYPES.get(got, object)
            keys = (
                [k for k, v in table.items() if type(v) is kind]
                if isinstance(table, Mapping)
                else []
            )
            steps.append(keys[0] if keys else "?")
        elif part.startswith("["):
            steps.append(int(part[1:-1]))
        else:
            steps.append(part[1:])
    return steps


def where(steps: list[str | int]) -> str:
    """A path in the document as a plan names it: ``[sweep] max_trials``, ``[bench] ladder``,
    ``[[hosts]] #2 alias``."""
    if not steps:
        return "plan"
    table, rest = steps[0], steps[1:]
    if table == "hosts" and rest and isinstance(rest[0], int):
        head, rest = f"[[hosts]] #{rest[0] + 1}", rest[1:]
    else:
        head = f"[{table}]"
    if rest and rest[0] == "axes" and table == "sweep":
        head, rest = "[sweep.axes]", rest[1:]
    tail = ".".join(str(s) for s in rest if not isinstance(s, int))
    index = "".join(f"[{s}]" for s in rest if isinstance(s, int))
    return f"{head} {tail}{index}".rstrip() if tail or index else head


def _lookup(document: Mapping[str, Any], steps: list[str | int]) -> Any:
    value: Any = document
    for step in steps:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def _known(steps: list[str | int]) -> dict[str, tuple[Any, str]]:
    names = [s for s in steps if isinstance(s, str)]
    if not names:
        return dict(TOP_KEYS)
    return table_keys("hosts" if names[0] == "hosts" and len(names) == 1 else names[0])


def unknown_key_message(section: str, key: str, known: Any) -> str:
    """``section: unknown key 'x'; did you mean 'y'? known keys: …`` — the closest known key
    when one is close (a misspelt ``[sweeep]`` must not pass as an unrelated error later)."""
    listed = ", ".join(sorted(known))
    return f"{section}: unknown key {key!r}; {did_you_mean(key, known)}known keys: {listed}"


def shape_message(document: Mapping[str, Any], error: str) -> str:
    """The plan's sentence for one msgspec ``ValidationError`` text: the TOML key, the value
    given and what to write instead."""
    found = _PATH.search(error)
    text = error[: found.start()] if found else error
    expected = _EXPECTED.match(text)
    got = expected.group("got") if expected else ""
    steps = _steps(found.group("path"), document, got) if found else []
    if unknown := _UNKNOWN.match(text):
        section = where(steps) if steps else "plan"
        return unknown_key_message(section, unknown.group("key"), _known(steps))
    at = where(steps)
    value = _lookup(document, steps)
    if expected:
        want = expected.group("want").removesuffix(" | null")
        words = _WANT_WORDS.get(want, f"of type {want}")
        return f"{at} must be {words}, got {value!r}"
    if text.startswith("Invalid enum value"):
        literal = _known(steps).get(str(steps[-1]), (None, ""))[0] if steps else None
        choices = typing.get_args(literal) if literal is not None else ()
        listed = ", ".join(repr(c) for c in choices)
        return f"{at} = {value!r} is not valid; use one of {listed}"
    return f"{at}: {text} (got {value!r})"


def check_shape(document: Mapping[str, Any]) -> None:
    """Refuse a document whose tables, keys or value types are not a plan's, with the first
    mistake in the plan's words (:func:`shape_message`); ``PlanError`` otherwise nothing."""
    import msgspec

    try:
        msgspec.convert(document, plan_struct(), strict=True)
    except msgspec.ValidationError as exc:
        raise PlanError(shape_message(document, str(exc))) from None
