"""systemd unit files: quoting words the way systemd reads them, a complete unit for a
configuration, and a unit read back into one.

Why here: the unit is what a real box runs, so :func:`to_unit` writes one that survives a
~100 s model load and never hides a crash — ``After=network-online.target``, ``User=``,
``WorkingDirectory=``, quoted ``Environment=`` lines, a generous ``TimeoutStartSec``,
``Restart=no`` while tuning and ``KillMode=mixed`` so stopping the unit stops the whole process
tree (SGLang's scheduler and detokenizer children included) — and :func:`parse_unit` reads the
user's own unit back, keeping every flag the model does not name in ``extra_args``. Editing the
user's unit in place, line for line, is :mod:`.unit`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from specconsole.core.config.model import ServerConfig
from specconsole.core.config.render import exec_words
from specconsole.core.launch.unit_parse import parse_unit
from specconsole.core.launch.unit_read import systemd_split

__all__ = ["UnitOptions", "parse_unit", "systemd_quote", "systemd_split", "to_unit"]


# ---------------------------------------------------------------------------------------------
# systemd quoting
# ---------------------------------------------------------------------------------------------

_SAFE = re.compile(r"[A-Za-z0-9_@+=:,./-]+\Z")


def systemd_quote(arg: str, *, dollar: bool = True) -> str:
    """Quote one word for a unit file (``%`` specifiers and, in ExecStart, ``$`` escaped)."""
    text = arg.replace("%", "%%")
    if dollar:
        text = text.replace("$", "$$")
    if arg and _SAFE.match(arg):
        return text
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{text}"'


_SPECIFIER = re.compile(r"%%|%[A-Za-z]|\$\$|\$\{(\w+)\}|\$(\w+)")


def _unescape_exec(word: str, env: dict[str, str]) -> str:
    """Collapse ``%%``/``$$`` and substitute ``$VAR``/``${VAR}`` from the unit's environment
    and ``%X`` specifiers from ``env["%X"]`` (what :func:`.unit.edit_unit` knows of the box),
    leaving what is unknown as written: the edit compares the words it keeps, it does not run
    them (:func:`parse_unit` is the strict reader)."""

    def sub(m: re.Match[str]) -> str:
        text = m.group(0)
        if text in ("%%", "$$"):
            return text[0]
        if text.startswith("%"):
            return env.get(text, text)
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
    return config.description or f"{config.engine} server for {config.model_path}"


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
