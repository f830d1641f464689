"""Launch-argument rules, checked before anything is deployed.

Why: a bad configuration costs a ~100 s model load before the server refuses it, or worse,
loads and then crashes with an illegal memory access under load (SGLang does not check
``draft tokens <= steps x topk + 1``). Checking here turns that into an instant message in
the editor, naming the field and the fix.

:func:`validate` lists every problem (errors block a deploy; warnings and notices inform) and
never raises on any input, however malformed (wrong types included). This module holds the
entry point and the engine-independent rules (types, ranges and bounds of every key as its
engine declares it, env, modelled flags in ``extra_args``); each engine's own rules are its
``check`` (its package's ``rules.py``), the findings' shape is
:mod:`specconsole.core.config.issues`, and the server's own adjustments are the engine's
``normalize``.
"""

from __future__ import annotations

import re

from specconsole.core.config.bounds import control_char_problem, is_int
from specconsole.core.config.capabilities import flag_issues
from specconsole.core.config.concepts import Concept
from specconsole.core.config.errors import ConfigError
from specconsole.core.config.flags import extra_flags
from specconsole.core.config.inputs import host_problem
from specconsole.core.config.issues import Issue, IssueReport, Severity
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.options import OptionField, parse_option
from specconsole.core.engine.protocol import Engine
from specconsole.core.engine.registry import (
    EngineNotFound,
    default_engine,
    engine_names,
    get_engine,
)

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_USER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\$?\Z")


def validate(config: ServerConfig) -> list[Issue]:
    """Every problem with ``config``, errors first; never raises."""
    try:
        issues = _validate(config)
    except Exception as exc:  # pragma: no cover - defensive: malformed objects of any shape
        issues = [
            Issue(
                None,
                Severity.ERROR,
                f"the configuration cannot be checked ({exc!r}).",
                "rebuild it from a [server] table.",
            )
        ]
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.NOTICE: 2}
    return sorted(issues, key=lambda i: order[i.severity])


def normalized(
    config: ServerConfig, architecture: str | None = None
) -> tuple[ServerConfig, list[Issue]]:
    """The configuration as its engine will really run it, with a notice per silent change
    (``Engine.normalize``); never raises: a configuration whose engine is not registered is
    returned as it is (:func:`validate` names the engine)."""
    try:
        return get_engine(str(config.engine)).normalize(config, architecture)
    except Exception:  # pragma: no cover - defensive: malformed objects of any shape
        return config, []


def errors(issues: list[Issue]) -> list[Issue]:
    """Only the blocking issues."""
    return [i for i in issues if i.blocking]


