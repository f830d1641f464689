"""Render a configuration to exactly what runs on the box, and read one back.

Why: a trial is only reproducible if what the console records is byte-for-byte what was
deployed, and users start from the service they already have. So this module is the single
place that spells a :class:`~specconsole.core.config.model.ServerConfig` as

* an argv (:func:`to_argv`) with SGLang's exact flag names (vLLM's via
  :mod:`specconsole.core.config.vllm`, chosen by ``config.engine``),
* a shell-quoted command line (:func:`to_command`),
* a complete systemd unit (:func:`to_unit`): ``After=network-online.target``, ``User=``,
  ``WorkingDirectory=``, quoted ``Environment=`` lines, a generous ``TimeoutStartSec`` for
  ~100 s model loads, ``Restart=no`` while tuning (a crash must stay visible, not be papered
  over by a restart loop) and ``KillMode=mixed`` so stopping the unit stops the whole process
  tree (SGLang's scheduler and detokenizer children included),

and the reverse: :func:`parse_command` and :func:`parse_unit`, which keep every flag the model
does not name in ``extra_args`` so nothing the user had is lost. Rendering then parsing then
rendering gives identical text (tested, including property tests).

The launcher is a command prefix: ``python3 -m sglang.launch_server``, ``sglang serve``,
``vllm serve``, or the simulator's ``/path/.venv/bin/python -m specconsole.sim`` (which
accepts SGLang's flags, so the demo deploys it exactly like SGLang).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specconsole.core.config.engine_versions import flag_for
from specconsole.core.config.flags import flag_field, flag_value, flag_words
from specconsole.core.config.model import (
    DEFAULT_SGLANG_LAUNCHER,
    DEFAULT_VLLM_LAUNCHER,
    ConfigError,
    Engine,
    ServerConfig,
    effective_launcher,
)
from specconsole.core.config.modelled_flags import MODELLED_FLAGS
from specconsole.core.config.vllm import (
    launcher_takes_positional_model,
    parse_vllm_args,
    vllm_flags,
)

__all__ = [
    "UnitOptions",
    "parse_command",
    "parse_unit",
    "systemd_quote",
    "systemd_split",
    "to_argv",
    "to_command",
    "to_unit",
]


# ---------------------------------------------------------------------------------------------
# argv and command line
# ---------------------------------------------------------------------------------------------


def launcher_argv(config: ServerConfig) -> list[str]:
    """The launcher prefix as argv words (raises ConfigError if it cannot be split)."""
    launcher = effective_launcher(config)
    try:
        words = shlex.split(launcher)
    except ValueError as exc:
        raise ConfigError(
            "server.launcher", f"cannot be split ({exc}).", "fix its quoting."
        ) from None
    if not words:
        raise ConfigError(
            "server.launcher", "is empty.", f'set launcher = "{DEFAULT_SGLANG_LAUNCHER}".'
        )
    return words


def _flag(key: str, default: str, config: ServerConfig) -> str:
    """The flag that spells ``key`` in the configuration's SGLang release."""
    return flag_for(key, default, config.engine_version)


def sglang_flags(config: ServerConfig) -> list[str]:
    """SGLang's flags for ``config`` (no launcher): the modelled fields in field order, then
    ``extra_args`` verbatim. The simulator parses these very words."""
    pairs = (
        ("--speculative-algorithm", config.speculative_algorithm),  # a StrEnum: its value
        ("--speculative-draft-model-path", config.speculative_draft_model_path),
        ("--speculative-num-steps", config.speculative_num_steps),
        ("--speculative-eagle-topk", config.speculative_eagle_topk),
        ("--speculative-num-draft-tokens", config.speculative_num_draft_tokens),
        ("--mem-fraction-static", config.mem_fraction_static),
        (_flag("cuda_graph_max_bs", "--cuda-graph-max-bs", config), config.cuda_graph_max_bs),
        ("--max-running-requests", config.max_running_requests),
        ("--tp-size", config.tp_size),
        ("--context-length", config.context_length),
        ("--attention-backend", config.attention_backend),
        ("--host", config.host),
        ("--port", config.port),
    )
    return ["--model-path", config.model_path, *flag_words(pairs), *config.extra_args]


def to_argv(config: ServerConfig) -> list[str]:
    """The server's argv: launcher words, then the engine's flags, then ``extra_args``."""
    words = launcher_argv(config)
    if config.engine is Engine.VLLM:
        return [*words, *vllm_flags(config, words)]
    return [*words, *sglang_flags(config)]


def to_command(config: ServerConfig, *, with_env: bool = False) -> str:
    """The argv as one POSIX-shell-quoted line; ``with_env`` prefixes ``NAME=value`` words."""
    argv = to_argv(config)
    prefix = [f"{name}={value}" for name, value in config.env] if with_env else []
    return shlex.join([*prefix, *argv])


