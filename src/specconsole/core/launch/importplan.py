"""Start from the box: a plan whose base is exactly the service that runs there today, and
reading a configuration from whatever the user has (TOML, a unit file, a command line).

Why: users already have a working ``sglang.service``; typing its flags into a new TOML file
by hand is where drift starts, and ``validate sglang.service`` used to answer "not valid
TOML". :func:`plan_from_unit` turns the unit (as ``systemctl cat`` shows it, drop-ins
included) into a commented plan: ``[host]``/``[service]`` to reach it again, ``[server]``
with every flag and variable it runs with — except secret values, which stay in the unit
(a deploy leaves variables the configuration does not name alone) — and an example sweep
around the current values. :func:`read_server_text` is the one place that recognises which
of the three forms a text is.
"""

from __future__ import annotations

import dataclasses
import textwrap
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

import tomli_w

from specconsole.core.config.concepts import Concept, concept_key
from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import (
    ServerConfig,
    config_from_table,
    config_to_table,
    option_fields,
)
from specconsole.core.config.secrets import drop_secret_flags, split_secrets
from specconsole.core.launch.command import parse_command
from specconsole.core.launch.systemd import parse_unit
from specconsole.core.launch.unit_read import UnitContext

__all__ = ["InputKind", "plan_from_unit", "read_server_text"]


class InputKind:
    """What :func:`read_server_text` recognised."""

    TOML = "toml"
    UNIT = "unit"
    COMMAND = "command"


def _looks_like_unit(text: str) -> bool:
    lines = {line.strip() for line in text.splitlines()}
    return "[Service]" in lines or any(line.startswith("ExecStart=") for line in lines)