def _validate(config: ServerConfig) -> list[Issue]:
    r = IssueReport()
    err = r.err

    try:
        engine = get_engine(str(config.engine))
    except EngineNotFound:
        choices = " or ".join(f'"{n}"' for n in engine_names())
        err("engine", f"unknown engine {config.engine!r}.", f"set engine = {choices}.")
        engine = get_engine(default_engine())
        known = False  # its own rules cannot be asked: the shared ones still are
    else:
        known = True
    plain = [f for f in engine.option_fields if f.plain]
    values = dict(config.options) if isinstance(config.options, tuple | list) else {}
    for key in plain:
        if key.reader is not None and values.get(key.name) is not None:
            try:
                key.reader(values[key.name])
            except ConfigError as exc:
                err(key.name, exc.message, exc.fix)

    # --- types and ranges -----------------------------------------------------------------
    if not isinstance(config.model_path, str):
        err(
            "model_path",
            f"must be a string, got {config.model_path!r}.",
            'set model_path = "/path/to/model" (or a hub id).',
        )
    elif not config.model_path.strip():
        err("model_path", "no model is set.", 'set model_path = "/path/to/model" (or a hub id).')
    elif config.model_path.startswith("-"):
        err("model_path", "looks like a flag.", "set the model's directory or hub id.")
    bad_ints: set[str] = set()
    for name in (k.name for k in plain if k.kind == "int" and k.minimum == 1):
        value = values.get(name)
        if value is None:
            continue
        if not is_int(value):
            err(name, f"must be an integer, got {value!r}.", f"set {name} to a whole number.")
            bad_ints.add(name)
        elif value < 1:
            err(
                name,
                f"must be a positive integer, got {value}.",
                f"set {name} to 1 or more, or remove it to let the server choose.",
            )
            bad_ints.add(name)
    _check_bounds(config, plain, bad_ints, r)
    for key in plain:
        if key.kind == "float" and key.name in values:
            _check_fraction(key, values[key.name], engine, r)
    if not is_int(config.port) or not 1 <= config.port <= 65535:
        err("port", f"must be a TCP port 1-65535, got {config.port!r}.", "set port = 30000.")
    if not isinstance(config.host, str) or not config.host.strip():
        err("host", "no host is set.", 'set host = "127.0.0.1" (or "0.0.0.0" to listen on all).')
    elif host_problem(config.host, "host"):
        err(
            "host",
            f"{config.host!r} is not a hostname or an IP address to listen on.",
            'set host = "127.0.0.1" (or "0.0.0.0" to listen on all).',
        )
    if not isinstance(config.launcher, str) or not config.launcher.strip():
        err("launcher", "no launcher is set.", f'set launcher = "{engine.default_launcher}".')
    strings = [k.name for k in plain if k.kind == "str"]
    for name in (*strings, "working_directory", "user"):
        value = values.get(name) if name in strings else getattr(config, name)
        if value is not None and not isinstance(value, str):
            err(name, f"must be a string, got {value!r}.", f"set {name} to text or remove it.")
    wd = config.working_directory
    if isinstance(wd, str) and wd and not wd.startswith("/"):
        err(
            "working_directory",
            f"must be an absolute path, got {wd!r}.",
            "write the full path, e.g. /opt/server (systemd requires it).",
        )
    if isinstance(wd, str) and (wd.endswith("\\") or any(c in wd for c in "\n\r\x00")):
        err(
            "working_directory",
            "must not end with a backslash or contain line breaks (a unit file cannot hold it).",
            "rename the directory or use another path to it.",
        )
    if isinstance(config.user, str) and not _USER_NAME.match(config.user):
        err("user", f"{config.user!r} is not an account name.", "set the service's user name.")
    if not isinstance(config.env, tuple | list):
        err("env", "must be a table of NAME = value.", 'write env = { NAME = "value" }.')
    else:
        seen: set[str] = set()
        for entry in config.env:
            if not (isinstance(entry, tuple | list) and len(entry) == 2):
                err("env", f"bad entry {entry!r}.", 'write env = { NAME = "value" }.')
                continue
            name, value = entry
            if not isinstance(name, str) or not _ENV_NAME.match(name):
                err(
                    "env",
                    f"{name!r} is not a valid variable name.",
                    "use letters, digits and underscores, not starting with a digit.",
                )
            elif name in seen:
                err("env", f"{name} is set twice.", "keep one of them.")
            else:
                seen.add(name)
            if not isinstance(value, str):
                err("env", f"{name}'s value must be a string, got {value!r}.", "quote it.")
            elif "\n" in value or "\x00" in value:
                err("env", f"{name}'s value contains a newline or NUL.", "remove it.")
    if not isinstance(config.extra_args, tuple | list) or not all(
        isinstance(t, str) for t in config.extra_args
    ):
        err("extra_args", "must be a list of strings.", 'write extra_args = ["--flag", "value"].')

    _check_options(config, engine, r)

    # --- flags given twice ------------------------------------------------------------------
    modelled = engine.modelled_flags
    for flag in extra_flags(config):
        flag = engine.canonical_flag(flag)  # vLLM accepts --max_num_seqs too
        if flag in modelled:
            name = modelled[flag]
            err(
                "extra_args",
                f"{flag} is a modelled setting and must not be in extra_args.",
                f"set {name} instead and remove {flag} from extra_args.",
            )

    if known:
        engine.check(config, bad_ints, r)
    if config.box_flags is not None:  # the box's binary, from its own --help
        try:
            r.issues.extend(flag_issues(config))
        except ConfigError:
            pass  # no command line renders: the errors above say why
    return r.issues


