"""llama-server's command line: its flags for a configuration, and a command line read back.

Why one module: the renderer and the reader must agree word for word (render → parse →
render is the identity, tested), and the validator and the unit editor must know every
spelling that sets a key (:data:`MODELLED_FLAGS`, from :data:`.options.SPELLINGS`) so none is
written twice and a user's ``-c 2048`` stays ``-c`` when only its value changes. The spelling
rendered for a key is the first of its spellings the box's binary accepts
(``ServerConfig.box_flags``, from its ``--help``), else this generation's long name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.flags import flag_field, format_value
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.options import OptionField, parse_option
from specconsole.engines.llamacpp.options import OPTION_FIELDS, SPELLINGS

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "MODELLED_FLAGS",
    "parse_args",
    "render_flags",
    "spelling",
]

DEFAULT_HOST = "127.0.0.1"
"""llama-server binds loopback when ``--host`` is not given."""
DEFAULT_PORT = 8080

MODELLED_FLAGS: dict[str, str] = {flag: key for key, flags in SPELLINGS.items() for flag in flags}
"""Every spelling of every key it models: flag -> ``[server]`` key."""

_OPTIONS: dict[str, OptionField] = {f.name: f for f in OPTION_FIELDS}


def spelling(config: ServerConfig, key: str) -> str:
    """The flag that spells ``key`` for the box's binary: the first of its spellings the
    binary's ``--help`` accepts, else this generation's name (the binary then lacks the key:
    validation says so, naming the key)."""
    names = SPELLINGS[key]
    flags = config.box_flags
    if flags is not None:
        for name in names:
            if flags.accepts(name):
                return name
    return names[0]


def render_flags(config: ServerConfig) -> list[str]:
    """llama-server's flags for ``config`` (no launcher): the model, the draft, the engine's
    own keys in their declared order (a true ``metrics`` as ``--metrics`` alone), host and
    port, then ``extra_args`` verbatim."""
    out = [spelling(config, "model_path"), config.model_path]
    if config.speculative_draft_model_path:
        out += [
            spelling(config, "speculative_draft_model_path"),
            config.speculative_draft_model_path,
        ]
    values = dict(config.options)
    for field in OPTION_FIELDS:
        if field.name not in values or field.name == "speculative_draft_model_path":
            continue
        value = values[field.name]
        if field.kind == "bool":
            if value:
                out.append(spelling(config, field.name))
            continue
        out += [spelling(config, field.name), format_value(value)]
    out += [spelling(config, "host"), config.host, spelling(config, "port"), str(config.port)]
    return [*out, *config.extra_args]


def _is_flag(word: str) -> bool:
    """A flag word, not a value such as ``-1`` (a negative number)."""
    return word.startswith("-") and len(word) > 1 and not word[1:].replace(".", "").isdigit()


def parse_args(tokens: Sequence[str]) -> dict[str, Any]:
    """``ServerConfig`` fields (and the engine's keys, as ``options``) from llama-server's
    arguments, whichever spelling they use (``-c`` / ``--ctx-size``, ``--draft-max`` /
    ``--spec-draft-n-max``, ``--port=8080``); flags it does not model are kept, in order, in
    ``extra_args``. Raises ConfigError naming the flag for a missing or bad value."""
    fields: dict[str, Any] = {"host": DEFAULT_HOST, "port": DEFAULT_PORT}
    options: dict[str, Any] = {}
    extra: list[str] = []
    toks = list(tokens)
    i = 0
    while i < len(toks):
        token = toks[i]
        i += 1
        name, eq, inline = token.partition("=")
        key = MODELLED_FLAGS.get(name if eq and name.startswith("--") else token)
        if key is None:
            extra.append(token)
            continue
        if eq and name.startswith("--"):
            value: str | None = inline
        else:
            name = token
            value = None
        field = _OPTIONS.get(key)
        if field is not None and field.kind == "bool":
            if value is not None:
                raise ConfigError(name, "takes no value.", f"write {name} alone.")
            options[key] = True
            continue
        if value is None:
            if i >= len(toks) or _is_flag(toks[i]):
                raise ConfigError(name, "needs a value.", f"write {name} VALUE.")
            value, i = toks[i], i + 1
        if field is None:
            fields[key] = flag_field(name, key, value, "llamacpp")
        else:
            options[key] = parse_option(field, value, key=name)
    if options:
        fields["options"] = tuple(
            (f.name, options[f.name]) for f in OPTION_FIELDS if f.name in options
        )
    fields["extra_args"] = tuple(extra)
    return fields
