"""One configuration's launch on a box, as text: argv, a command line, a unit or a [server] table.

Why one renderer: ``specconsole render`` shows what would be deployed and ``specconsole
best`` (and the end of a sweep) prints the winner's launch; an operator copies either onto
the box, so both must print the same bytes for the same configuration and neither may print
a secret. The rules, once:

* the words come from ``core.config.render`` (the configuration's engine, in its release's
  flag names: a trial's effective configuration carries the box's release);
* a secret variable (``core.config.secrets``: ``*TOKEN*``, ``*API_KEY*``…, or listed in
  ``[service] secret_env``) is never written with its value: the unit names the
  ``EnvironmentFile=`` the systemd backend writes it to (0600, ``BACKUP_DIR/UNIT-env``) —
  the same generated unit the backend deploys (``core.launch.unit.generate_unit``) — and
  the command line sources that file (``set -a; . FILE; set +a; …``);
* the ``plan`` form is a ``[server]`` table with the box it ran on — its ``[host]`` and its
  ``[service]`` (the backend, its folders, image or job; only what differs from the defaults,
  and never a name the engine derives itself) — and the name, which ``validate`` accepts and
  ``render`` turns into exactly these texts, for every engine and backend; a secret's value
  there is the redaction marker;
* a file the command line names (``Engine.side_files``: SGLang's adaptive config of a
  schedule) comes with it — written by the command line first (a here-document to the path
  its flag names), quoted whole in comments above a unit — so the launch runs as measured.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import fields, replace
from enum import Enum, StrEnum
from typing import Any

import tomli_w

from specconsole.core.config.model import ServerConfig, config_to_table
from specconsole.core.config.render import to_argv
from specconsole.core.config.secrets import (
    REDACTED,
    by_reference,
    redact_args,
    split_secrets,
)
from specconsole.core.engine.registry import EngineNotFound, engine_for
from specconsole.core.launch.systemd import UnitOptions
from specconsole.core.launch.unit import generate_unit
from specconsole.core.plans.profile import (
    HostProfile,
    Profile,
    ServiceProfile,
    UnitScope,
    for_engine,
)


class LaunchForm(StrEnum):
    COMMAND = "command"
    """One POSIX shell line: public variables inline, secrets sourced from their file."""
    ARGV = "argv"
    """The server's argv as a JSON list (no environment)."""
    UNIT = "unit"
    """A whole systemd unit, secrets in its ``EnvironmentFile=``."""
    PLAN = "plan"
    """A ``[server]`` table (TOML) that ``render`` reads back to the same launch."""


RENDER_FORMS: tuple[str, ...] = ("argv", "command", "unit")
"""The forms ``render`` prints (``plan`` is ``best``'s way to hand a launch to ``render``)."""


def unit_options(
    scope: UnitScope = UnitScope.SYSTEM, description: str | None = None
) -> UnitOptions:
    """Rendering options of a generated unit for the manager's scope (a user manager has
    no ``multi-user.target``)."""
    wanted = "default.target" if scope is UnitScope.USER else UnitOptions().wanted_by
    return UnitOptions(description=description, wanted_by=wanted)


def secret_env_file(service: ServiceProfile, backup_dir: str | None = None) -> str:
    """The 0600 ``EnvironmentFile=`` the systemd backend writes secrets to: ``UNIT-env`` in
    the backup folder (``backup_dir`` when the caller expanded it on the box)."""
    return f"{(backup_dir or service.resolved_backup_dir()).rstrip('/')}/{service.unit}-env"


def _side_files(config: ServerConfig) -> tuple[tuple[str, str], ...]:
    """(path as the flags name it, text) of each file ``config``'s command line names."""
    try:
        files = engine_for(config).side_files(config)
    except EngineNotFound:
        return ()
    folder = (config.side_dir or "").rstrip("/")
    return tuple((f"{folder}/{f.name}" if folder else f.name, f.text) for f in files)


