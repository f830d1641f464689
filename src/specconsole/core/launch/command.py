"""Reading a server's command line back into a configuration.

Why: users start from the service they already have. A command line arrives in many shapes —
``NAME=value`` and ``env NAME=value`` prefixes, ``exec``, ``sh -c '...'`` (with ``cd DIR &&``
and ``export``), ``python -m MODULE``, ``PROGRAM serve``, ``--flag=value`` and ``--flag value``
— and the words after the launcher belong to whichever engine launches that program
(:meth:`~specconsole.core.engine.Engine.launches`; the default engine otherwise, which also
covers the simulator and wrapper scripts). Flags the engine does not model are kept, in order,
in ``extra_args`` so nothing the user had is lost.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Sequence
from typing import Any

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.protocol import Engine
from specconsole.core.engine.registry import default_engine, engine_names, get_engine

__all__ = ["launching_engine", "parse_command"]


def _replace(config: ServerConfig, **changes: Any) -> ServerConfig:
    return dataclasses.replace(config, **changes)


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
    program = _basename(prog)
    if module is not None and i < len(words) and _claimed(words[i]):
        # a module that runs a named program (``python -m specconsole.sim vllm serve MODEL``,
        # the simulator speaking vLLM): that program's engine reads the rest
        program, module = words[i], None
        i += 2 if words[i + 1 : i + 2] == ["serve"] else 1
    launcher_words = words[:i]
    rest = words[i:]
    engine = launching_engine(program, module)
    fields = engine.parse_args(launcher_words, rest)
    fields["engine"] = engine.name
    if "model_path" not in fields:
        flag = (
            "MODEL"
            if engine.positional_words(launcher_words)
            else next(f for f, name in engine.modelled_flags.items() if name == "model_path")
        )
        raise ConfigError(flag, "the command names no model.", f"add {flag} to the command.")
    fields["launcher"] = shlex.join(launcher_words) or engine.default_launcher
    return ServerConfig(**fields)


def _claimed(word: str) -> bool:
    """Whether a registered engine claims ``word`` as its program (``vllm``, ``sglang``)."""
    return any(get_engine(name).launches(word, None) for name in engine_names())


def launching_engine(program: str, module: str | None) -> Engine:
    """The engine that ``program`` (a basename) or ``python -m module`` starts; the default
    engine when none claims it (the simulator, a wrapper script)."""
    for name in engine_names():
        engine = get_engine(name)
        if engine.launches(program, module):
            return engine
    return get_engine(default_engine())
