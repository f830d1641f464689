"""The shared ``[server]`` keys — what every engine has — their types, and the check of a
key name no engine declares.

Why its own module: the shared keys (the model, the engine, the address, the launcher, the
environment) are typed the same way for every engine, and a key that is neither shared nor the
engine's own gets one answer everywhere a ``[server]`` table is read: the closest key, the
dashes-for-underscores fix, another engine's key refused with the engine's own fix, or
``extra_args`` for a flag specconsole does not model. The table itself (:mod:`.model`)
reads the engine's keys through :mod:`.declared`.
"""

from __future__ import annotations

import difflib
import shlex
from enum import StrEnum
from typing import Any

from specconsole.core.config.declared import engine_attr, engine_title, key_names, option_fields
from specconsole.core.config.errors import ConfigError
from specconsole.core.config.options import read_scalar
from specconsole.core.engine.registry import engine_names

__all__ = [
    "FIELD_KINDS",
    "KEY_ALIASES",
    "NON_OPTIONAL_KEYS",
    "FieldKind",
    "check_key",
    "parse_env",
    "parse_field",
]


class FieldKind(StrEnum):
    """How a shared ``[server]`` key's value is typed (drives TOML parsing and editor text)."""

    STR = "str"
    INT = "int"
    FLOAT = "float"
    ENGINE = "engine"
    ARGS = "args"
    ENV = "env"


FIELD_KINDS: dict[str, FieldKind] = {
    "model_path": FieldKind.STR,
    "engine": FieldKind.ENGINE,
    "engine_version": FieldKind.STR,
    "host": FieldKind.STR,
    "port": FieldKind.INT,
    "extra_args": FieldKind.ARGS,
    "env": FieldKind.ENV,
    "launcher": FieldKind.STR,
    "working_directory": FieldKind.STR,
    "user": FieldKind.STR,
    "description": FieldKind.STR,
}
"""Every shared ``[server]`` key, in the order files show them (= ServerConfig fields); an
engine's own keys come in its declared order, the leading ones before ``host``."""

NON_OPTIONAL_KEYS: frozenset[str] = frozenset(
    {"model_path", "engine", "host", "port", "extra_args", "env", "launcher", "description"}
)
"""Keys that cannot be ``None`` (everything else may be left unset)."""

KEY_ALIASES: dict[str, str] = {"model": "model_path"}
"""Shared aliases, accepted on input and written back under the canonical name (an engine's
own are its keys' ``OptionField.aliases``)."""


def check_key(key: str, engine: str) -> str:
    if key in FIELD_KINDS:
        return key
    if key in KEY_ALIASES:
        return KEY_ALIASES[key]
    names = key_names(engine)
    foreign = engine_attr(engine, "foreign_keys")
    if key in foreign:
        title = engine_title(engine)
        raise ConfigError(
            f"server.{key}",
            f"{title} has no flag for it: it would not be rendered.",
            f"{foreign[key]}.",
        )
    dashed = key.replace("-", "_")
    if dashed in FIELD_KINDS or dashed in KEY_ALIASES or dashed in names:
        raise ConfigError(
            f"server.{key}",
            "keys use underscores, not dashes.",
            f"write `{KEY_ALIASES.get(dashed, names.get(dashed, dashed))}`.",
        )
    close = difflib.get_close_matches(key, [*FIELD_KINDS, *option_fields(engine)], n=1)
    hint = f"did you mean `{close[0]}`? " if close else ""
    flag = "--" + key.replace("_", "-")
    raise ConfigError(
        f"server.{key}",
        "unknown key.",
        f"{hint}For a server flag specconsole does not model, add it to extra_args, "
        f'e.g. extra_args = ["{flag}", "VALUE"].',
    )


def parse_field(name: str, value: Any) -> Any:
    """Convert one shared ``[server]`` value (TOML-typed or editor text) to the field's type.

    Raises :class:`ConfigError` naming the key and the fix; ``None`` unsets optional keys.
    """
    kind = FIELD_KINDS[name]
    key = f"server.{name}"
    if value is None or (isinstance(value, str) and not value.strip() and kind != FieldKind.STR):
        if name in NON_OPTIONAL_KEYS and kind not in (FieldKind.ARGS, FieldKind.ENV):
            raise ConfigError(key, "a value is required.", f"set {name}.")
        if kind in (FieldKind.ARGS, FieldKind.ENV):
            return ()
        return None
    if kind in (FieldKind.STR, FieldKind.INT, FieldKind.FLOAT):
        text = read_scalar(kind.value, name, value)
        if text is None and name in NON_OPTIONAL_KEYS:
            return value  # a required string may be empty: validation says what is missing
        return text
    if kind == FieldKind.ENGINE:
        names = engine_names()
        if isinstance(value, str) and value.strip().lower() in names:
            return value.strip().lower()
        close = difflib.get_close_matches(str(value).strip().lower(), names, n=1)
        hint = f"did you mean `{close[0]}`? " if close else ""
        choices = " or ".join(f'"{n}"' for n in names)
        raise ConfigError(key, f"unknown engine {value!r}.", f"{hint}write engine = {choices}.")
    if kind == FieldKind.ARGS:
        if isinstance(value, str):
            try:
                return tuple(shlex.split(value))
            except ValueError as exc:
                raise ConfigError(
                    key, f"cannot split {value!r}: {exc}.", "fix the quoting."
                ) from None
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ConfigError(
            key, "expected a list of strings.", 'write extra_args = ["--flag", "value"].'
        )
    return parse_env(key, value)


def parse_env(key: str, value: Any) -> tuple[tuple[str, str], ...]:
    pairs: list[tuple[str, str]] = []
    items: Any
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list | tuple):
        items = []
        for entry in value:
            if isinstance(entry, str) and "=" in entry:
                items.append(tuple(entry.split("=", 1)))
            elif isinstance(entry, list | tuple) and len(entry) == 2:
                items.append(tuple(entry))
            else:
                raise ConfigError(
                    key, f"cannot read entry {entry!r}.", 'write env = { NAME = "value" }.'
                )
    else:
        raise ConfigError(key, "expected a table.", 'write env = { NAME = "value" }.')
    for name_, val in items:
        if not isinstance(name_, str) or not name_:
            raise ConfigError(key, f"bad variable name {name_!r}.", 'use NAME = "value".')
        if isinstance(val, bool):
            val = "1" if val else "0"
        elif isinstance(val, int | float):
            val = str(val)
        if not isinstance(val, str):
            raise ConfigError(
                f"{key}.{name_}", f"expected a string, got {val!r}.", f'write {name_} = "..."'
            )
        if any(name_ == seen for seen, _ in pairs):
            # a list form may repeat a name; a table (and so the round trip) cannot
            raise ConfigError(f"{key}.{name_}", "is set twice.", "keep one of them.")
        pairs.append((name_, val))
    return tuple(pairs)