def read_server_text(
    text: str, where: str = "input", context: UnitContext | None = None
) -> tuple[str, ServerConfig]:
    """(kind, configuration) of a TOML file's ``[server]`` table, a systemd unit (or
    ``systemctl cat`` output) or a command line. Raises :class:`ConfigError` naming what
    is wrong; a text that is none of the three says which forms are accepted."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        if _looks_like_unit(text):
            return InputKind.UNIT, parse_unit(text, context)
        stripped = "\n".join(
            line for line in text.splitlines() if line.strip() and not line.startswith("#")
        )
        if stripped:
            lines = stripped.replace("\\\n", " ").splitlines()
            # a launch script (cd, export, exec on lines of their own) reads as `sh -c`
            command = ["sh", "-c", " && ".join(lines)] if len(lines) > 1 else stripped
            try:
                return InputKind.COMMAND, parse_command(command)
            except ConfigError as command_error:
                raise ConfigError(
                    where,
                    f"is not valid TOML ({exc}), not a systemd unit (no [Service]/ExecStart=)"
                    f" and not a server command line ({command_error.message})",
                    "give a TOML file with a [server] table, a unit file, or the command "
                    "that starts the server.",
                ) from None
        raise ConfigError(
            where, "is empty.", "give a [server] table, a unit or a command."
        ) from None
    table = document.get("server")
    if not isinstance(table, dict):
        raise ConfigError(
            "server", "no [server] table.", 'add [server] with at least model_path = "...".'
        )
    return InputKind.TOML, config_from_table(table)


def _swept(config: ServerConfig) -> tuple[str, int]:
    """The key a first sweep varies and its value today: the engine's draft length, else the
    first integer key it declares (its order says what matters most)."""
    own = option_fields(config.engine)
    length = concept_key(config.engine, Concept.DRAFT_LENGTH)
    ints = [f for f in own.values() if f.kind == "int"]
    for field in ([own[length]] if length in own else []) + ints:
        value = getattr(config, field.name)
        if not isinstance(value, int) or value < 1:
            value = int(field.example) if field.example.isdigit() else 3
        return field.name, value
    return "", 3


def _example_sweep(config: ServerConfig, bench: Sequence[str]) -> str:
    key, steps = _swept(config)
    values = sorted({max(1, steps - 1), steps, steps + 1, steps + 2})
    return (
        "# A first sweep around what runs today (uncomment to use; the keys are in\n"
        '# docs/controller.md, "Sweep plans"; `specconsole sweep PLAN --dry-run` shows\n'
        "# every change before anything is made):\n"
        "# [sweep]\n"
        '# strategy = "boundary"\n'
        '# finally = "best"          # leave the box serving the best trial (or "original")\n'
        "# [sweep.axes]\n"
        f"# {key} = {values}\n" + "".join(f"{line}\n" for line in bench)
    )


_UNSET_BY_DEFAULT = frozenset(f.name for f in dataclasses.fields(ServerConfig) if f.default is None)
"""The ``[server]`` keys that may be left unset (the engine then chooses)."""


def derived_fields(config: ServerConfig) -> tuple[ServerConfig, list[str]]:
    """``config`` without the values its engine derives anyway, and one sentence per value
    left out. A value is derived when leaving it unset changes nothing the engine runs
    (SGLang's draft tokens at topk 1 are ``steps + 1`` whatever the unit says); kept in a
    plan, it would be swept unchanged while the engine — and every deploy — replaces it."""
    from specconsole.core.config.validation import normalized  # the one normalisation

    runs = normalized(config)[0]
    notes: list[str] = []
    values = [(n, v) for n, v in _fields(config).items() if n in _UNSET_BY_DEFAULT]
    for name, value in [*values, *config.options]:
        if value is None:
            continue
        candidate = dataclasses.replace(config, **{name: None})
        unset, issues = normalized(candidate)
        if unset != runs:  # the value changes what runs: it is the user's, kept
            continue
        why = next((i.message for i in issues if i.field == name), "")
        config = candidate
        notes.append(
            f"{name} = {value!r} is left out: the engine derives it"
            + (f" ({why.rstrip('.')})" if why else "")
        )
    return config, notes


def plan_from_unit(
    unit_text: str,
    *,
    host: Mapping[str, Any],
    service: Mapping[str, Any],
    source: str,
    secret_env: tuple[str, ...] = (),
    bench: Sequence[str] = (),
    context: UnitContext | None = None,
) -> str:
    """A commented plan (TOML) whose ``[server]`` base is what ``unit_text`` runs.

    ``host``/``service`` are the tables that reach the box again; ``source`` names where the
    unit came from (for the header); ``bench`` are comment lines about the benchmark (what
    the default costs the box). The result reads back with the same configuration (checked),
    secret values and the values the engine derives (:func:`derived_fields`) left out.
    """
    config = parse_unit(unit_text, context)
    public, secret = split_secrets(config.env, secret_env)
    args, secret_flags = drop_secret_flags(config.extra_args, secret_env)
    config = dataclasses.replace(config, extra_args=args)
    base, derived = derived_fields(ServerConfig(**{**_fields(config), "env": public}))
    server = config_to_table(base)
    header = [
        f"# Imported by `specconsole import` from {source}.",
        "# [server] is exactly what the unit runs today: deploys change only the flags and",
        "# Environment= lines this plan names; every other line of the unit stays as it is.",
    ]
    if secret:
        names = ", ".join(name for name, _ in secret)
        header.append(
            f"# Secret variables set by the unit ({names}) are not copied here: the unit keeps"
            " them."
        )
    if secret_flags:
        header.append(
            f"# Secret flags of the unit's ExecStart ({', '.join(secret_flags)}) are not copied "
            "here: the unit keeps them."
        )
    for note in derived:
        header += textwrap.wrap(
            f"{note}; deploys write the derived value.",
            88,
            initial_indent="# ",
            subsequent_indent="#   ",
        )
    body = tomli_w.dumps({"host": dict(host), "service": dict(service), "server": server})
    text = "\n".join(header) + "\n\n" + body + "\n" + _example_sweep(base, bench)
    if config_from_table(tomllib.loads(text)["server"]) != base:
        raise ConfigError("server", "the imported plan does not read back.", "report this bug.")
    return text


def _fields(config: ServerConfig) -> dict[str, Any]:
    return {name: getattr(config, name) for name in config.__dataclass_fields__}
