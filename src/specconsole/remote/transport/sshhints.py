"""The next command at the SSH dead ends of a first contact with a box.

Why its own module: the first hour with a new box fails in two ways that the raw errors do
not explain. An untrusted host key: "ssh HOST once to accept" fails under
``StrictHostKeyChecking yes``, and ``ssh-keygen -R HOST`` misses the entry of a box on a port
other than 22 (known_hosts spells it ``[HOST]:PORT``). A mistyped alias: the resolver says
"Name or service not known" without a word about ``~/.ssh/config`` having no such ``Host``.
Here the ssh config is read just enough to name what a message needs — the alias's
``HostName`` and ``Port``, and the ``Host`` names it does have (with a close match) — so the
message ends with the command that fixes it (docs/remote.md, "First contact with a box").
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SshEntry",
    "host_key_fix",
    "host_names",
    "known_hosts_name",
    "lookup",
    "unknown_alias_hint",
]

DEFAULT_CONFIG = "~/.ssh/config"
FIRST_CONTACT = 'docs/remote.md, "First contact with a box"'
_NOT_RESOLVED = re.compile(
    r"Name or service not known|nodename nor servname|No address associated|"
    r"Temporary failure in name resolution|getaddrinfo failed",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class SshEntry:
    """What an ssh config says about one alias (ssh's rule: the first value given wins)."""

    hostname: str
    port: int = 22
    found: bool = False
    """A ``Host`` line of the config matched the alias."""


def _config_lines(path: str) -> list[tuple[str, str]]:
    try:
        text = Path(path).expanduser().read_text(errors="replace")
    except OSError:
        return []
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = re.split(r"\s*=\s*|\s+", line, maxsplit=1)
        key, value = parts[0].lower(), (parts[1] if len(parts) > 1 else "").strip()
        out.append((key, value))
    return out


def _paths(config: str | None) -> list[str]:
    """The config files ``[host] ssh_config`` names (``""``: none; unset: the user's)."""
    if config == "":
        return []
    return [config or DEFAULT_CONFIG]


def lookup(alias: str, config: str | None = None) -> SshEntry:
    """``HostName`` and ``Port`` of ``alias`` in the ssh config (the alias itself and 22
    when it names none)."""
    hostname, port, found, active = "", 0, False, False
    for path in _paths(config):
        for key, value in _config_lines(path):
            if key == "host":
                active = any(fnmatch.fnmatch(alias, pattern) for pattern in value.split())
                found = found or (active and alias in value.split())
            elif key == "match":
                active = False
            elif active and key == "hostname" and not hostname:
                hostname = value
            elif active and key == "port" and not port and value.isdigit():
                port = int(value)
    return SshEntry(hostname or alias, port or 22, found)


def host_names(config: str | None = None) -> list[str]:
    """The concrete ``Host`` names of the config (no patterns)."""
    names: list[str] = []
    for path in _paths(config):
        for key, value in _config_lines(path):
            if key == "host":
                names += [n for n in value.split() if not any(c in n for c in "*?!")]
    return names


def known_hosts_name(hostname: str, port: int) -> str:
    """How known_hosts (and ``ssh-keygen -R``/``ssh-keyscan``) spell a host: ``[H]:P`` off
    port 22."""
    return hostname if port == 22 else f"[{hostname}]:{port}"


def host_key_fix(hostname: str, port: int) -> str:
    """The commands that trust a box's key by its fingerprint, for an untrusted-key error."""
    scan = f"ssh-keyscan -p {port} {hostname}" if port != 22 else f"ssh-keyscan {hostname}"
    name = known_hosts_name(hostname, port)
    return (
        f"First contact: run `{scan} > box.keys; ssh-keygen -lf box.keys`, compare the "
        "fingerprint with the box's own (on its console: `ssh-keygen -lf "
        "/etc/ssh/ssh_host_ed25519_key.pub`), and only if they match: `cat box.keys >> "
        f"~/.ssh/known_hosts`. A reinstalled box: `ssh-keygen -R '{name}'` first. See "
        f"{FIRST_CONTACT}."
    )


def unknown_alias_hint(alias: str, reason: str, config: str | None = None) -> str:
    """When ``alias`` did not resolve and no ``Host`` of the ssh config names it: which
    ``Host`` entries there are (and the closest), and where to add one; '' otherwise."""
    if not alias or not _NOT_RESOLVED.search(reason) or lookup(alias, config).found:
        return ""
    where = (_paths(config) or ['no ssh config ([host] ssh_config = "")'])[0]
    names = host_names(config)
    close = difflib.get_close_matches(alias, names, n=1)
    known = f" (it has: {', '.join(names[:8])}{', …' if len(names) > 8 else ''})" if names else ""
    guess = f" Did you mean {close[0]!r}?" if close else ""
    return (
        f"; {where} has no Host {alias} either{known}.{guess} Add a Host block for the box "
        f"({FIRST_CONTACT})"
    )
