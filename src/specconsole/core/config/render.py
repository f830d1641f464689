"""Render a configuration to exactly the argv that runs on the box.

Why: a trial is only reproducible if what the console records is byte-for-byte what was
deployed. The launcher words come from the configuration (the engine's own, such as
``vllm serve``, or the simulator's ``/path/.venv/bin/python -m specconsole.sim``, which
speaks the engine it imitates), the flags after them from the configuration's engine
(:meth:`~specconsole.core.engine.Engine.render_flags`, in its release's spelling). A systemd
unit around the same words is :mod:`.systemd`'s; reading a command line back is
:mod:`.command`'s. Rendering then parsing then rendering gives identical text (tested,
including property tests).
"""

from __future__ import annotations

import shlex

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import ServerConfig, effective_launcher
from specconsole.core.engine.registry import engine_for

__all__ = ["exec_words", "launcher_argv", "to_argv", "to_command"]


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
        default = engine_for(config).default_launcher
        raise ConfigError("server.launcher", "is empty.", f'set launcher = "{default}".')
    return words


def to_argv(config: ServerConfig) -> list[str]:
    """The server's argv: launcher words, then the engine's flags, then ``extra_args``."""
    words = launcher_argv(config)
    return [*words, *engine_for(config).render_flags(config, words)]


def to_command(config: ServerConfig, *, with_env: bool = False) -> str:
    """The argv as one POSIX-shell-quoted line; ``with_env`` prefixes ``NAME=value`` words."""
    argv = to_argv(config)
    prefix = [f"{name}={value}" for name, value in config.env] if with_env else []
    return shlex.join([*prefix, *argv])


def exec_words(
    config: ServerConfig, *, resolve_with_env: bool = True
) -> tuple[list[str], list[str]]:
    """``ExecStart``'s words as (head, flags): the launcher (through ``/usr/bin/env`` when
    relative and ``resolve_with_env``; with the engine's positional words, such as vLLM's
    model) and the flags after it."""
    argv = to_argv(config)
    head = launcher_argv(config)
    flags = argv[len(head) :]
    n = engine_for(config).positional_words(head)
    if n:
        head, flags = [*head, *flags[:n]], flags[n:]
    if resolve_with_env and not head[0].startswith("/"):
        head = ["/usr/bin/env", *head]
    return head, flags
