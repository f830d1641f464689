"""The typed host profile: where the GPU box is (``[host]``) and how the server runs there
(``[service]``).

A profile is the part of a plan or settings file that the remote adapters need; it is parsed
here, in the pure core, so every front end (console, headless sweep, tests) reports a bad
profile the same way: a :class:`ProfileError` naming the TOML key and how to fix it, never a
``KeyError`` from deep inside an SSH call. The adapters (``specconsole.remote``) build their
transport and backend from these dataclasses and nothing else.

Example::

    [host]
    transport = "ssh"          # "ssh" or "local"
    alias = "gpu-box"          # a Host alias from ~/.ssh/config, or a hostname
    user = "ubuntu"            # optional; ssh config / local user otherwise

    [service]
    kind = "systemd"           # "systemd", "process", "docker" or "slurm"
    unit = "sglang.service"
    scope = "system"           # or "user" (systemctl --user)
    sudo = true                # systemctl through `sudo -n` (the default for system units)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import Any

from specconsole.core.config.bounds import (
    PROFILE_LIMITS,
    bound_problem,
    control_char_problem,
    parse_choice,
)
from specconsole.core.config.inputs import (
    alias_problem,
    did_you_mean,
    host_problem,
    load_toml,
    unit_name_problem,
)
from specconsole.core.engine.registry import EngineNotFound, default_engine, get_engine
from specconsole.core.launch.jobscript import JobScriptError, check_time_limit, sbatch_option


class ProfileError(ValueError):
    """A profile value is missing or wrong; the message names the key and the fix."""


class TransportKind(StrEnum):
    """How commands reach the box."""

    SSH = "ssh"
    LOCAL = "local"


class ServiceKind(StrEnum):
    """How the inference server is run on the box."""

    SYSTEMD = "systemd"
    PROCESS = "process"
    DOCKER = "docker"
    SLURM = "slurm"


class UnitScope(StrEnum):
    """systemd manager the unit belongs to."""

    SYSTEM = "system"
    USER = "user"


class UnitTemplate(StrEnum):
    """How a systemd deploy treats the unit already on the box."""

    EDIT = "edit"
    GENERATE = "generate"


@dataclass(frozen=True, slots=True)
class HostProfile:
    """The ``[host]`` table: how to reach the box."""

    transport: TransportKind = TransportKind.LOCAL
    """``ssh`` (asyncssh) or ``local`` (subprocesses on this machine)."""
    alias: str | None = None
    """A ``Host`` alias from the ssh config file, or a plain hostname/IP (ssh only)."""
    hostname: str | None = None
    """Overrides the config's ``HostName`` (defaults to ``alias``)."""
    user: str | None = None
    """Login user; the ssh config's ``User`` or the local user otherwise."""
    port: int | None = None
    """SSH port; the ssh config's ``Port`` or 22 otherwise."""
    identity_files: tuple[str, ...] = ()
    """Private keys to offer (``IdentityFile``); the agent and config keys are used too."""
    proxy_jump: str | None = None
    """``ProxyJump`` host(s), e.g. ``bastion`` or ``user@bastion:2222``."""
    known_hosts: str | None = None
    """known_hosts file to verify the host key against (default ``~/.ssh/known_hosts``)."""
    ssh_config: str | None = None
    """ssh config file to read aliases from (default ``~/.ssh/config`` when it exists;
    ``""`` reads none)."""
    use_agent: bool = True
    """Offer keys held by the SSH agent (``SSH_AUTH_SOCK``)."""
    connect_timeout: float = 15.0
    """Seconds to wait for the TCP connect plus SSH handshake."""
    keepalive_interval: float = 15.0
    """Seconds between SSH keepalives; a dead link is noticed after ``count_max`` misses."""
    keepalive_count_max: int = 3
    reconnect_attempts: int = 6
    """Reconnect attempts after a drop before the operation fails with ConnectionLost."""
    reconnect_max_delay: float = 10.0
    """Cap of the exponential backoff between reconnect attempts, in seconds."""

    def target(self) -> str:
        """The host to connect to, as given (alias or hostname)."""
        return self.hostname or self.alias or "localhost"


