"""The typed model of one inference-server launch configuration.

Field names are SGLang's own server-argument names (the flag without ``--``, dashes as
underscores), so the same word appears in TOML files, the editor, reports and records and
users never translate between them. ``None`` means "not set: let the server choose".

The same module reads and writes the TOML ``[server]`` table (:func:`config_from_table`,
:func:`config_to_table`) and applies editor text (:func:`replace_config`), because the table
*is* this model written down: one list of keys and types (:data:`FIELD_KINDS`) serves files,
the editor and records, and every bad key or value becomes a :class:`ConfigError` that names
the key and the fix instead of a ``TypeError`` deep inside a sweep. Range rules (positive
integers, fractions) are :mod:`specconsole.core.config.validation`'s, so they can all be shown at
once.
"""

from __future__ import annotations

import dataclasses
import difflib
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.inputs import load_toml
from specconsole.core.config.options import OptionField, OptionValue, parse_option, with_options
from specconsole.core.engine.registry import (
    DEFAULT_ENGINE,
    EngineNotFound,
    engine_names,
    get_engine,
)

if TYPE_CHECKING:
    from specconsole.core.config.capabilities import FlagSet


class SpecAlgorithm(StrEnum):
    """Speculative decoding algorithms SGLang accepts for ``--speculative-algorithm``."""

    EAGLE = "EAGLE"
    EAGLE3 = "EAGLE3"
    NEXTN = "NEXTN"
    STANDALONE = "STANDALONE"
    NGRAM = "NGRAM"


DEFAULT_SGLANG_LAUNCHER = "python3 -m sglang.launch_server"
"""The command prefix that starts the default engine (SGLang; ``sglang serve`` is the newer
alternative): a configuration's launcher when it names none. Another engine's configuration
left on it is started with that engine's own default (:func:`effective_launcher`)."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One server configuration: what a trial deploys and what its record keeps."""

    model_path: str
    """``--model-path``: local directory or hub id of the target model."""
    engine: str = DEFAULT_ENGINE
    """Inference server: a registered engine's name (``core.engine.registry``)."""
    engine_version: str | None = None
    """The engine release on the box (``0.5.23``): flags are rendered in that release's names
    (:mod:`specconsole.engines.sglang.releases`); ``None`` until set or detected."""
    speculative_algorithm: SpecAlgorithm | None = None
    """``--speculative-algorithm``; ``None`` disables speculative decoding."""
    speculative_draft_model_path: str | None = None
    """``--speculative-draft-model-path``: the draft (EAGLE head) model."""
    speculative_num_steps: int | None = None
    """``--speculative-num-steps``: draft depth (tokens drafted per verify step per branch)."""
    speculative_eagle_topk: int | None = None
    """``--speculative-eagle-topk``: branching factor of the draft tree."""
    speculative_num_draft_tokens: int | None = None
    """``--speculative-num-draft-tokens``: verify width (tree nodes plus the root)."""
    mem_fraction_static: float | None = None
    """``--mem-fraction-static``: share of GPU memory for weights plus the KV pool."""
    cuda_graph_max_bs: int | None = None
    """``--cuda-graph-max-bs``: largest decode batch captured as a CUDA graph."""
    max_running_requests: int | None = None
    """``--max-running-requests``: SGLang caps it at 48 with speculative decoding if unset."""
    tp_size: int | None = None
    """``--tp-size``: tensor-parallel GPU count."""
    context_length: int | None = None
    """``--context-length``: maximum sequence length."""
    attention_backend: str | None = None
    """``--attention-backend`` (e.g. ``fa3``, ``flashinfer``, ``trtllm_mha``)."""
    host: str = "127.0.0.1"
    """``--host`` the server binds to."""
    port: int = 30000
    """``--port`` the server listens on."""
    extra_args: tuple[str, ...] = ()
    """Further flags passed verbatim, in order (flags this model does not name)."""
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables for the server process, as ordered (name, value) pairs."""
    launcher: str = DEFAULT_SGLANG_LAUNCHER
    """Command prefix before the flags, e.g. ``python3 -m sglang.launch_server``,
    ``sglang serve`` or ``/opt/venv/bin/python -m specconsole.sim`` for the simulator."""
    working_directory: str | None = None
    """Working directory of the server process (systemd ``WorkingDirectory=``)."""
    user: str | None = None
    """Account the service runs as (systemd ``User=``)."""
    options: tuple[tuple[str, OptionValue], ...] = ()
    """The engine's own settings (its ``option_fields``, :mod:`.options`), as ordered
    (key, value) pairs; read them like fields (``config.spec_draft_n_max``)."""
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


# ---------------------------------------------------------------------------------------------
# TOML ``[server]`` table <-> ServerConfig
# ---------------------------------------------------------------------------------------------


class FieldKind(StrEnum):
    """How a ``[server]`` key's value is typed (drives TOML parsing and editor text)."""

    STR = "str"
    INT = "int"
    FLOAT = "float"
    ENGINE = "engine"
    ALGORITHM = "algorithm"
    ARGS = "args"
    ENV = "env"


