"""``--flag value`` words of a server's command line, written and read back, shared by every
engine's renderer and parser, and reading the flags a configuration passes in ``extra_args``.

Why one place: both engines render modelled fields the same way — a field left unset
(``None``) is left out so the server's own default applies, and a float is written with
``repr`` (the shortest text that reads back to the same float) — and read them back the same
way (``--flag=value`` or ``--flag value``; a bad value is reported under the flag the user
wrote), which the render → parse round trip relies on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import ServerConfig, parse_value


def format_value(value: object) -> str:
    """A flag value as one argv word (``repr`` for floats, ``str`` otherwise)."""
    return repr(value) if isinstance(value, float) else str(value)


def flag_words(pairs: Iterable[tuple[str, object | None]]) -> list[str]:
    """``[flag, value, ...]`` for the pairs whose value is set, in order."""
    out: list[str] = []
    for flag, value in pairs:
        if value is not None:
            out += [flag, format_value(value)]
    return out


def flag_value(name: str, inline: str | None, tokens: Sequence[str], i: int) -> tuple[str, int]:
    """The value of flag ``name`` and the index after it: ``inline`` (``--flag=value``) when
    given, else the next word; raises ConfigError when there is none."""
    if inline is not None:
        return inline, i
    if i < len(tokens) and not tokens[i].startswith("--"):
        return tokens[i], i + 1
    raise ConfigError(name, "needs a value.", f"write {name} VALUE.")


def flag_field(flag: str, field_name: str, value: Any, engine: str = "") -> Any:
    """A flag's value read as ``[server]`` key ``field_name`` (a shared field, or one of
    ``engine``'s own keys), with errors naming the flag as written."""
    return parse_value(engine, field_name, value, key=flag)


def _flag_name(token: str) -> str:
    return token.split("=", 1)[0]


def extra_flags(config: ServerConfig) -> list[str]:
    args = config.extra_args if isinstance(config.extra_args, tuple | list) else ()
    return [_flag_name(t) for t in args if isinstance(t, str) and t.startswith("-")]


def extra_value(config: ServerConfig, flag: str) -> str | None:
    """The value given to ``flag`` in extra_args (``--flag v`` or ``--flag=v``), if any."""
    args = (
        [t for t in config.extra_args if isinstance(t, str)]
        if isinstance(config.extra_args, tuple | list)
        else []
    )
    for i, token in enumerate(args):
        if token == flag:
            return args[i + 1] if i + 1 < len(args) else ""
        if token.startswith(flag + "="):
            return token[len(flag) + 1 :]
    return None