@dataclass(frozen=True, slots=True)
class ServiceProfile:
    """The ``[service]`` table: how the inference server runs on the box."""

    kind: ServiceKind = ServiceKind.PROCESS
    """``systemd``, ``process`` or ``docker``."""
    unit: str = ""
    """systemd unit name (systemd only); ``""`` until a plan names its engine: then
    ``ENGINE.service`` (:func:`for_engine`)."""
    scope: UnitScope = UnitScope.SYSTEM
    """``system`` (``/etc/systemd/system``, with sudo) or ``user`` (``systemctl --user``)."""
    unit_dir: str | None = None
    """Where the unit file goes; default ``/etc/systemd/system`` or
    ``~/.config/systemd/user``."""
    backup_dir: str | None = None
    """Where timestamped backups go; default ``/var/backups/specconsole`` (system) or
    ``~/.local/state/specconsole/backups`` (user, process)."""
    run_dir: str = "~/.local/state/specconsole/run"
    """Process backend: folder for the deployed command, PID files and per-run logs."""
    stop_timeout: float = 20.0
    """Seconds between TERM and KILL when stopping (process and docker)."""
    image: str = ""
    """Docker image that holds the server; ``""``: the engine's published one
    (``Engine.docker_image``, :func:`for_engine`)."""
    container: str = ""
    """Docker container name; ``""``: ``specconsole-ENGINE`` (:func:`for_engine`)."""
    docker_args: tuple[str, ...] = ("--gpus", "all", "--ipc=host")
    """Extra ``docker run`` arguments before the image."""
    partition: str | None = None
    """Slurm: the partition the job is submitted to (``#SBATCH --partition``)."""
    account: str | None = None
    """Slurm: the account charged (``#SBATCH --account``)."""
    time_limit: str | None = None
    """Slurm: the job's time limit in Slurm's format, e.g. ``"02:00:00"``."""
    sbatch: tuple[str, ...] = ()
    """Slurm: the user's own ``#SBATCH`` lines, e.g. ``["--qos=high"]``."""
    gpus: int | None = None
    """Slurm: GPUs to request (``--gres=gpu:N``) instead of ``tp_size`` × ``pp_size``."""
    job_name: str = ""
    """Slurm: the job's name (``squeue`` shows it); ``""``: ``specconsole-ENGINE``."""
    slurm_conf: str | None = None
    """Slurm: ``SLURM_CONF`` for the login node's commands (default: the cluster's own)."""
    template: UnitTemplate = UnitTemplate.EDIT
    """systemd: ``edit`` changes only what the configuration manages in the unit already on
    the box (its flags and environment; every other line stays); ``generate`` writes a whole
    unit rendered by specconsole. A box without the unit gets a generated one either way."""
    secret_env: tuple[str, ...] = ()
    """Environment names — and server ``--flags`` — whose values are secrets besides the
    obvious ones (``*TOKEN*``, ``*SECRET*``, ``*API_KEY*``, ``*PASSWORD*``, ``--api-key``...):
    never inline in the unit, only in the 0600 ``EnvironmentFile=`` next to the backups, and
    never in a record (``core.config.secrets``)."""
    keep_backups: int = 20
    """Backups of the artifact kept: the newest N plus the very first (the user's original),
    which is never pruned."""
    sudo: bool | None = None
    """Run the manager's commands through ``sudo -n`` (never when logged in as root).
    ``None`` means: yes for system units, no for ``--user`` units, processes and docker."""

    def uses_sudo(self) -> bool:
        if self.sudo is not None:
            return self.sudo
        return self.kind is ServiceKind.SYSTEMD and self.scope is UnitScope.SYSTEM

    def resolved_unit_dir(self) -> str:
        if self.unit_dir:
            return self.unit_dir
        return "/etc/systemd/system" if self.scope is UnitScope.SYSTEM else "~/.config/systemd/user"

    def resolved_backup_dir(self) -> str:
        if self.backup_dir:
            return self.backup_dir
        if self.kind is ServiceKind.SYSTEMD and self.scope is UnitScope.SYSTEM:
            return "/var/backups/specconsole"
        return "~/.local/state/specconsole/backups"


@dataclass(frozen=True, slots=True)
class Profile:
    """A whole host profile: both tables."""

    host: HostProfile = field(default_factory=HostProfile)
    service: ServiceProfile = field(default_factory=ServiceProfile)