def _written(config: ServerConfig) -> str:
    """Shell lines writing the side files first (``''``: none)."""
    out = []
    for path, text in _side_files(config):
        body = text if text.endswith("\n") else text + "\n"
        out.append(f"cat > {shlex.quote(path)} <<'SPECCONSOLE_EOF'\n{body}SPECCONSOLE_EOF\n")
    return "".join(out)


def _quoted(config: ServerConfig) -> str:
    """Comment lines quoting the side files a unit's command line names (``''``: none)."""
    out = []
    for path, text in _side_files(config):
        out.append(f"# {path} (the unit's command line names it; write it first):\n")
        out += [f"#   {line}\n" for line in text.rstrip("\n").splitlines()]
    return "".join(out)


def _command(config: ServerConfig, service: ServiceProfile) -> str:
    ref, flag_secrets = by_reference(config, service.secret_env)
    public, secret = split_secrets(ref.env, service.secret_env)
    secret = (*secret, *flag_secrets)
    line = shlex.join([*(f"{n}={v}" for n, v in public), *to_argv(ref)])
    for variable, _value in flag_secrets:  # a reference the shell expands, from the file
        line = line.replace(f"'${{{variable}}}'", f'"${{{variable}}}"')
    if not secret:
        return line
    file = secret_env_file(service)
    # a home-relative path stays expandable: ~/ outside the quotes
    path = "~/" + shlex.quote(file[2:]) if file.startswith("~/") else shlex.quote(file)
    names = ", ".join(name for name, _value in secret)
    return f"set -a; . {path}; set +a; {line}  # {names} from {secret_env_file(service)}"


def _toml(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_toml(v) for v in value]
    return value


def _changed(table: Any, default: Any, always: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fields of the dataclass ``table`` that differ from ``default``'s (and ``always``)
    as TOML values, in the declared order; unset (``None``) ones left out."""
    out: dict[str, Any] = {}
    for f in fields(table):
        value = getattr(table, f.name)
        if value is None or (f.name not in always and value == getattr(default, f.name)):
            continue
        out[f.name] = _toml(value)
    return out


def _plan(config: ServerConfig, profile: Profile, name: str | None) -> str:
    service = profile.service
    _public, secret = split_secrets(config.env, service.secret_env)
    hidden = {n for n, _v in secret}
    env = tuple((n, REDACTED if n in hidden else v) for n, v in config.env)
    config = replace(config, extra_args=redact_args(config.extra_args, service.secret_env))
    # what the engine derives (its unit, container, job, image) is left for it to derive again
    derived = for_engine(ServiceProfile(kind=service.kind), config.engine)
    table: dict[str, Any] = {
        "host": _changed(profile.host, HostProfile(), always=("transport",)),
        "service": _changed(service, derived, always=("kind",)),
        "server": config_to_table(replace(config, env=env)),
    }
    if name:
        table = {"name": name, **table}
    return tomli_w.dumps(table)


def launch_text(
    config: ServerConfig,
    form: LaunchForm | str,
    service: ServiceProfile | None = None,
    *,
    name: str | None = None,
    host: HostProfile | None = None,
) -> str:
    """``config``'s launch in ``form`` on a box run as ``service`` (default: the default
    ``[service]``) and reached through ``host`` (the plan form's ``[host]``; default: this
    machine), newline-terminated. ``name`` is the unit's ``Description=`` (and the plan
    form's ``name``). Raises ``ConfigError`` when the launcher cannot be split."""
    service = for_engine(service or ServiceProfile(), config.engine)
    form = LaunchForm(form)
    if form is LaunchForm.ARGV:  # no file to read a secret from: its marker
        return json.dumps(list(redact_args(to_argv(config), service.secret_env))) + "\n"
    if form is LaunchForm.COMMAND:
        return _written(config) + _command(config, service) + "\n"
    if form is LaunchForm.PLAN:
        return _plan(config, Profile(host or HostProfile(), service), name)
    options = unit_options(service.scope, name or None)
    return (
        _quoted(config)
        + generate_unit(
            config, options, env_file_path=secret_env_file(service), secret_env=service.secret_env
        ).text
    )


__all__ = [
    "RENDER_FORMS",
    "LaunchForm",
    "launch_text",
    "secret_env_file",
    "unit_options",
]
