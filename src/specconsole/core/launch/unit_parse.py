"""A systemd unit read back into the configuration it runs.

Why apart from writing units (:mod:`.systemd`) and from systemd's low-level rules
(:mod:`.unit_read`): this is where a unit's settings meet the configuration model —
``ExecStart=`` parsed like a command line (:func:`~.command.parse_command`) after systemd's
own expansion, ``Environment=``, ``User=``, ``WorkingDirectory=`` and ``Description=`` filling
their fields — and where a unit systemd would refuse or read differently is refused with the
setting and the fix (issue 27 #10): two ``ExecStart=`` lines, a variable nothing sets, a
specifier that cannot be known here. ``EnvironmentFile=`` variables expand ``ExecStart`` but are
never copied into the configuration (the file keeps them; they are often secrets).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import ServerConfig
from specconsole.core.launch.command import parse_command
from specconsole.core.launch.unit_read import (
    UnitContext,
    expand_exec,
    expand_specifiers,
    parse_env_file,
    read_cat,
    systemd_split,
    unit_lines,
)

__all__ = ["UnitSettings", "parse_unit", "read_settings", "unit_entries", "unit_user"]

MANAGER_VARIABLES = frozenset(
    {
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "PATH",
        "LANG",
        "INVOCATION_ID",
        "JOURNAL_STREAM",
        "RUNTIME_DIRECTORY",
        "STATE_DIRECTORY",
        "CACHE_DIRECTORY",
        "LOGS_DIRECTORY",
        "CONFIGURATION_DIRECTORY",
        "CREDENTIALS_DIRECTORY",
    }
)
"""Variables the service manager itself puts in a service's environment."""


def unit_entries(text: str) -> list[tuple[str, str, str]]:
    """(section, key, value) for every setting, continuation lines joined, lines split the
    way systemd splits them (:func:`~.unit_read.unit_lines`)."""
    out: list[tuple[str, str, str]] = []
    section = ""
    pending: str | None = None
    for raw in unit_lines(text):
        line = raw.strip()
        if pending is not None:
            if line.startswith(("#", ";")):
                continue
            line = pending + " " + line
            pending = None
        elif not line or line.startswith(("#", ";")):
            continue
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, sep, value = line.partition("=")
        if sep:
            out.append((section, key.strip(), value.strip()))
    if pending is not None:
        key, sep, value = pending.partition("=")
        if sep:
            out.append((section, key.strip(), value.strip()))
    return out


@dataclass(frozen=True, slots=True)
class UnitSettings:
    """The settings of a unit that decide what its service runs, specifiers resolved."""

    exec_start: tuple[str, ...] = ()
    """The one effective ``ExecStart=`` (after drop-ins' resets), raw; empty when none."""
    environment: dict[str, str] = field(default_factory=dict)
    """``Environment=`` assignments, in order (the last of a name wins)."""
    env_files: tuple[tuple[str, bool], ...] = ()
    """``EnvironmentFile=`` paths, each with whether it is optional (``-``)."""
    fields: dict[str, Any] = field(default_factory=dict)
    """``description``, ``user``, ``working_directory`` when the unit sets them."""

    def file_environment(self, context: UnitContext) -> tuple[dict[str, str], list[str]]:
        """(variables of the ``EnvironmentFile=`` files the context holds, the paths of
        those it does not — their variables are unknown here)."""
        found: dict[str, str] = {}
        unread: list[str] = []
        for path, _optional in self.env_files:
            text = context.env_files.get(path)
            if text is None:
                unread.append(path)
            else:
                found.update(parse_env_file(text))
        return found, unread


