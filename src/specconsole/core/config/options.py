"""An engine's ``[server]`` keys, each declared once by the engine that has it.

Why: every engine tunes its server in its own words — SGLang's ``speculative_num_steps`` and
``mem_fraction_static``, vLLM's ``num_speculative_tokens`` and ``gpu_memory_utilization``,
llama.cpp's ``spec_draft_n_max``, ``parallel``, ``ctx_size`` — and a user sweeps them by those
names. ``ServerConfig`` keeps only what every engine shares (the model, the address, the
launcher, the environment); an engine declares each of its tuning keys as an
:class:`OptionField` (its ``option_fields``: kind, flag, bounds, choices, hint, short label,
aliases, the shared concept it stands for). The configuration keeps the values in
``ServerConfig.options``, the TOML ``[server]`` table holds them as ordinary keys, and a
plan's axes, the editor, labels and records reach them by name exactly like a field
(``config.spec_draft_n_max``). What the core itself needs of them — the draft length, the
memory fraction — it asks by concept (:mod:`.concepts`), never by an engine's key name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from specconsole.core.config.errors import ConfigError

__all__ = [
    "OptionField",
    "OptionValue",
    "option_words",
    "parse_option",
    "read_scalar",
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
    concept: str = ""
    """The shared idea it stands for (a :class:`~.concepts.Concept` value: ``draft_length``,
    ``memory_fraction``…), by which the core, search, reports and the simulator read it;
    ``""``: the engine's alone."""
    aliases: tuple[str, ...] = ()
    """Other names the engine itself accepts for the key (``tp`` for ``tp_size``): read
    silently and written back under :attr:`name`."""
    former: tuple[str, ...] = ()
    """Names this key had in earlier specconsole plans (vLLM's ``speculative_num_steps`` for
    ``num_speculative_tokens``): still read, with a deprecation notice naming :attr:`name`."""
    synonyms: tuple[tuple[str, str], ...] = ()
    """Values read as another (``("EAGLE3", "eagle3")``; matched without regard to case):
    the engine's own alternative spellings and a former key's values."""
    reader: Callable[[Any], Any] | None = None
    """Reads a value of an unusual kind instead of :func:`parse_option` (SGLang's algorithm:
    any case, ``none`` unsets); raises :class:`ConfigError` naming the key and the fix."""
    plain: bool = False
    """Read by type only, as the shared fields are (:func:`read_scalar`: a quoted number is
    taken, bounds are not checked): validation reports a value out of bounds as a finding,
    with every other one, instead of refusing the file (SGLang's tuning keys)."""
    edit: bool = False
    """A box of the console's editor (``EngineBase.editor_fields``: the keys a tuner edits
    between trials; the rest are set in the plan)."""
    leads: bool = False
    """Written before ``host`` and ``port`` in a ``[server]`` table (the others after them),
    so files and records keep the order they always had."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"option {self.name}: kind must be one of {KINDS}")

    @property
    def names(self) -> tuple[str, ...]:
        """Every name that reads as this key, its own first."""
        return (self.name, *self.aliases, *self.former)


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
    if field.reader is not None:
        try:
            return field.reader(value)
        except ConfigError as exc:
            raise ConfigError(key, exc.message, exc.fix) from None
    if field.plain and field.kind in ("str", "int", "float"):
        return read_scalar(field.kind, field.name, value, key=key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if field.synonyms and isinstance(value, str):
        folded = value.strip().lower()
        value = next((new for old, new in field.synonyms if old.lower() == folded), value)
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


def read_scalar(kind: str, name: str, value: Any, *, key: str | None = None) -> Any:
    """A ``str``, ``int`` or ``float`` value (TOML-typed or editor text) by type only:
    ``None`` or blank editor text unsets it, ``"4"`` reads as 4; raises :class:`ConfigError`
    naming ``key`` (``server.NAME``) and the fix. Ranges are validation's."""
    key = key or f"server.{name}"
    if value is None or (isinstance(value, str) and not value.strip() and kind != "str"):
        return None
    if kind == "str":
        if not isinstance(value, str):
            raise ConfigError(key, f"expected a string, got {value!r}.", f'write {name} = "..."')
        return value or None
    if kind == "int":
        if isinstance(value, bool):
            raise ConfigError(key, f"expected an integer, got {value!r}.", f"write {name} = 4")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip().replace("_", ""))
            except ValueError:
                pass
        raise ConfigError(key, f"expected an integer, got {value!r}.", f"write {name} = 4")
    if isinstance(value, bool):
        raise ConfigError(key, f"expected a number, got {value!r}.", f"write {name} = 0.85")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise ConfigError(key, f"expected a number, got {value!r}.", f"write {name} = 0.85")


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