def _check_options(config: ServerConfig, engine: Engine, r: IssueReport) -> None:
    """The engine's own keys: known to it, each value of its kind and within its bounds."""
    own = {f.name: f for f in engine.option_fields}
    plain = {f.name for f in engine.option_fields if f.plain}
    pairs = config.options if isinstance(config.options, tuple | list) else ()
    for entry in pairs:
        if not (isinstance(entry, tuple | list) and len(entry) == 2):
            r.err("options", f"bad entry {entry!r}.", "set the engine's keys in [server].")
            continue
        name, value = entry
        field = own.get(name)
        if field is None:
            r.err(
                str(name),
                f"{engine.title} has no setting {name!r}.",
                "remove it, or pass the flag through extra_args.",
            )
            continue
        if name in plain:
            continue  # checked with the shared rules above
        try:
            parse_option(field, value)
        except ConfigError as exc:
            r.err(name, exc.message, exc.fix)
        if isinstance(value, str) and (problem := control_char_problem(value)):
            r.err(name, f"{problem}.", "remove it: it cannot go on a command line or in a unit.")


def _check_fraction(key: OptionField, value: object, engine: Engine, r: IssueReport) -> None:
    """A plain number key bounded by 0 and 1: the memory fraction's rule (exclusive), or
    the key's own inclusive bounds."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        r.err(key.name, f"must be a number, got {value!r}.", f"set it to e.g. {key.example}.")
        return
    low, high = key.minimum, key.maximum
    if key.concept == Concept.MEMORY_FRACTION:
        if not 0.0 < float(value) < 1.0 or value != value:
            what = _spelled(engine, key.name)
            r.err(
                key.name,
                f"{what} must be between 0 and 1 (exclusive), got {value}.",
                f"set it to e.g. {key.example} (lower it if the server runs out of memory).",
            )
        return
    if value != value or (low is not None and value < low) or (high is not None and value > high):
        r.err(
            key.name,
            f"must be between {low:g} and {high:g}, got {value}.",
            f"set it to e.g. {key.example}.",
        )


def _spelled(engine: Engine, key: str) -> str:
    """How a range message names ``key``: "the share" where the engine's flag is the key's
    own spelling, else the engine's word for it (``gpu_memory_utilization (vLLM)``)."""
    flag = next((f for f, name in engine.modelled_flags.items() if name == key), None)
    if flag is None or flag == "--" + key.replace("_", "-"):
        return "the share"
    return f"{flag.lstrip('-').replace('-', '_')} ({engine.title})"


# --- bounds: every number capped, no control characters in what reaches argv or a unit -----

_COMMAND_STRINGS = ("host", "launcher", "working_directory", "user", "description")
"""Shared string fields that end up on the server's command line or in its unit (after the
model and the engine's plain string keys)."""


def _check_bounds(
    config: ServerConfig, plain: list[OptionField], bad_ints: set[str], r: IssueReport
) -> None:
    values = dict(config.options) if isinstance(config.options, tuple | list) else {}
    for key in plain:
        if key.kind != "int" or key.maximum is None:
            continue
        name, limit, value = key.name, int(key.maximum), values.get(key.name)
        if name in bad_ints or not is_int(value) or value <= limit:
            continue
        r.err(
            name,
            f"{value:,} is above the limit of {limit:,}.",
            f"set {name} to at most {limit:,} (a larger value is a typo).",
        )
        bad_ints.add(name)
    strings = [("model_path", config.model_path)]
    strings += [(k.name, values.get(k.name)) for k in plain if k.kind == "str"]
    strings += [(name, getattr(config, name)) for name in _COMMAND_STRINGS]
    for name, value in strings:
        if isinstance(value, str) and (problem := control_char_problem(value)):
            r.err(name, f"{problem}.", "remove it: it cannot go on a command line or in a unit.")
    words = config.extra_args if isinstance(config.extra_args, tuple | list) else ()
    for word in words:
        if isinstance(word, str) and (problem := control_char_problem(word)):
            r.err("extra_args", f"{word!r} {problem}.", "remove the control character.")
    pairs = config.env if isinstance(config.env, tuple | list) else ()
    for entry in pairs:
        if not (isinstance(entry, tuple | list) and len(entry) == 2):
            continue
        name, value = entry
        if not isinstance(value, str) or "\n" in value or "\x00" in value:
            continue  # reported with the env rules
        if problem := control_char_problem(value):
            r.err("env", f"{name}'s value {problem}.", "remove the control character.")
