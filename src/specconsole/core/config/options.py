"""Engine-specific ``[server]`` keys: the settings one engine has and the shared model does not.

Why: ``ServerConfig``'s fields are the vocabulary SGLang and vLLM share (a speculative tree,
a memory fraction, a running-request cap). Another engine tunes other knobs in its own words —
llama.cpp's ``spec_draft_n_max``, ``parallel``, ``ctx_size`` — and a user sweeps them by those
names. An engine declares each such key as an :class:`OptionField` (its ``option_fields``);
the configuration keeps the values in ``ServerConfig.options``, the TOML ``[server]`` table
holds them as ordinary keys, and a plan's axes, the editor, labels and records reach them by
name exactly like a field (``config.spec_draft_n_max``). Nothing outside the engine's package
names them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from specconsole.core.config.errors import ConfigError

__all__ = [
    "OptionField",
    "OptionValue",
    "option_words",
    "parse_option",
    "with_options",
]

OptionValue = str | int | float | bool
"""What an option holds: TOML's scalars."""

KINDS = ("int", "float", "str", "bool", "choice")


@dataclass(frozen=True, slots=True)
class OptionField:
    """One engine-specific ``[server]`` key: its type, its flag, its bounds, one-line help."""

    name: str
    """The ``[server]`` key (``spec_draft_n_max``)."""
    kind: str
    """``int``, ``float``, ``str``, ``bool`` (a flag without a value) or ``choice``."""
    flag: str
    """The flag it renders as (``--spec-draft-n-max``)."""
    hint: str
    """What it does, in one short line (the editor and ``validate``'s messages show it)."""
    choices: tuple[str, ...] = ()
    """For ``choice``: the values the engine accepts. For ``int`` and ``float``: words the
    engine accepts besides a number (llama.cpp's ``-ngl auto`` / ``all``)."""
    minimum: float | None = None
    maximum: float | None = None
    """Inclusive bounds for numbers (``None``: unbounded on that side)."""
    example: str = ""
    """A value to show in a fix (``4``)."""
    short: str = ""
    """Its name in labels (``n_max``); ``""``: the key itself."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"option {self.name}: kind must be one of {KINDS}")


def _fail(key: str, field: OptionField, got: Any, what: str) -> ConfigError:
    example = field.example or {"int": "4", "float": "0.5", "bool": "true"}.get(field.kind, '"..."')
    if field.kind == "choice" and field.choices:
        example = f'"{field.choices[0]}"'
    return ConfigError(key, f"expected {what}, got {got!r}.", f"write {field.name} = {example}.")


def parse_option(field: OptionField, value: Any, *, key: str | None = None) -> OptionValue | None:
    """Convert one value (TOML-typed or editor text) to the option's type; ``None`` (or empty
    editor text) unsets it. Raises :class:`ConfigError` naming the key and the fix; ranges
    and choices are checked here too, since an option has nothing else to check it."""
    key = key or f"server.{field.name}"
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    kind = field.kind
    if kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise _fail(key, field, value, "true or false")
    if kind in ("str", "choice"):
        if not isinstance(value, str):
            raise _fail(key, field, value, "a string")
        text = value.strip()
        if kind == "choice" and text not in field.choices:
            raise ConfigError(
                key,
                f"{text!r} is not one of {', '.join(field.choices)}.",
                f'write {field.name} = "{field.choices[0]}" (or another of those).',
            )
        return text
    number: int | float
    if isinstance(value, bool):
        raise _fail(key, field, value, "a number")
    if field.choices and isinstance(value, str) and value.strip() in field.choices:
        return value.strip()  # a word the engine takes in place of a number
    if kind == "int":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, str):
            try:
                value = int(value.strip().replace("_", ""))
            except ValueError:
                raise _fail(key, field, value, "an integer") from None
        if not isinstance(value, int):
            raise _fail(key, field, value, "an integer")
        number = value
    else:
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise _fail(key, field, value, "a number") from None
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise _fail(key, field, value, "a finite number")
        number = float(value)
    low, high = field.minimum, field.maximum
    if (low is not None and number < low) or (high is not None and number > high):
        if low is not None and high is not None:
            span = f"between {low:g} and {high:g}"
        elif low is not None:
            span = f"at least {low:g}"
        else:
            span = f"at most {high:g}"
        raise ConfigError(
            key,
            f"{number:g} is out of range: it must be {span}.",
            f"set {field.name} {span} ({field.hint}).",
        )
    return number


def with_options(
    current: Iterable[tuple[str, OptionValue]],
    changes: Mapping[str, OptionValue | None],
    order: Iterable[str],
) -> tuple[tuple[str, OptionValue], ...]:
    """``current`` with ``changes`` applied (``None`` removes), in the engine's ``order``."""
    values = dict(current)
    for name, value in changes.items():
        if value is None:
            values.pop(name, None)
        else:
            values[name] = value
    ranked = {name: i for i, name in enumerate(order)}
    return tuple(sorted(values.items(), key=lambda kv: ranked.get(kv[0], len(ranked))))


def option_words(
    options: Iterable[tuple[str, OptionValue]], fields: Iterable[OptionField]
) -> list[str]:
    """The flags for the options that are set, in the engine's declared order: ``--flag V``,
    a true ``bool`` as ``--flag`` alone (a false one is left out)."""
    values = dict(options)
    out: list[str] = []
    for field in fields:
        if field.name not in values:
            continue
        value = values[field.name]
        if field.kind == "bool":
            if value:
                out.append(field.flag)
            continue
        out += [field.flag, repr(value) if isinstance(value, float) else str(value)]
    return out