def for_engine(service: ServiceProfile, engine: str) -> ServiceProfile:
    """``service`` with the names it leaves to the engine filled in: the unit
    ``ENGINE.service``, the container and the Slurm job ``specconsole-ENGINE``, the image the
    engine publishes (``Engine.docker_image``; an engine without one needs ``[service]
    image``)."""
    try:
        image = getattr(get_engine(engine), "docker_image", None) or ""
    except EngineNotFound:
        image = ""
    return replace(
        service,
        unit=service.unit or f"{engine}.service",
        image=service.image or image,
        container=service.container or f"specconsole-{engine}",
        job_name=service.job_name or f"specconsole-{engine}",
    )


def named(service: ServiceProfile) -> ServiceProfile:
    """``service`` with every name it leaves to an engine filled in: a backend built on a
    ``[service]`` no plan resolved (a plan resolves it for its engine) takes the default
    engine's."""
    if service.unit and service.image and service.container and service.job_name:
        return service
    return for_engine(service, default_engine())


def default_unit(engine: str | None = None) -> str:
    """The unit a ``[service]`` without one runs ``engine`` as (``ENGINE.service``; no engine:
    the registered default's) — what the box commands address when not told ``--unit``."""
    return for_engine(ServiceProfile(), engine or default_engine()).unit


def profile_for_engine(profile: Profile, engine: str) -> Profile:
    """``profile`` with its ``[service]`` names filled in for ``engine`` (:func:`for_engine`)."""
    return replace(profile, service=for_engine(profile.service, engine))


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


def _check_keys(table: Mapping[str, Any], cls: type, section: str) -> None:
    known = {f.name for f in fields(cls)}
    for key in table:
        if key not in known:
            raise ProfileError(
                f"[{section}] unknown key {key!r}; {did_you_mean(key, known)}"
                f"known keys: {', '.join(sorted(known))}"
            )


def _enum(value: Any, enum: type[StrEnum], where: str) -> Any:
    return parse_choice(enum, value, where, ProfileError)


def _typed(value: Any, kind: type | tuple[type, ...], where: str, hint: str) -> Any:
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise ProfileError(f"{where} must be {hint}, not a boolean")
    if not isinstance(value, kind):
        raise ProfileError(f"{where} must be {hint}, got {value!r}")
    return value