# ---------------------------------------------------------------------------------------------
# systemd quoting
# ---------------------------------------------------------------------------------------------

_SAFE = re.compile(r"[A-Za-z0-9_@+=:,./-]+\Z")
_ESCAPES = {"n": "\n", "t": "\t", "s": " ", "\\": "\\", '"': '"', "'": "'", " ": " "}


def systemd_quote(arg: str, *, dollar: bool = True) -> str:
    """Quote one word for a unit file (``%`` specifiers and, in ExecStart, ``$`` escaped)."""
    text = arg.replace("%", "%%")
    if dollar:
        text = text.replace("$", "$$")
    if arg and _SAFE.match(arg):
        return text
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{text}"'


def systemd_split(text: str) -> list[str]:
    """Split a unit-file value into words the way systemd does (quotes, C escapes).

    ``%%`` and ``$$`` are *not* collapsed here; callers do that per setting.
    """
    words: list[str] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            break
        word: list[str] = []
        while i < n and text[i] not in " \t":
            c = text[i]
            if c in "\"'":
                i += 1
                while i < n and text[i] != c:
                    if text[i] == "\\" and i + 1 < n:
                        word.append(_ESCAPES.get(text[i + 1], text[i + 1]))
                        i += 2
                    else:
                        word.append(text[i])
                        i += 1
                if i >= n:
                    raise ConfigError("unit", f"unbalanced quote in {text!r}.", "close the quote.")
                i += 1
            elif c == "\\" and i + 1 < n:
                word.append(_ESCAPES.get(text[i + 1], text[i + 1]))
                i += 2
            else:
                word.append(c)
                i += 1
        words.append("".join(word))
    return words


_SPECIFIER = re.compile(r"%%|\$\$|\$\{(\w+)\}|\$(\w+)")


def _unescape_exec(word: str, env: dict[str, str]) -> str:
    """Collapse ``%%``/``$$`` and substitute ``$VAR``/``${VAR}`` from the unit's Environment."""

    def sub(m: re.Match[str]) -> str:
        text = m.group(0)
        if text in ("%%", "$$"):
            return text[0]
        name = m.group(1) or m.group(2)
        return env.get(name, text)

    return _SPECIFIER.sub(sub, word)


# ---------------------------------------------------------------------------------------------
# Unit files
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UnitOptions:
    """Unit-file settings that are about the service, not the server's configuration."""

    description: str | None = None
    """``Description=``; default: the config's description, else engine and model."""
    timeout_start_sec: int = 900
    """Loads take ~100 s and more for big models with CUDA-graph capture; be generous."""
    timeout_stop_sec: int = 60
    kill_mode: str = "mixed"
    """``mixed``: SIGTERM to the launcher (it shuts its children down), then SIGKILL to
    anything left in the cgroup, so the whole process tree stops and GPU memory is freed."""
    restart: str = "no"
    """``no`` while tuning: a crash must stay visible, not hide behind a restart loop."""
    limit_nofile: int | None = 65536
    wanted_by: str | None = "multi-user.target"
    resolve_with_env: bool = True
    """Start a relative launcher (``python3``) through ``/usr/bin/env`` so it is found on
    every systemd version (old ones require an absolute ExecStart path)."""


_HEADER = "# Rendered by specconsole: the deployed configuration (edits are replaced on deploy)."


def _default_description(config: ServerConfig) -> str:
    return config.description or f"{config.engine.value} server for {config.model_path}"


def _exec_lines(head: list[str], flags: list[str]) -> list[str]:
    """ExecStart with the launcher on the first line and one flag (with its value) per
    continuation line, so unit diffs read like the configuration."""
    groups: list[list[str]] = [head]
    i = 0
    while i < len(flags):
        group = [flags[i]]
        i += 1
        if group[0].startswith("-") and i < len(flags) and not flags[i].startswith("-"):
            group.append(flags[i])
            i += 1
        groups.append(group)
    rendered = [" ".join(systemd_quote(w) for w in g) for g in groups]
    lines = ["ExecStart=" + rendered[0]]
    for part in rendered[1:]:
        lines[-1] += " \\"
        lines.append("    " + part)
    return lines


def exec_words(
    config: ServerConfig, *, resolve_with_env: bool = True
) -> tuple[list[str], list[str]]:
    """``ExecStart``'s words as (head, flags): the launcher (through ``/usr/bin/env`` when
    relative and ``resolve_with_env``; with vLLM's positional model) and the flags after it."""
    argv = to_argv(config)
    head = launcher_argv(config)
    flags = argv[len(head) :]
    if config.engine is Engine.VLLM and launcher_takes_positional_model(head):
        head, flags = [*head, flags[0]], flags[1:]
    if resolve_with_env and not head[0].startswith("/"):
        head = ["/usr/bin/env", *head]
    return head, flags