FIELD_KINDS: dict[str, FieldKind] = {
    "model_path": FieldKind.STR,
    "engine": FieldKind.ENGINE,
    "engine_version": FieldKind.STR,
    "speculative_algorithm": FieldKind.ALGORITHM,
    "speculative_draft_model_path": FieldKind.STR,
    "speculative_num_steps": FieldKind.INT,
    "speculative_eagle_topk": FieldKind.INT,
    "speculative_num_draft_tokens": FieldKind.INT,
    "mem_fraction_static": FieldKind.FLOAT,
    "cuda_graph_max_bs": FieldKind.INT,
    "max_running_requests": FieldKind.INT,
    "tp_size": FieldKind.INT,
    "context_length": FieldKind.INT,
    "attention_backend": FieldKind.STR,
    "host": FieldKind.STR,
    "port": FieldKind.INT,
    "extra_args": FieldKind.ARGS,
    "env": FieldKind.ENV,
    "launcher": FieldKind.STR,
    "working_directory": FieldKind.STR,
    "user": FieldKind.STR,
    "description": FieldKind.STR,
}
"""Every ``[server]`` key, in the order files and editors show them (= ServerConfig fields)."""

TUNING_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("speculative_algorithm", "algorithm", "EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM or none"),
    ("speculative_num_steps", "int", "draft depth per verify step"),
    ("speculative_eagle_topk", "int", "branching factor of the draft tree"),
    ("speculative_num_draft_tokens", "int", "verify width (tree nodes + root)"),
    ("mem_fraction_static", "float", "share of GPU memory for weights + KV pool"),
    ("cuda_graph_max_bs", "int", "largest decode batch captured as a CUDA graph"),
    ("max_running_requests", "int", "cap on requests in flight (48 if unset with spec)"),
    ("tp_size", "int", "tensor-parallel GPU count"),
    ("extra_args", "args", "further flags, shell-quoted"),
)
"""The fields a tuner edits, in the editor's display order: name, kind, one-line hint. Each
engine spells them with its own flags (its ``editor_fields``)."""

NON_OPTIONAL_KEYS: frozenset[str] = frozenset(
    {"model_path", "engine", "host", "port", "extra_args", "env", "launcher", "description"}
)
"""Keys that cannot be ``None`` (everything else may be left unset)."""

KEY_ALIASES: dict[str, str] = {
    "model": "model_path",
    "speculative_draft_model": "speculative_draft_model_path",
    "tensor_parallel_size": "tp_size",
    "tp": "tp_size",
    "cuda_graph_max_bs_decode": "cuda_graph_max_bs",
}
"""SGLang's own aliases, accepted on input and written back under the canonical name."""


def _check_key(key: str, own: Mapping[str, OptionField] | None = None) -> str:
    if key in FIELD_KINDS:
        return key
    if key in KEY_ALIASES:
        return KEY_ALIASES[key]
    own = own or {}
    dashed = key.replace("-", "_")
    if dashed in FIELD_KINDS or dashed in KEY_ALIASES or dashed in own:
        raise ConfigError(
            f"server.{key}",
            "keys use underscores, not dashes.",
            f"write `{KEY_ALIASES.get(dashed, dashed)}`.",
        )
    close = difflib.get_close_matches(key, [*FIELD_KINDS, *own], n=1)
    hint = f"did you mean `{close[0]}`? " if close else ""
    flag = "--" + key.replace("_", "-")
    raise ConfigError(
        f"server.{key}",
        "unknown key.",
        f"{hint}For a server flag specconsole does not model, add it to extra_args, "
        f'e.g. extra_args = ["{flag}", "VALUE"].',
    )