def _str_tuple(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ProfileError(f"{where} must be a string or a list of strings, got {value!r}")


def _positive(value: float, where: str) -> None:
    if value <= 0:
        raise ProfileError(f"{where} must be greater than 0, got {value!r}")


def _bounded(value: float, where: str) -> None:
    """Within ``core.config.bounds.PROFILE_LIMITS`` (finite, above 0, not absurdly large)."""
    if problem := bound_problem(where, value, PROFILE_LIMITS[where]):
        raise ProfileError(problem)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_FLAG = re.compile(r"--?[A-Za-z][A-Za-z0-9_-]*\Z")
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\$?\Z")


def _name_problem(key: str, value: str, where: str) -> str:
    """What may name the box, its login or its files: nothing ssh would read as an option,
    no shell word, no control character ('' when fine)."""
    if key == "alias":
        return alias_problem(value, where)
    if key == "hostname":
        return host_problem(value, where)
    if key == "user" and not _USER.match(value):
        return f"{where} = {value!r} is not a login name; fix: give the account name on the box"
    if key == "proxy_jump":
        hops = [hop.rpartition("@")[2].split(":")[0] for hop in value.split(",")]
        for hop in hops:
            if problem := alias_problem(hop, where):
                return problem
    if problem := control_char_problem(value):
        return f"{where} {problem}; fix: remove it"
    return ""


def parse_host(table: Mapping[str, Any]) -> HostProfile:
    """Build a :class:`HostProfile` from a ``[host]`` table."""
    _check_keys(table, HostProfile, "host")
    kw: dict[str, Any] = {}
    for key, value in table.items():
        where = f"[host] {key}"
        if key == "transport":
            kw[key] = _enum(value, TransportKind, where)
        elif key in ("alias", "hostname", "user", "proxy_jump", "known_hosts", "ssh_config"):
            kw[key] = _typed(value, str, where, "a string")
            if problem := _name_problem(key, kw[key], where):
                raise ProfileError(problem)
        elif key == "port":
            port = _typed(value, int, where, "an integer")
            if not 0 < port < 65536:
                raise ProfileError(f"{where} must be between 1 and 65535, got {port}")
            kw[key] = port
        elif key == "identity_files":
            kw[key] = _str_tuple(value, where)
        elif key == "use_agent":
            kw[key] = _typed(value, bool, where, "true or false")
        elif key in ("connect_timeout", "keepalive_interval", "reconnect_max_delay"):
            kw[key] = float(_typed(value, (int, float), where, "a number of seconds"))
            _bounded(kw[key], where)
        elif key in ("keepalive_count_max", "reconnect_attempts"):
            kw[key] = _typed(value, int, where, "an integer")
            if kw[key] < 0:
                raise ProfileError(f"{where} must be 0 or more, got {kw[key]}")
            _bounded(kw[key], where)
    profile = HostProfile(**kw)
    if profile.transport is TransportKind.SSH and not (profile.alias or profile.hostname):
        raise ProfileError(
            '[host] transport = "ssh" needs alias (an ~/.ssh/config Host or a hostname) or hostname'
        )
    return profile


def parse_service(table: Mapping[str, Any]) -> ServiceProfile:
    """Build a :class:`ServiceProfile` from a ``[service]`` table."""
    _check_keys(table, ServiceProfile, "service")
    kw: dict[str, Any] = {}
    for key, value in table.items():
        where = f"[service] {key}"
        if key == "kind":
            kw[key] = _enum(value, ServiceKind, where)
        elif key == "scope":
            kw[key] = _enum(value, UnitScope, where)
        elif key == "template":
            kw[key] = _enum(value, UnitTemplate, where)
        elif key == "secret_env":
            kw[key] = _str_tuple(value, where)
        elif key == "keep_backups":
            kw[key] = _typed(value, int, where, "an integer")
            if kw[key] < 1:
                raise ProfileError(f"{where} must be 1 or more, got {kw[key]}")
            _bounded(kw[key], where)
        elif key in (
            "unit",
            "unit_dir",
            "backup_dir",
            "run_dir",
            "image",
            "container",
            "partition",
            "account",
            "job_name",
            "slurm_conf",
        ):
            text = _typed(value, str, where, "a string")
            if not text.strip():
                raise ProfileError(f"{where} must not be empty")
            if problem := control_char_problem(text):
                raise ProfileError(f"{where} {problem}; fix: remove it")
            kw[key] = text
        elif key == "stop_timeout":
            kw[key] = float(_typed(value, (int, float), where, "a number of seconds"))
            _bounded(kw[key], where)
        elif key == "docker_args":
            kw[key] = _str_tuple(value, where)
        elif key == "sbatch":
            kw[key] = _slurm_checked(sbatch_option, _str_tuple(value, where), where)
        elif key == "time_limit":
            kw[key] = _slurm_checked(
                check_time_limit, (_typed(value, str, where, "a string"),), where
            )[0]
        elif key == "gpus":
            kw[key] = _typed(value, int, where, "an integer")
            if kw[key] < 1:
                raise ProfileError(f"{where} must be 1 or more, got {kw[key]}")
            _bounded(kw[key], where)
        elif key == "sudo":
            kw[key] = _typed(value, bool, where, "true or false")
    profile = ServiceProfile(**kw)
    if profile.unit and (problem := unit_name_problem(profile.unit, "[service] unit")):
        raise ProfileError(problem)
    for name in profile.secret_env:
        if not (_ENV_NAME.match(name) or _FLAG.match(name)):
            raise ProfileError(
                f"[service] secret_env: {name!r} is neither a variable name nor a --flag; "
                'fix: e.g. secret_env = ["MY_TOKEN", "--my-key"]'
            )
    return profile


def _slurm_checked(check: Any, values: tuple[str, ...], where: str) -> tuple[str, ...]:
    try:
        return tuple(check(value, where) for value in values)
    except JobScriptError as exc:
        raise ProfileError(str(exc)) from None


def parse_profile(document: Mapping[str, Any]) -> Profile:
    """Build a :class:`Profile` from a parsed TOML document's ``[host]`` and ``[service]``.

    Missing tables mean defaults (the local transport and the process backend).
    """
    host = document.get("host", {})
    service = document.get("service", {})
    if not isinstance(host, Mapping):
        raise ProfileError('[host] must be a table, e.g. [host] followed by transport = "ssh"')
    if not isinstance(service, Mapping):
        raise ProfileError("[service] must be a table, e.g. [service] followed by kind = ...")
    return Profile(host=parse_host(host), service=parse_service(service))


def loads_profile(text: str) -> Profile:
    """Parse TOML text holding ``[host]``/``[service]`` tables (other tables are ignored)."""
    return parse_profile(load_toml(text, "the profile", ProfileError))
