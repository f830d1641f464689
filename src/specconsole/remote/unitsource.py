"""The user's unit as systemd sees it on the box: its files, and what resolves its words.

Why: reading ``systemctl cat`` alone is not enough to know what a unit runs (issue 27 #10,
issue 33 #1). This asks systemd which files make the unit (``FragmentPath``,
``DropInPaths``) so that only their headers split the output — never a comment such as
``# /dev/shm must be >= 16G`` — and gathers what the text cannot say: the box's facts behind
specifiers (``%H``, a user manager's ``%h``…) and the ``EnvironmentFile=`` files whose
variables ``ExecStart`` uses (``--model-path $MODEL``). The probe, ``import`` and the
edit-deploy all read the unit here, so they read the same thing.

The files' contents stay in memory, in :class:`~specconsole.core.launch.unit_read.UnitContext`:
they often hold secrets, and nothing here writes or prints them.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass

from specconsole.core.config.errors import ConfigError
from specconsole.core.launch.unit_parse import read_settings
from specconsole.core.launch.unit_read import CatOutput, UnitContext, read_cat
from specconsole.core.ports import Transport

__all__ = ["UnitSource", "read_unit_source"]

_FACTS = (
    ("H", "hostname"),
    ("l", "hostname -s"),
    ("m", "cat /etc/machine-id"),
    ("b", "tr -d - < /proc/sys/kernel/random/boot_id"),
    ("v", "uname -r"),
)
"""Specifiers of the box itself, with the command that tells each."""
_USER_FACTS = (
    ("h", 'printf %s "$HOME"'),
    ("u", "id -un"),
    ("U", "id -u"),
    ("g", "id -gn"),
    ("G", "id -g"),
    ("s", 'printf %s "${SHELL:-/bin/sh}"'),
    ("t", 'printf %s "${XDG_RUNTIME_DIR:-/run/user/$(id -u)}"'),
)
"""Specifiers of a user manager: its user's (the login's: ``--user`` units run as it)."""


@dataclass(frozen=True, slots=True)
class UnitSource:
    """The unit's files and the context its words resolve in."""

    cat: CatOutput
    context: UnitContext

    @property
    def text(self) -> str | None:
        """The unit file with its drop-ins after it (what ``parse_unit`` reads)."""
        if self.cat.main is None:
            return None
        return self.cat.main + ("\n" + self.cat.dropins if self.cat.dropins else "")


async def _facts(transport: Transport, user: bool) -> dict[str, str]:
    pairs = _FACTS + (_USER_FACTS if user else ())
    marker = "__specconsole_fact__"
    script = "; ".join(f"echo {marker}{k}; {cmd} 2>/dev/null; echo" for k, cmd in pairs)
    result = await transport.run(script, timeout=20.0)
    facts: dict[str, str] = {}
    current: str | None = None
    for line in result.stdout.splitlines():
        if line.startswith(marker):
            current = line[len(marker) :]
        elif current is not None and line.strip() and current not in facts:
            facts[current] = line.strip()
    return facts


async def read_unit_source(
    transport: Transport, systemctl: str, unit: str, *, sudo: bool, user: bool
) -> UnitSource | None:
    """``systemctl cat`` of ``unit`` split at the files systemd names, with the context its
    words resolve in; None when the unit is not installed. ``systemctl`` is the command
    prefix (``systemctl`` or ``systemctl --user``)."""
    quoted = shlex.quote(unit)
    show = await transport.run(
        f"{systemctl} show -p FragmentPath -p DropInPaths -- {quoted}", sudo=sudo
    )
    paths: list[str] | None = None
    if show.ok:
        props = dict(line.partition("=")[::2] for line in show.stdout.splitlines())
        fragment = props.get("FragmentPath", "").strip()
        if fragment:
            paths = [fragment, *props.get("DropInPaths", "").split()]
    result = await transport.run(f"{systemctl} cat -- {quoted}", sudo=sudo)
    if not result.ok:
        return None
    cat = read_cat(result.stdout, paths)
    if cat.main is None and paths is not None:  # systemd named files its output lacks
        cat = read_cat(result.stdout)
    context = UnitContext.from_cat(cat, scope="user" if user else "system")
    context = dataclasses.replace(context, unit=context.unit or unit)
    context = dataclasses.replace(context, facts=await _facts(transport, user))
    text = (cat.main or "") + "\n" + cat.dropins
    try:
        files = read_settings(text, context).env_files
    except ConfigError:  # an unresolvable specifier: the parse that follows says which
        files = ()
    found: dict[str, str] = {}
    for path, optional in files:
        data = await transport.read_file(path, sudo=sudo)
        if data is not None:
            found[path] = data.decode("utf-8", "replace")
        elif optional:
            found[path] = ""  # systemd skips a missing optional file: its variables are unset
    return UnitSource(cat, dataclasses.replace(context, env_files=found))
