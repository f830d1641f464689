"""What the backends whose artifact is one shell script in a run folder share (process, slurm).

Both keep ``RUN_DIR/<artifact>`` under :class:`specconsole.remote.artifact.ArtifactStore`
(diff, backup, atomic upload, rollback, hash), run short POSIX scripts on the box that fail
with the box's own words, and follow a log *file* from a byte offset with ``tail -c +N -F``
so a dropped connection resumes at the exact byte. Only what the script says and how a run
is started, observed and stopped differs, so this part is written once here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import replace
from typing import ClassVar

from specconsole.core.config.model import ServerConfig
from specconsole.core.plans.profile import ServiceProfile
from specconsole.core.ports import (
    ConnectionLost,
    Deployment,
    DeployPreview,
    LogRecord,
    Transport,
    TransportError,
)
from specconsole.remote.artifact import ArtifactStore, sha256_text
from specconsole.remote.shell import clean_line, expand_home
from specconsole.remote.sidefiles import folder_for, install, placed, side_diff


class ScriptedBackend:
    """Deploy/preview/rollback/hash of ``RUN_DIR/ARTIFACT`` plus the box-script helpers."""

    ARTIFACT: ClassVar[str] = "command.sh"

    def __init__(self, transport: Transport, profile: ServiceProfile) -> None:
        self._transport = transport
        self._profile = profile
        self._run_dir: str | None = None
        self._store: ArtifactStore | None = None

    async def _paths(self) -> tuple[str, ArtifactStore]:
        if self._run_dir is None or self._store is None:
            run_dir = await expand_home(self._transport, self._profile.run_dir.rstrip("/"))
            backup_dir = await expand_home(self._transport, self._profile.resolved_backup_dir())
            self._store = ArtifactStore(
                self._transport, f"{run_dir}/{self.ARTIFACT}", backup_dir, mode=0o600
            )  # 0600: the script exports the server's environment, secrets included
            self._run_dir = run_dir
        return self._run_dir, self._store

    def _prelude(self) -> str:
        """Shell lines every box script starts with (e.g. an exported ``SLURM_CONF``)."""
        return ""

    async def _sh(self, script: str, *, timeout: float = 60.0, what: str) -> str:
        result = await self._transport.run(self._prelude() + script, timeout=timeout)
        if not result.ok:
            detail = result.stderr.strip() or f"exit status {result.exit_status}"
            raise TransportError(f"{what} failed on {self._transport.description}: {detail}")
        return result.stdout

    async def render(self, config: ServerConfig) -> str:
        """The artifact for ``config`` (a backend renders it with :mod:`specconsole.core`)."""
        raise NotImplementedError

    async def side_dir(self) -> str:
        """Where this backend keeps a configuration's side files (``remote.sidefiles``)."""
        run_dir, _ = await self._paths()
        return folder_for(run_dir)

    async def preview(self, config: ServerConfig) -> DeployPreview:
        config = placed(config, await self.side_dir())
        _, store = await self._paths()
        preview = await store.preview(await self.render(config))
        files = await side_diff(self._transport, config)
        return replace(preview, diff=preview.diff + files) if files else preview

    async def deploy(self, config: ServerConfig) -> Deployment:
        config = placed(config, await self.side_dir())
        _, store = await self._paths()
        await install(self._transport, config)  # before the script that names them
        return await store.deploy(await self.render(config))

    async def rollback(self) -> Deployment | None:
        _, store = await self._paths()
        return await store.rollback()

    async def deployed_hash(self) -> str | None:
        _, store = await self._paths()
        return await store.current_hash()

    async def _script_hash(self, path: str) -> str | None:
        """sha256 of the script copy a run or job was started from (None if it is gone)."""
        data = await self._transport.read_file(path)
        return None if data is None else sha256_text(data.decode("utf-8", "replace"))

    async def _follow(
        self, run_id: str, offset: int, command_at: Callable[[int], str]
    ) -> AsyncIterator[LogRecord]:
        """Lines of ``command_at(offset)`` (a ``tail -c +offset+1 ...`` of the run's log) as
        records with the cursor ``RUN_ID:OFFSET``; one reconnect resumes at the exact byte."""
        failures = 0
        while True:
            command = self._prelude() + command_at(offset)
            try:
                async with aclosing(self._transport.stream(command)) as lines:
                    async for raw in lines:
                        failures = 0
                        offset += len(raw.encode("utf-8", "surrogateescape")) + 1
                        yield LogRecord(text=clean_line(raw), cursor=f"{run_id}:{offset}")
                return
            except ConnectionLost:
                failures += 1
                if failures > 1:
                    raise


def parse_cursor(after: str, backend: str) -> tuple[str, int]:
    """``RUN_ID:OFFSET`` → (run id, byte offset); a clear error for anything else."""
    run_id, _, offset_text = after.rpartition(":")
    if not run_id or not offset_text.isdigit():
        raise ValueError(f"not a {backend}-backend log cursor: {after!r}")
    return run_id, int(offset_text)
