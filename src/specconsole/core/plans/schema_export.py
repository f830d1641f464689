"""The plan's JSON Schema (``docs/plan-schema.json``), generated from its one declaration.

Why: editors that read JSON Schema for TOML (Taplo / Even Better TOML) complete and check
plan files with it, so a misspelt key is underlined before ``validate`` runs. It is built
from :mod:`specconsole.core.plans.schema` (the tables msgspec checks, with each key's help:
``[sweep]``'s declared lines, the dataclasses' field docstrings) and, for ``[server]``, from
each registered engine's own keys (aliases, and former names marked deprecated), chosen by
``engine``. ``scripts/plan-schema.py`` writes the file; ``tests/core/test_plan_schema.py``
fails when it is stale and validates every example against it.
"""

from __future__ import annotations

from typing import Any

from specconsole.core.plans.profile import HostProfile, ServiceProfile
from specconsole.core.plans.schema import TOP_KEYS, plan_struct, table_keys
from specconsole.core.ports import BenchSpec

# --------------------------------------------------------------------------------------------

_FIELD_JSON: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "algorithm": {"type": "string"},
    "args": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]},
    "env": {
        "anyOf": [
            {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
            {"type": "array", "items": {"type": "string"}},
        ]
    },
}


def _option_json(option: Any) -> dict[str, Any]:
    """One engine key (``core.config.options.OptionField``) as JSON Schema."""
    if option.kind == "choice":
        out: dict[str, Any] = {"enum": list(option.choices)}
    else:
        out = dict(_FIELD_JSON[option.kind])
        for bound, key in ((option.minimum, "minimum"), (option.maximum, "maximum")):
            if bound is not None:
                out[key] = bound
        if option.choices:  # words besides a number (llama.cpp's -ngl all)
            out = {"anyOf": [out, {"enum": list(option.choices)}]}
    out["description"] = f"{option.hint} ({option.flag})" if option.flag else option.hint
    return out


def server_json_schema(engine: str) -> dict[str, Any]:
    """``[server]`` for one engine: the shared keys and the engine's own (its aliases and
    former names too, the former ones marked deprecated)."""
    from specconsole.core.config.model import FIELD_KINDS, KEY_ALIASES, option_fields
    from specconsole.core.engine.registry import engine_names

    props: dict[str, Any] = {}
    for key, kind in FIELD_KINDS.items():
        props[key] = (
            {"enum": sorted(engine_names())} if kind == "engine" else dict(_FIELD_JSON[kind])
        )
    props["port"] = {
        "anyOf": [{"type": "integer", "minimum": 1, "maximum": 65535}, {"const": "auto"}]
    }
    for alias, key in KEY_ALIASES.items():
        props[alias] = {**props[key], "description": f"the same as {key}"}
    for name, option in option_fields(engine).items():
        props[name] = _option_json(option)
        for alias in getattr(option, "aliases", ()):
            props[alias] = {**props[name], "description": f"the same as {name}"}
        for former in getattr(option, "former", ()):
            props[former] = {
                **props[name],
                "description": f"former name of {name}",
                "deprecated": True,
            }
    return {
        "type": "object",
        "required": ["model_path"],
        "properties": props,
        "additionalProperties": False,
    }


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of dataclass ``cls`` (its source read once, at export),
    as one line: what an editor shows beside a key it completes."""
    import ast
    import inspect
    import itertools
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):  # no source (a frozen build): keys without help
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(after.value.value.split()).replace("``", "`")
    return docs


def _without_null(node: Any) -> Any:
    """The schema without ``null``: a TOML file has no null (a key is left out instead), so
    an editor must not offer it (the declaration's ``| None`` means "may be omitted")."""
    if isinstance(node, list):
        return [_without_null(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _without_null(v) for k, v in node.items() if not (k == "default" and v is None)}
    options = out.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1:
            del out["anyOf"]
            out = {**kept[0], **out}
        else:
            out["anyOf"] = kept
    return out


def plan_json_schema() -> dict[str, Any]:
    """The whole plan as JSON Schema (draft 2020-12): the declared tables, with ``[server]``
    checked by its engine's keys (``engine`` absent: the default engine's)."""
    import msgspec

    from specconsole.core.engine.registry import default_engine, engine_names

    (_plan_ref,), components = msgspec.json.schema_components([plan_struct()])
    defs = dict(components)
    documented = {"Bench": BenchSpec, "Host": HostProfile, "Service": ServiceProfile}
    for struct_name, cls in documented.items():
        for key, text in field_docs(cls).items():
            if key in defs[struct_name]["properties"]:
                defs[struct_name]["properties"][key]["description"] = text
    for struct_name, table in (
        ("Sweep", "sweep"),
        ("Bench", "bench"),
        ("Host", "host"),
        ("Service", "service"),
        ("Pool", "pool"),
        ("Box", "hosts"),
    ):
        for key, (_type, text) in table_keys(table).items():
            if text and key in defs[struct_name]["properties"]:
                defs[struct_name]["properties"][key]["description"] = text
    plan = defs.pop("Plan")
    for key, (_type, text) in TOP_KEYS.items():
        plan["properties"][key]["description"] = text
    engines = sorted(engine_names())
    branches = []
    for name in engines:
        defs[f"Server_{name}"] = server_json_schema(name)
        branches.append(
            {
                "if": {"properties": {"engine": {"const": name}}, "required": ["engine"]},
                "then": {"$ref": f"#/$defs/Server_{name}"},
            }
        )
    branches.append(
        {
            "if": {"not": {"required": ["engine"]}},
            "then": {"$ref": f"#/$defs/Server_{default_engine()}"},
        }
    )
    plan["properties"]["server"] = {
        "description": TOP_KEYS["server"][1],
        "type": "object",
        "properties": {"engine": {"enum": engines}},
        "allOf": branches,
    }
    return _without_null(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://specconsole.invalid/plan-schema.json",
            "title": "specconsole sweep plan",
            "description": "A plan file (TOML): what to try, how to measure it and when to stop. "
            "Generated by scripts/plan-schema.py from core.plans.schema.",
            **{k: v for k, v in plan.items() if k != "title"},
            "$defs": dict(sorted(defs.items())),
        }
    )


def plan_json_schema_text() -> str:
    """:func:`plan_json_schema` as the committed file's text (stable: sorted, indented)."""
    import json

    return json.dumps(plan_json_schema(), indent=2, sort_keys=False) + "\n"
