"""One deployed text artifact on the box — a unit file, a launch script — with diff, backup,
atomic replace and rollback.

Every backend deploys the same way (render → diff against the box → timestamped backup →
atomic upload → record the hash) and rolls back the same way (newest backup → in place), so
those sequences live here once (:meth:`ArtifactStore.deploy`, :meth:`ArtifactStore.rollback`);
a backend only renders its artifact and tells its manager (``daemon-reload``). The hash of the text
on the box is the identity of the deployed configuration: it is what lets the controller ask
"is what I deployed the one that is there?" after a console restart.
"""

from __future__ import annotations

import difflib
import hashlib
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime

from specconsole.core.ports import Deployment, DeployPreview, Transport, TransportError


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def unified_diff(current: str | None, new: str, path: str) -> str:
    """Unified diff from what is on the box to what would be deployed ('' if identical)."""
    if current == new:
        return ""
    return "".join(
        difflib.unified_diff(
            (current or "").splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"{path} (on the box)" if current is not None else "/dev/null",
            tofile=f"{path} (new)",
        )
    )


@dataclass(frozen=True, slots=True)
class ArtifactStore:
    """A text file on the box with timestamped backups in ``backup_dir``.

    Paths must already be absolute (see :func:`specconsole.remote.shell.expand_home`).
    """

    transport: Transport
    path: str
    backup_dir: str
    sudo: bool = False
    mode: int = 0o644
    keep_backups: int = 20
    """Newest backups kept by :meth:`prune`; the first (the user's original) is kept too."""

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    async def current(self) -> str | None:
        data = await self.transport.read_file(self.path, sudo=self.sudo)
        return None if data is None else data.decode("utf-8", "replace")

    async def preview(self, artifact: str) -> DeployPreview:
        current = await self.current()
        return DeployPreview(
            artifact=artifact,
            artifact_hash=sha256_text(artifact),
            current=current,
            diff=unified_diff(current, artifact, self.path),
        )

    async def current_hash(self) -> str | None:
        """sha256 of the file on the box (None if there is none): the deployed identity."""
        current = await self.current()
        return None if current is None else sha256_text(current)

    async def deploy(self, artifact: str) -> Deployment:
        """Put ``artifact`` in place: unchanged text is left alone; otherwise what is there
        is backed up first, then atomically replaced."""
        preview = await self.preview(artifact)
        backup = None
        if preview.diff:
            if preview.current is not None:
                backup = await self.backup()
            await self.install(preview.artifact)
        return Deployment(preview.artifact_hash, backup, self.path)

    async def rollback(self) -> Deployment | None:
        """Restore the newest backup (None if there is none to restore)."""
        restored = await self.restore_latest()
        if restored is None:
            return None
        backup, text = restored
        return Deployment(sha256_text(text), backup, self.path, restored_from=backup)

    async def backup(self) -> str | None:
        """Copy the current file to ``backup_dir/NAME.TIMESTAMP`` (None if there is none)."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        target = f"{self.backup_dir}/{self.name}.{stamp}"
        src, dst, folder = (shlex.quote(p) for p in (self.path, target, self.backup_dir))
        # 0600 in a 0700 folder: a unit or script may hold what only its owner should read.
        result = await self.transport.run(
            f"[ -e {src} ] || exit 0; umask 077; mkdir -p {folder} && chmod 700 {folder}"
            f" && cp {src} {dst} && chmod 600 {dst} && echo {dst}",
            sudo=self.sudo,
        )
        if not result.ok:
            raise TransportError(
                f"cannot back up {self.path} to {self.backup_dir}: {result.stderr.strip()}; "
                "nothing was changed"
            )
        await self.prune()
        return result.stdout.strip() or None

    async def prune(self) -> list[str]:
        """Remove backups beyond the newest ``keep_backups``, never the first one (the
        user's original); returns the removed paths."""
        found = await self.backups()
        doomed = found[1 : max(1, len(found) - self.keep_backups)]
        if doomed:
            words = " ".join(shlex.quote(p) for p in doomed)
            result = await self.transport.run(f"rm -f -- {words}", sudo=self.sudo)
            if not result.ok:
                raise TransportError(f"cannot prune backups: {result.stderr.strip()}")
        return doomed

    async def original(self) -> str | None:
        """The text of the first backup — what was there before specconsole's first deploy."""
        found = await self.backups()
        if not found:
            return None
        data = await self.transport.read_file(found[0], sudo=self.sudo)
        return None if data is None else data.decode("utf-8", "replace")

    async def install(self, artifact: str) -> None:
        """Atomically replace the file (temp name, then rename; mode kept)."""
        mode = None if self.mode == 0o644 else self.mode  # 0644: keep the file's own mode
        await self.transport.upload(artifact.encode("utf-8"), self.path, mode=mode, sudo=self.sudo)

    async def backups(self) -> list[str]:
        """Backups of this file, oldest first."""
        pattern = f"{shlex.quote(self.backup_dir)}/{shlex.quote(self.name)}.*"
        result = await self.transport.run(
            f'for f in {pattern}; do [ -e "$f" ] && echo "$f"; done; true', sudo=self.sudo
        )
        if not result.ok:
            raise TransportError(f"cannot list backups in {self.backup_dir}: {result.stderr}")
        return sorted(line for line in result.stdout.splitlines() if line)

    async def restore_latest(self) -> tuple[str, str] | None:
        """Put the newest backup back in place (consuming it); returns (backup, text)."""
        found = await self.backups()
        if not found:
            return None
        latest = found[-1]
        data = await self.transport.read_file(latest, sudo=self.sudo)
        if data is None:
            return None
        text = data.decode("utf-8", "replace")
        await self.install(text)
        result = await self.transport.run(f"rm -f -- {shlex.quote(latest)}", sudo=self.sudo)
        if not result.ok:
            raise TransportError(f"restored {latest} but could not remove it: {result.stderr}")
        return latest, text