def read_settings(text: str, context: UnitContext) -> UnitSettings:
    """The unit's deciding settings (see :class:`UnitSettings`); raises ConfigError for a
    specifier that cannot be resolved in one of them."""
    execs: list[str] = []
    env: dict[str, str] = {}
    files: list[tuple[str, bool]] = []
    fields: dict[str, Any] = {}
    for section, key, value in unit_entries(text):
        where = f"{key}="
        if section == "Unit" and key == "Description":
            try:
                fields["description"] = expand_specifiers(value, context, where)
            except ConfigError:  # a title: shown as written
                fields["description"] = value.replace("%%", "%")
        if section != "Service":
            continue
        if key == "ExecStart":
            execs.append(value)  # an empty assignment resets (drop-ins)
        elif key == "Environment":
            if not value:
                env.clear()
                continue
            for word in systemd_split(value):
                name, sep, val = word.partition("=")
                if sep and name:
                    env[name] = expand_specifiers(val, context, f"Environment={name}")
        elif key == "EnvironmentFile":
            if not value:
                files.clear()
                continue
            optional = value.startswith("-")
            files.append((expand_specifiers(value.lstrip("-"), context, where), optional))
        elif key == "User":
            fields["user"] = expand_specifiers(value, context, where) or None
        elif key == "WorkingDirectory":
            wd = expand_specifiers(value.lstrip("-"), context, where)
            if wd == "~":
                wd = context.facts.get("h", "") if context.manager == "user" else "/root"
            fields["working_directory"] = wd or None
    return UnitSettings(tuple(_effective_exec(execs)), env, tuple(files), fields)


def unit_user(text: str, context: UnitContext | None = None) -> str | None:
    """The account the unit's service runs as (``User=``), or None (the manager's own, or a
    ``User=`` whose specifier cannot be resolved here)."""
    try:
        return read_settings(text, context or UnitContext()).fields.get("user")
    except ConfigError:
        return None


def _effective_exec(values: list[str]) -> list[str]:
    """The ``ExecStart=`` assignments in force: those after the last empty one (a reset)."""
    current: list[str] = []
    for value in values:
        if value:
            current.append(value)
        else:
            current = []
    return current


def parse_unit(text: str, context: UnitContext | None = None) -> ServerConfig:
    """Read a unit file (or ``systemctl cat`` output, headers and drop-ins included) back
    into the configuration it runs.

    ``ExecStart`` is expanded as systemd expands it (specifiers, ``$NAME``/``${NAME}`` from
    ``Environment=`` and readable ``EnvironmentFile=`` files) and then parsed like a command
    line; ``Environment=``, ``User=``, ``WorkingDirectory=`` and ``Description=`` fill their
    fields. Raises :class:`ConfigError` naming the setting and the fix when there is no
    ``ExecStart=``, more than one, or a word cannot be known here.
    """
    cat = read_cat(text)
    if cat.fragment is not None:
        named = UnitContext.from_cat(cat)
        base = context or UnitContext()
        context = dataclasses.replace(
            base,
            unit=base.unit or named.unit,
            fragment=base.fragment or named.fragment,
        )
        text = (cat.main or "") + "\n" + cat.dropins
    context = context or UnitContext()
    settings = read_settings(text, context)
    if not settings.exec_start:
        raise ConfigError(
            "ExecStart", "the unit has no ExecStart= in [Service].", "point at the service's unit."
        )
    if len(settings.exec_start) > 1:
        raise ConfigError(
            "ExecStart",
            f"is given {len(settings.exec_start)} times; systemd refuses a service with more "
            "than one command (unless Type=oneshot), so this unit does not start.",
            "keep one ExecStart= (a drop-in that replaces it first resets it with an empty "
            "ExecStart=).",
        )
    exec_start = settings.exec_start[0]
    while exec_start[:1] in "-@+!:" and exec_start:
        exec_start = exec_start[1:]
    words = [expand_specifiers(w, context, "ExecStart=") for w in systemd_split(exec_start)]
    from_files, unread = settings.file_environment(context)
    env = {**settings.environment, **from_files}  # files override Environment= (systemd.exec)

    def lookup(name: str) -> str:
        if name in env:
            return env[name]
        if unread:
            raise ConfigError(
                "ExecStart",
                f"uses ${name}, set by EnvironmentFile={', '.join(unread)}, which cannot be "
                "read here.",
                "import from the box (specconsole import HOST reads it), or write the value in "
                "ExecStart= or in an Environment= line.",
            )
        what = (
            "which the service manager sets at run time"
            if name in MANAGER_VARIABLES
            else "which no Environment= or EnvironmentFile= of the unit sets (systemd would "
            "pass nothing)"
        )
        raise ConfigError(
            "ExecStart",
            f"uses ${name}, {what}.",
            f"write the value, or set {name} with an Environment= line.",
        )

    config = parse_command(expand_exec(words, lookup))
    merged_env = dict(settings.environment)
    merged_env.update(dict(config.env))
    return dataclasses.replace(config, env=tuple(merged_env.items()), **settings.fields)