def parse_field(name: str, value: Any) -> Any:
    """Convert one ``[server]`` value (TOML-typed or editor text) to the field's type.

    Raises :class:`ConfigError` naming the key and the fix; ``None`` unsets optional keys.
    """
    kind = FIELD_KINDS[name]
    key = f"server.{name}"
    if value is None or (isinstance(value, str) and not value.strip() and kind != FieldKind.STR):
        if name in NON_OPTIONAL_KEYS and kind not in (FieldKind.ARGS, FieldKind.ENV):
            raise ConfigError(key, "a value is required.", f"set {name}.")
        if kind == FieldKind.ARGS:
            return ()
        if kind == FieldKind.ENV:
            return ()
        return None
    if kind == FieldKind.STR:
        if not isinstance(value, str):
            raise ConfigError(key, f"expected a string, got {value!r}.", f'write {name} = "..."')
        if not value and name not in NON_OPTIONAL_KEYS:
            return None
        return value
    if kind == FieldKind.INT:
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
    if kind == FieldKind.FLOAT:
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
    if kind == FieldKind.ENGINE:
        names = engine_names()
        if isinstance(value, str) and value.strip().lower() in names:
            return value.strip().lower()
        close = difflib.get_close_matches(str(value).strip().lower(), names, n=1)
        hint = f"did you mean `{close[0]}`? " if close else ""
        choices = " or ".join(f'"{n}"' for n in names)
        raise ConfigError(key, f"unknown engine {value!r}.", f"{hint}write engine = {choices}.")
    if kind == FieldKind.ALGORITHM:
        if isinstance(value, SpecAlgorithm):
            return value
        if isinstance(value, str):
            text = value.strip().upper()
            if text in ("", "NONE", "OFF"):
                return None
            if text in {a.value for a in SpecAlgorithm}:
                return SpecAlgorithm(text)
        names = ", ".join(f'"{a.value}"' for a in SpecAlgorithm)
        raise ConfigError(
            key,
            f"unknown speculative algorithm {value!r}.",
            f"use one of {names}, or remove the key to disable speculative decoding.",
        )
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
    # ENV
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


def option_fields(engine: str) -> dict[str, OptionField]:
    """The engine's own ``[server]`` keys by name (none for an engine that is not registered:
    validation names that engine)."""
    try:
        return {f.name: f for f in get_engine(str(engine)).option_fields}
    except EngineNotFound:
        return {}


def config_from_table(table: Mapping[str, Any]) -> ServerConfig:
    """Build a :class:`ServerConfig` from a TOML ``[server]`` table.

    Raises :class:`ConfigError` (naming the key and the fix) for unknown keys, bad types and a
    missing ``model_path``. Range rules (positive ints, fractions) are validation's job
    (``specconsole.core.config.validation``) so the editor can show them all at once; an
    engine option's range is checked as it is read (:func:`.options.parse_option`).
    """
    if not isinstance(table, Mapping):
        raise ConfigError("server", "expected a table.", "write a [server] table.")
    engine = table.get("engine", DEFAULT_ENGINE)
    own = option_fields(parse_field("engine", engine)) if engine is not None else {}
    values: dict[str, Any] = {}
    options: dict[str, OptionValue | None] = {}
    for raw_key, raw_value in table.items():
        if not isinstance(raw_key, str):
            raise ConfigError(f"server.{raw_key!r}", "keys must be strings.", "rename the key.")
        if raw_key in own:
            options[raw_key] = parse_option(own[raw_key], raw_value)
            continue
        name = _check_key(raw_key, own)
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
    if values.get("engine", DEFAULT_ENGINE) != DEFAULT_ENGINE and "launcher" not in values:
        values["launcher"] = get_engine(values["engine"]).default_launcher
    return ServerConfig(**values)


def config_to_table(config: ServerConfig) -> dict[str, Any]:
    """The TOML ``[server]`` table for ``config`` (unset keys omitted; inverse of
    :func:`config_from_table`)."""
    out: dict[str, Any] = {}
    for name in FIELD_KINDS:
        if name == "extra_args":  # the engine's own keys read best next to its other settings
            out.update(config.options)
        value = getattr(config, name)
        if value is None:
            continue
        kind = FIELD_KINDS[name]
        if kind == FieldKind.ENGINE:
            out[name] = str(value)
        elif kind == FieldKind.ALGORITHM:
            out[name] = str(value.value)
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


def replace_config(config: ServerConfig, **changes: Any) -> ServerConfig:
    """``dataclasses.replace`` that type-checks the changed values like a TOML file would.

    Values may be typed or editor text (``"3"``, ``"0.85"``, ``"EAGLE3"``, ``""`` to unset).
    """
    typed: dict[str, Any] = {}
    own = option_fields(changes.get("engine", config.engine))
    options: dict[str, OptionValue | None] = {}
    for key, value in changes.items():
        if key in own:
            options[key] = parse_option(own[key], value)
            continue
        name = _check_key(key, own)
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
    """The launcher actually used: another engine's configuration left on the default engine's
    launcher gets its own engine's (a vLLM configuration: ``vllm serve``)."""
    if config.engine != DEFAULT_ENGINE and config.launcher == DEFAULT_SGLANG_LAUNCHER:
        return get_engine(config.engine).default_launcher
    return config.launcher


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