def to_unit(config: ServerConfig, options: UnitOptions | None = None) -> str:
    """A complete systemd unit that runs ``config`` (SGLang or vLLM)."""
    o = options or UnitOptions()
    head, flags = exec_words(config, resolve_with_env=o.resolve_with_env)
    # One line; a trailing backslash would continue the line in a unit file.
    description = (o.description or _default_description(config)).replace("\n", " ")
    description = description.rstrip("\\ \t") or "inference server"
    lines = [
        _HEADER,
        "[Unit]",
        f"Description={description.replace('%', '%%')}",
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
    ]
    if config.user:
        lines.append(f"User={config.user.replace('%', '%%')}")
    if config.working_directory:
        lines.append(f"WorkingDirectory={config.working_directory.replace('%', '%%')}")
    for name, value in config.env:
        lines.append(f"Environment={systemd_quote(f'{name}={value}', dollar=False)}")
    lines += _exec_lines(head, flags)
    lines += [
        f"Restart={o.restart}",
        f"TimeoutStartSec={o.timeout_start_sec}",
        f"TimeoutStopSec={o.timeout_stop_sec}",
        f"KillMode={o.kill_mode}",
    ]
    if o.limit_nofile is not None:
        lines.append(f"LimitNOFILE={o.limit_nofile}")
    if o.wanted_by:
        lines += ["", "[Install]", f"WantedBy={o.wanted_by}"]
    return "\n".join(lines) + "\n"


def _unit_entries(text: str) -> list[tuple[str, str, str]]:
    """(section, key, value) for every setting, continuation lines joined."""
    out: list[tuple[str, str, str]] = []
    section = ""
    pending: str | None = None
    for raw in text.splitlines():
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


def parse_unit(text: str) -> ServerConfig:
    """Read a unit file (e.g. the box's current service) back into a configuration.

    ``ExecStart`` is parsed like a command line (:func:`parse_command`); ``Environment=``,
    ``User=``, ``WorkingDirectory=`` and ``Description=`` fill their fields. Raises
    :class:`ConfigError` when there is no ``ExecStart`` or it cannot be read.
    """
    exec_start: str | None = None
    env: dict[str, str] = {}
    fields: dict[str, Any] = {}
    for section, key, value in _unit_entries(text):
        if section == "Unit" and key == "Description":
            fields["description"] = value.replace("%%", "%")
        if section != "Service":
            continue
        if key == "ExecStart":
            exec_start = value or None  # an empty assignment resets (drop-ins)
        elif key == "Environment":
            if not value:
                env.clear()
                continue
            for word in systemd_split(value):
                name, sep, val = word.partition("=")
                if sep and name:
                    env[name] = val.replace("%%", "%")
        elif key == "User":
            fields["user"] = value.replace("%%", "%") or None
        elif key == "WorkingDirectory":
            wd = value.lstrip("-").replace("%%", "%")
            fields["working_directory"] = wd or None
    if exec_start is None:
        raise ConfigError(
            "ExecStart", "the unit has no ExecStart= in [Service].", "point at the service's unit."
        )
    while exec_start[:1] in "-@+!:" and exec_start:
        exec_start = exec_start[1:]
    words = [_unescape_exec(w, env) for w in systemd_split(exec_start)]
    config = parse_command(words)
    merged_env = dict(env)
    merged_env.update(dict(config.env))
    return _replace(config, env=tuple(merged_env.items()), **fields)


def _replace(config: ServerConfig, **changes: Any) -> ServerConfig:
    return dataclasses.replace(config, **changes)


# ---------------------------------------------------------------------------------------------
# Command lines
# ---------------------------------------------------------------------------------------------

_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh"})
_PY_OPTS_WITH_VALUE = frozenset({"-X", "-W", "-Q"})


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _split_command(command: str | Sequence[str]) -> list[str]:
    if isinstance(command, str):
        text = command.replace("\\\r\n", " ").replace("\\\n", " ")
        try:
            return shlex.split(text)
        except ValueError as exc:
            raise ConfigError("command", f"cannot be split ({exc}).", "fix its quoting.") from None
    return [str(w) for w in command]


