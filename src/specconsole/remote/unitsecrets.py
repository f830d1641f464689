"""Moving the secrets a user wrote inline in their unit to a 0600 file on the box, on consent.

Why a module: the edit itself is pure (:mod:`specconsole.core.launch.unit_secrets`); this is
the order of the writes that keeps the secret in one place (issue 33 #8). The 0600 file is
written first (in a 0700 folder, owned by the service's user), then the unit is replaced the
way every deploy replaces it (backup, atomic upload) and systemd reloads it; last, every backup
of the unit that still holds one of the moved values — the one just made included — gets the
same edit, so the values end up in that one file and nowhere else. The running server is not
restarted: it keeps its environment until the user restarts it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from specconsole.core.config.secrets import scrub
from specconsole.core.launch.unit_parse import unit_user
from specconsole.core.launch.unit_secrets import MovedSecrets, move_inline_secrets
from specconsole.core.ports import TransportError
from specconsole.remote.artifact import unified_diff
from specconsole.remote.systemd import SystemdBackend

__all__ = ["SecretsMove", "apply_move", "plan_move"]


@dataclass(frozen=True, slots=True)
class SecretsMove:
    """What moving the unit's inline secrets would do: the edit, its diff (values redacted)
    and the file the values go to."""

    current: str
    moved: MovedSecrets
    path: str
    env_file: str

    @property
    def diff(self) -> str:
        return scrub(unified_diff(self.current, self.moved.text, self.path), self.moved.values)

    @property
    def names(self) -> list[str]:
        return [secret.name for secret in self.moved.moved]


def user_env_file(backend: SystemdBackend) -> str:
    """The user's own secrets' file: next to specconsole's (``UNIT-env``, rewritten by every
    deploy from the configuration), never touched by a deploy."""
    return backend.env_file.removesuffix("-env") + "-user-env"


async def plan_move(backend: SystemdBackend) -> SecretsMove | None:
    """The move for the unit on the box now; None when it holds no inline secret."""
    store = await backend.artifacts()
    current = await store.current()
    if current is None:
        return None
    path = user_env_file(backend)
    moved = move_inline_secrets(current, path, backend.secret_env)
    return None if moved is None else SecretsMove(current, moved, store.path, path)


async def apply_move(backend: SystemdBackend, move: SecretsMove) -> list[str]:
    """Carry ``move`` out (see the module docstring); returns the backups it rewrote."""
    transport = backend.transport
    sudo = backend.uses_sudo
    folder = move.env_file.rsplit("/", 1)[0]
    made = await transport.run(
        f"umask 077; mkdir -p {shlex.quote(folder)} && chmod 700 {shlex.quote(folder)}",
        sudo=sudo,
    )
    if not made.ok:
        raise TransportError(f"cannot create {folder}: {made.stderr.strip()}; nothing changed")
    await transport.upload(move.moved.env_file.encode(), move.env_file, mode=0o600, sudo=sudo)
    owner = unit_user(move.current)
    if owner and sudo:
        await transport.run(
            f"chown -- {shlex.quote(owner)} {shlex.quote(move.env_file)}", sudo=True
        )
    store = await backend.artifacts()
    await store.deploy(move.moved.text)
    await backend.daemon_reload()
    values = move.moved.values
    rewritten: list[str] = []
    for backup in await store.backups():
        data = await transport.read_file(backup, sudo=sudo)
        text = None if data is None else data.decode("utf-8", "replace")
        if text is None or not any(value in text for value in values):
            continue
        again = move_inline_secrets(text, move.env_file, backend.secret_env)
        if again is None or any(value in again.text for value in values):
            raise TransportError(f"{backup} holds a moved secret that cannot be taken out")
        await transport.upload(again.text.encode(), backup, mode=0o600, sudo=sudo)
        rewritten.append(backup)
    return rewritten
