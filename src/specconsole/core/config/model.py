"""The typed model of one inference-server launch configuration.

The shared fields are what every engine has (the model, the address, the launcher, the
environment); every tuning key is the engine's own, in its own server-argument names (the
flag without ``--``, dashes as underscores: SGLang's ``speculative_num_steps``, vLLM's
``num_speculative_tokens``), declared by the engine (``core.config.options``), so the same
word appears in TOML files, the editor, reports and records and users never translate
between them. ``None`` means "not set: let the server choose".

The same module reads and writes the TOML ``[server]`` table (:func:`config_from_table`,
:func:`config_to_table`) and applies editor text (:func:`replace_config`), because the table
*is* this model written down: one list of keys and types (the shared ones in
:mod:`.serverkeys`, the engine's own through :mod:`.declared`) serves files, the editor and
records, and every bad key or value becomes a :class:`ConfigError` that names the key and the
fix instead of a ``TypeError`` deep inside a sweep. Range rules (positive integers,
fractions) are :mod:`specconsole.core.config.validation`'s, so they can all be shown at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from specconsole.core.config.declared import deprecation as deprecation
from specconsole.core.config.declared import engine_attr, key_names
from specconsole.core.config.declared import key_limits as key_limits
from specconsole.core.config.declared import option_fields as option_fields
from specconsole.core.config.errors import ConfigError
from specconsole.core.config.inputs import load_toml
from specconsole.core.config.issues import Issue, Severity
from specconsole.core.config.options import (
    OptionValue,
    parse_option,
    with_options,
)
from specconsole.core.config.serverkeys import FIELD_KINDS as FIELD_KINDS
from specconsole.core.config.serverkeys import KEY_ALIASES as KEY_ALIASES
from specconsole.core.config.serverkeys import NON_OPTIONAL_KEYS as NON_OPTIONAL_KEYS
from specconsole.core.config.serverkeys import FieldKind as FieldKind
from specconsole.core.config.serverkeys import check_key
from specconsole.core.config.serverkeys import parse_field as parse_field
from specconsole.core.engine.registry import (
    EngineNotFound,
    default_engine,
    get_engine,
)

if TYPE_CHECKING:
    from specconsole.core.config.capabilities import FlagSet


@dataclass(frozen=True, slots=True, init=False)
class ServerConfig:
    """One server configuration: what a trial deploys and what its record keeps.

    Its fields are what every engine shares; the engine's own settings (SGLang's
    ``speculative_num_steps``, vLLM's ``num_speculative_tokens``, llama.cpp's ``ctx_size``:
    its ``option_fields``) are kept in :attr:`options` and read like fields
    (``config.speculative_num_steps``). The constructor and ``dataclasses.replace`` take them
    as keywords too: ``ServerConfig(model_path="m", speculative_num_steps=3)`` folds each key
    its engine declares into :attr:`options` (``None`` unsets it) and refuses any other,
    naming the key and the engine."""

    model_path: str
    """``--model-path``: local directory or hub id of the target model."""
    engine: str
    """Inference server: a registered engine's name (``core.engine.registry``; the registered
    default when none is given)."""
    engine_version: str | None = None
    """The engine release on the box (``0.5.23``): flags are rendered in that release's names
    (the engine's release table); ``None`` until set or detected."""
    host: str = "127.0.0.1"
    """``--host`` the server binds to."""
    port: int = 30000
    """``--port`` the server listens on."""
    extra_args: tuple[str, ...] = ()
    """Further flags passed verbatim, in order (flags this model does not name)."""
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables for the server process, as ordered (name, value) pairs."""
    launcher: str = ""
    """Command prefix before the flags (``vllm serve``, ``/opt/venv/bin/python -m
    specconsole.sim`` for the simulator); the engine's ``default_launcher`` when none is
    given."""
    working_directory: str | None = None
    """Working directory of the server process (systemd ``WorkingDirectory=``)."""
    user: str | None = None
    """Account the service runs as (systemd ``User=``)."""
    options: tuple[tuple[str, OptionValue], ...] = ()
    """The engine's own settings (its ``option_fields``, :mod:`.options`), as ordered
    (key, value) pairs in the engine's declared order; read them like fields."""
    description: str = field(default="", compare=False)
    """Free-text label shown in reports; not part of the configuration's identity."""
    box_flags: FlagSet | None = field(default=None, compare=False, repr=False)
    """The flags the box's server binary accepts, from its own ``--help``
    (:mod:`.capabilities`; set by the controller before validation and deploy, never written
    to a file): renderers pick the spellings it has, validation refuses a flag it lacks."""
    side_dir: str | None = field(default=None, compare=False, repr=False)
    """The absolute folder on the box where the backend deploying this configuration puts its
    side files (``Engine.side_files``: SGLang's adaptive config), set by the controller from
    the backend before validation and deploy, never written to a file; the engine renders a
    side file's path in it (``None``: the bare file name, as ``render`` shows it)."""

    def __init__(
        self,
        model_path: str,
        engine: str | None = None,
        engine_version: str | None = None,
        host: str = "127.0.0.1",
        port: int = 30000,
        extra_args: tuple[str, ...] = (),
        env: tuple[tuple[str, str], ...] = (),
        launcher: str | None = None,
        working_directory: str | None = None,
        user: str | None = None,
        options: tuple[tuple[str, OptionValue], ...] = (),
        description: str = "",
        box_flags: FlagSet | None = None,
        side_dir: str | None = None,
        **values: Any,
    ) -> None:
        if engine is None:
            engine = default_engine()
        if values:
            options = _folded(engine, options, values)
        if launcher is None:
            launcher = _default_launcher(engine)
        put = object.__setattr__
        put(self, "model_path", model_path)
        put(self, "engine", engine)
        put(self, "engine_version", engine_version)
        put(self, "host", host)
        put(self, "port", port)
        put(self, "extra_args", extra_args)
        put(self, "env", env)
        put(self, "launcher", launcher)
        put(self, "working_directory", working_directory)
        put(self, "user", user)
        put(self, "options", options)
        put(self, "description", description)
        put(self, "box_flags", box_flags)
        put(self, "side_dir", side_dir)

    def __getattr__(self, name: str) -> Any:
        """An engine option by its key, like a field: its value, or ``None`` when the engine
        declares the key and it is unset (the server's own default applies)."""
        if name.startswith("_"):
            raise AttributeError(name)
        for key, value in object.__getattribute__(self, "options"):
            if key == name:
                return value
        if name in option_fields(object.__getattribute__(self, "engine")):
            return None
        raise AttributeError(f"ServerConfig has no field or {self.engine} option {name!r}")


def _default_launcher(engine: str) -> str:
    try:
        return get_engine(str(engine)).default_launcher
    except EngineNotFound:  # validation names the engine; render needs some launcher
        return get_engine(default_engine()).default_launcher


def _folded(
    engine: str, options: tuple[tuple[str, OptionValue], ...], values: Mapping[str, Any]
) -> tuple[tuple[str, OptionValue], ...]:
    """``options`` with the keyword ``values`` applied: each a key ``engine`` declares (or an
    alias of one); typed values as given, except that a key with its own reader reads them
    (SGLang's algorithm as its enum) when it can."""
    own = option_fields(engine)
    names = key_names(engine)
    changes: dict[str, Any] = {}
    for key, value in values.items():
        name = names.get(key)
        if name is None or key in own[name].former:
            new = f"; {engine} calls it {name!r}" if name is not None else ""
            raise TypeError(f"ServerConfig: engine {engine!r} has no key {key!r}{new}")
        reader = own[name].reader
        if reader is not None and value is not None:
            try:
                value = reader(value)
            except ConfigError:
                pass  # validation names it
        changes[name] = value
    return with_options(options, changes, own)


# ---------------------------------------------------------------------------------------------
# TOML ``[server]`` table <-> ServerConfig
# ---------------------------------------------------------------------------------------------


def key_name(engine: str, key: str) -> str:
    """The canonical name of ``key`` for ``engine``: an alias or former name of one of its
    keys as that key, anything else as it is."""
    if key in KEY_ALIASES:
        return KEY_ALIASES[key]
    return key_names(engine).get(key, key)


def parse_value(engine: str, name: str, value: Any, *, key: str | None = None) -> Any:
    """One value for ``[server]`` key ``name`` of ``engine`` — a shared field or one of the
    engine's own keys — typed as a file or the editor would give it."""
    own = option_fields(engine)
    if name in own:
        return parse_option(own[name], value, key=key)
    if key is None:
        return parse_field(name, value)
    try:
        return parse_field(name, value)
    except ConfigError as exc:
        raise ConfigError(key, exc.message, exc.fix) from None


def config_from_table(table: Mapping[str, Any], notes: list[Issue] | None = None) -> ServerConfig:
    """Build a :class:`ServerConfig` from a TOML ``[server]`` table.

    Raises :class:`ConfigError` (naming the key and the fix) for unknown keys, bad types and a
    missing ``model_path``. Range rules (positive ints, fractions) are validation's job
    (``specconsole.core.config.validation``) so the editor can show them all at once; an
    engine option's range is checked as it is read (:func:`.options.parse_option`) unless it
    is ``plain``. A former key name (an old plan's) is read as its key, with a deprecation
    notice added to ``notes`` when the caller collects them (a plan, not a record); a key its
    engine retired is dropped the same way.
    """
    if not isinstance(table, Mapping):
        raise ConfigError("server", "expected a table.", "write a [server] table.")
    raw_engine = table.get("engine")
    engine = default_engine() if raw_engine is None else parse_field("engine", raw_engine)
    own = option_fields(engine)
    names = key_names(engine)
    retired = engine_attr(engine, "retired_keys")
    values: dict[str, Any] = {}
    options: dict[str, OptionValue | None] = {}
    for raw_key, raw_value in table.items():
        if not isinstance(raw_key, str):
            raise ConfigError(f"server.{raw_key!r}", "keys must be strings.", "rename the key.")
        if raw_key in retired:
            if notes is not None:
                notes.append(
                    Issue(raw_key, Severity.WARNING, retired[raw_key], f"remove {raw_key}.")
                )
            continue
        name = names.get(raw_key)
        if name is not None:
            if name in options:
                raise ConfigError(
                    f"server.{raw_key}", f"sets {name} twice (via an alias).", "keep one of them."
                )
            options[name] = parse_option(own[name], raw_value, key=f"server.{raw_key}")
            if raw_key in own[name].former and notes is not None:
                notes.append(deprecation(engine, raw_key, name))
            continue
        name = check_key(raw_key, engine)
        if name in values:
            raise ConfigError(
                f"server.{raw_key}", f"sets {name} twice (via an alias).", "keep one of them."
            )
        values[name] = parse_field(name, raw_value)
    if options:
        values["options"] = with_options((), options, own)
    if "model_path" not in values:
        raise ConfigError(
            "server.model_path", "missing.", 'add model_path = "/path/to/model" (or a hub id).'
        )
    values["engine"] = engine
    return ServerConfig(**values)


def table_keys(engine: str) -> tuple[str, ...]:
    """Every ``[server]`` key of ``engine`` in the order a table shows them: the shared ones,
    the engine's leading keys before ``host``, its others before ``extra_args`` (next to the
    other settings of the server)."""
    own = option_fields(engine).values()
    out: list[str] = []
    for name in FIELD_KINDS:
        if name == "host":
            out += [f.name for f in own if f.leads]
        if name == "extra_args":
            out += [f.name for f in own if not f.leads]
        out.append(name)
    return tuple(out)


def config_to_table(config: ServerConfig) -> dict[str, Any]:
    """The TOML ``[server]`` table for ``config`` (unset keys omitted; inverse of
    :func:`config_from_table`)."""
    values = dict(config.options)
    out: dict[str, Any] = {}
    for name in table_keys(config.engine):
        if name not in FIELD_KINDS:
            if name in values:
                out[name] = _plain(values.pop(name))
            continue
        if name == "extra_args":
            out.update((k, _plain(v)) for k, v in values.items())  # not declared: kept all the same
        value = getattr(config, name)
        if value is None:
            continue
        kind = FIELD_KINDS[name]
        if kind == FieldKind.ENGINE:
            out[name] = str(value)
        elif kind == FieldKind.ARGS:
            if value:
                out[name] = list(value)
        elif kind == FieldKind.ENV:
            if value:
                out[name] = dict(value)
        elif name == "description":
            if value:
                out[name] = value
        else:
            out[name] = value
    return out


def _plain(value: OptionValue) -> OptionValue:
    """A value as a file holds it (an engine's enum member as its text)."""
    if isinstance(value, str) and type(value) is not str:
        return str(value)
    return value


def replace_config(config: ServerConfig, **changes: Any) -> ServerConfig:
    """``dataclasses.replace`` that type-checks the changed values like a TOML file would.

    Values may be typed or editor text (``"3"``, ``"0.85"``, ``"EAGLE3"``, ``""`` to unset).
    """
    typed: dict[str, Any] = {}
    engine = changes.get("engine", config.engine)
    own = option_fields(engine)
    names = key_names(engine)
    options: dict[str, OptionValue | None] = {}
    for key, value in changes.items():
        name = names.get(key)
        if name is not None:
            options[name] = parse_option(own[name], value, key=f"server.{key}")
            continue
        name = check_key(key, engine)
        typed[name] = parse_field(name, value)
    if options:
        typed["options"] = with_options(config.options, options, own)
    return dataclasses.replace(config, **typed)


def set_values(config: ServerConfig, **values: Any) -> ServerConfig:
    """``config`` with typed values set by key, fields and engine options alike (a plan's axes
    name either): ``dataclasses.replace`` for the fields, the options tuple for the rest."""
    own = option_fields(config.engine)
    fields = {k: v for k, v in values.items() if k not in own}
    options = {k: v for k, v in values.items() if k in own}
    if options:
        fields["options"] = with_options(config.options, options, own)
    return dataclasses.replace(config, **fields)


def effective_launcher(config: ServerConfig) -> str:
    """The launcher actually used: a configuration of another engine left on the default
    engine's launcher (``dataclasses.replace`` of its engine alone) gets its own engine's."""
    default = default_engine()
    if config.engine == default:
        return config.launcher
    if config.launcher == _default_launcher(default):
        return _default_launcher(config.engine)
    return config.launcher


SIMULATOR_MODULE = "specconsole.sim"
"""The module the simulated box runs as (``{python} -m specconsole.sim``)."""


def runs_simulator(config: ServerConfig) -> bool:
    """Whether ``config``'s launcher runs the simulated box (``python -m specconsole.sim``)
    rather than an engine: its acceptance is modelled, not measured on a draft head."""
    words = config.launcher.split()
    return any(a == "-m" and b == SIMULATOR_MODULE for a, b in pairwise(words))


def config_from_toml(text: str) -> ServerConfig:
    """The ``[server]`` table of TOML text (a configuration, profile or plan file).

    Raises :class:`ConfigError` for invalid TOML, a missing ``[server]`` table, or any bad key.
    """
    try:
        document = load_toml(text, "the file", ValueError)
    except ValueError as exc:
        raise ConfigError("toml", f"{exc}.", "fix the file.") from None
    table = document.get("server")
    if not isinstance(table, dict):
        raise ConfigError(
            "server", "no [server] table.", 'add [server] with at least model_path = "...".'
        )
    return config_from_table(table)