def parse_command(command: str | Sequence[str]) -> ServerConfig:
    """A configuration from a command line (string or argv) that starts SGLang or vLLM.

    Understands ``NAME=value`` and ``env NAME=value`` prefixes, ``exec``, ``sh -c '...'``
    (with ``cd DIR &&`` and ``export``), ``python -m sglang.launch_server``, ``sglang serve``,
    ``vllm serve MODEL``, ``--flag=value`` and ``--flag value``, and SGLang's aliases
    (``--tensor-parallel-size``, ``--speculative-draft-model``, ``--model``...). Flags the
    model does not name are kept, in order, in ``extra_args``. Raises :class:`ConfigError`
    naming the flag when a value is missing or malformed.
    """
    words = _split_command(command)
    env: list[tuple[str, str]] = []
    working_directory: str | None = None
    i = 0
    while i < len(words):
        w = words[i]
        if _ASSIGN.match(w):
            name, _, value = w.partition("=")
            env.append((name, value))
            i += 1
        elif _basename(w) == "env":
            i += 1
            while i < len(words) and words[i].startswith("-"):
                opt = words[i]
                if opt in ("-C", "--chdir") and i + 1 < len(words):
                    working_directory = words[i + 1]
                if opt in ("-u", "--unset", "-C", "--chdir"):
                    i += 1
                elif opt.startswith("--chdir="):
                    working_directory = opt.split("=", 1)[1]
                i += 1
                if opt == "--":
                    break
        elif w == "exec":
            i += 1
        elif (
            _basename(w) in _SHELLS
            and i + 1 < len(words)
            and words[i + 1].startswith("-")
            and "c" in words[i + 1]
        ):
            if i + 2 >= len(words):
                raise ConfigError("command", "`sh -c` without a script.", "give the command.")
            return _parse_shell_script(words[i + 2], env)
        else:
            break
    if i >= len(words):
        raise ConfigError("command", "no program to run.", "give the server's command line.")
    config = _parse_program(words[i:])
    if env:
        config = _replace(config, env=tuple(env) + config.env)
    if working_directory:
        config = _replace(config, working_directory=working_directory)
    return config


def _parse_shell_script(script: str, env: list[tuple[str, str]]) -> ServerConfig:
    """``cd DIR && export A=1 && exec python -m ...`` as found in ``sh -c`` units."""
    words = _split_command(script)
    segments: list[list[str]] = [[]]
    for w in words:
        if w in ("&&", ";", "||"):
            segments.append([])
        else:
            segments[-1].append(w)
    working_directory: str | None = None
    extra_env = list(env)
    command: list[str] | None = None
    for seg in segments:
        if not seg:
            continue
        if seg[0] == "cd" and len(seg) > 1:
            working_directory = seg[1]
        elif seg[0] == "export":
            for w in seg[1:]:
                if _ASSIGN.match(w):
                    name, _, value = w.partition("=")
                    extra_env.append((name, value))
        else:
            command = seg
    if command is None:
        raise ConfigError("command", "the shell script runs no server.", "give the command.")
    config = parse_command(command)
    changes: dict[str, Any] = {"env": tuple(extra_env) + config.env}
    if working_directory:
        changes["working_directory"] = working_directory
    return _replace(config, **changes)


def _parse_program(words: list[str]) -> ServerConfig:
    prog = words[0]
    i = 1
    module: str | None = None
    if _basename(prog).startswith("python"):
        while i < len(words) and words[i].startswith("-") and words[i] != "-m":
            i += 2 if words[i] in _PY_OPTS_WITH_VALUE else 1
        if i < len(words) and words[i] == "-m" and i + 1 < len(words):
            module = words[i + 1]
            i += 2
    elif i < len(words) and words[i] == "serve":
        i += 1
    else:
        while i < len(words) and not words[i].startswith("-"):
            i += 1
    launcher_words = words[:i]
    rest = words[i:]
    is_vllm = _basename(prog) == "vllm" or (module or "").startswith("vllm")
    launcher = shlex.join(launcher_words)
    if is_vllm:
        fields = parse_vllm_args(rest, launcher_takes_positional_model(launcher_words))
        fields["engine"] = Engine.VLLM
    else:
        fields = _parse_sglang_args(rest)
    if "model_path" not in fields:
        flag = "MODEL" if is_vllm else "--model-path"
        raise ConfigError(flag, "the command names no model.", f"add {flag} to the command.")
    fields["launcher"] = launcher or (DEFAULT_VLLM_LAUNCHER if is_vllm else DEFAULT_SGLANG_LAUNCHER)
    return ServerConfig(**fields)


def _parse_sglang_args(tokens: Sequence[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    extra: list[str] = []
    toks = list(tokens)
    i = 0
    while i < len(toks):
        token = toks[i]
        i += 1
        name, eq, inline = token.partition("=")
        field_name = MODELLED_FLAGS.get(name) if token.startswith("--") else None
        if field_name is None:
            extra.append(token)
            continue
        value, i = flag_value(name, inline if eq else None, toks, i)
        fields[field_name] = flag_field(name, field_name, value)
    fields["extra_args"] = tuple(extra)
    return fields
