"""The systemd service backend: the server as a unit, the way most GPU boxes run it.

It automates the hand-run loop — edit the unit, copy it over, ``daemon-reload``, restart,
read ``journalctl`` — with the safety a person would add: the new unit is diffed against the
box's, the old one is backed up with a timestamp, the upload is atomic, and rollback puts
the backup back. System units go through ``sudo -n`` (unless logged in as root); ``--user``
units need no privileges.

Why logs look the way they do: a unit's journal holds every earlier run. Each start gets a
fresh systemd *invocation ID*, so the stream asks journalctl for the unit's records since
the invocation began (``--since``, a cheap pre-filter) and keeps only records of that
invocation (``_SYSTEMD_INVOCATION_ID`` for the server's output, ``INVOCATION_ID`` /
``USER_INVOCATION_ID`` for the manager's own lines about it). An old run's lines can
never count for the new one. The cursor is ``INVOCATION/JOURNAL_CURSOR``; after a dropped
connection the stream resumes with ``--after-cursor``, so nothing is lost or doubled.
The journal stream follows until cancelled (a unit that ends does not end it); the
controller learns the end from :meth:`SystemdBackend.status`.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from dataclasses import replace

from specconsole.core.config.model import ServerConfig
from specconsole.core.launch.systemd import UnitOptions, to_unit
from specconsole.core.launch.unit import (
    UnitEdit,
    edit_unit,
    generate_unit,
    is_generated,
)
from specconsole.core.launch.unit_parse import unit_user
from specconsole.core.plans import launch
from specconsole.core.plans.profile import ServiceProfile, UnitScope, UnitTemplate, named
from specconsole.core.ports import (
    ConnectionLost,
    Deployment,
    DeployPreview,
    LogRecord,
    ServiceState,
    ServiceStatus,
    Transport,
    TransportError,
)
from specconsole.remote.artifact import ArtifactStore
from specconsole.remote.shell import expand_home
from specconsole.remote.sidefiles import folder_for, install, placed, side_diff
from specconsole.remote.unitsource import UnitSource, read_unit_source

SHOW_PROPERTIES = (
    "LoadState",
    "ActiveState",
    "SubState",
    "Result",
    "ExecMainStatus",
    "ExecMainCode",
    "ExecMainPID",
    "NRestarts",
    "InvocationID",
    "InactiveExitTimestamp",
    "ExecMainStartTimestamp",
    "NeedDaemonReload",
)
"""``systemctl show -p`` properties the status and log stream read."""

_INVOCATION_FIELDS = ("_SYSTEMD_INVOCATION_ID", "INVOCATION_ID", "USER_INVOCATION_ID")

_ACTIVE_STATES = {
    "active": ServiceState.RUNNING,
    "reloading": ServiceState.RUNNING,
    "deactivating": ServiceState.RUNNING,
    "activating": ServiceState.STARTING,
    "failed": ServiceState.FAILED,
    "inactive": ServiceState.INACTIVE,
}

_CLD_KILLED = {"2", "3", "killed", "dumped"}
"""``ExecMainCode`` values meaning ``ExecMainStatus`` is a signal (CLD_KILLED, CLD_DUMPED)."""


def unit_options(scope: UnitScope = UnitScope.SYSTEM) -> UnitOptions:
    """Rendering options of a generated unit for the manager's scope (the rule is the one
    ``render`` and ``best`` print with, ``core.plans.launch``)."""
    return launch.unit_options(scope)


def render_unit(config: ServerConfig, scope: UnitScope = UnitScope.SYSTEM) -> str:
    """The unit file for ``config``, rendered by the core (never by the backend)."""
    return to_unit(config, unit_options(scope))


def parse_show(text: str) -> dict[str, str]:
    """``systemctl show`` output (``Key=Value`` lines) as a dict."""
    props: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props[key] = value
    return props


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None


def status_from_show(props: Mapping[str, str]) -> ServiceStatus:
    """Map ``systemctl show`` properties to the port's :class:`ServiceStatus`."""
    if props.get("LoadState") == "not-found":
        return ServiceStatus(ServiceState.INACTIVE, result="not-found", detail="unit not found")
    active = props.get("ActiveState", "")
    state = _ACTIVE_STATES.get(active, ServiceState.UNKNOWN)
    pid = _int(props.get("ExecMainPID")) or None
    main_status = _int(props.get("ExecMainStatus"))
    killed = props.get("ExecMainCode", "") in _CLD_KILLED
    return ServiceStatus(
        state=state,
        pid=pid if state in (ServiceState.RUNNING, ServiceState.STARTING) else None,
        exit_status=None if killed else main_status,
        signal=main_status if killed else None,
        result=props.get("Result") or None,
        restarts=_int(props.get("NRestarts")),
        oom_killed=props.get("Result") == "oom-kill",
        detail=f"{active}/{props.get('SubState', '?')}",
    )


def record_from_json(line: str, invocation: str | None) -> LogRecord | None:
    """One ``journalctl -o json`` line → a record, or None if it belongs to another run."""
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):  # not a record, or nested past the parser's recursion
        return None
    if not isinstance(entry, dict):
        return None
    if invocation is not None and all(entry.get(f) != invocation for f in _INVOCATION_FIELDS):
        return None
    message = entry.get("MESSAGE")
    if isinstance(message, list):  # non-UTF-8 messages come as byte arrays
        message = bytes(b for b in message if isinstance(b, int)).decode("utf-8", "replace")
    if not isinstance(message, str):
        message = "" if message is None else str(message)
    realtime = _int(entry.get("__REALTIME_TIMESTAMP"))
    cursor = entry.get("__CURSOR")
    return LogRecord(
        text=message.rstrip("\n"),
        source_time=realtime / 1e6 if realtime is not None else None,
        cursor=f"{invocation or ''}/{cursor}" if isinstance(cursor, str) else None,
    )


class SystemdBackend:
    """:class:`specconsole.core.ports.ServiceBackend` for a systemd unit."""

    def __init__(self, transport: Transport, profile: ServiceProfile) -> None:
        profile = named(profile)
        self._transport = transport
        self._profile = profile
        self._user = profile.scope is UnitScope.USER
        self._sudo = profile.uses_sudo() and not self._user
        self._store: ArtifactStore | None = None

    @property
    def description(self) -> str:
        scope = "user unit" if self._user else "systemd unit"
        return f"{scope} {self._profile.unit} on {self._transport.description}"

    @property
    def unit(self) -> str:
        return self._profile.unit

    async def _artifacts(self) -> ArtifactStore:
        if self._store is None:
            unit_dir = await expand_home(self._transport, self._profile.resolved_unit_dir())
            backups = await expand_home(self._transport, self._profile.resolved_backup_dir())
            self._store = ArtifactStore(
                self._transport,
                f"{unit_dir.rstrip('/')}/{self.unit}",
                backups,
                sudo=self._sudo,
                keep_backups=self._profile.keep_backups,
            )
        return self._store

    def _systemctl(self, args: str) -> str:
        return f"systemctl {'--user ' if self._user else ''}{args}"

    async def _ctl(self, args: str, *, what: str, timeout: float = 120.0) -> str:
        result = await self._transport.run(self._systemctl(args), timeout=timeout, sudo=self._sudo)
        if not result.ok:
            reason = "; ".join(result.stderr.strip().splitlines()) or (
                f"exit status {result.exit_status}"
            )
            if "not found" in reason or "not loaded" in reason:
                raise TransportError(
                    f"{what}: unit {self.unit} is not installed on {self._transport.description}"
                    f" ({reason}); deploy a configuration first"
                )
            raise TransportError(f"{what} failed: {reason}")
        return result.stdout

    # ------------------------------------------------------------------------------ deploy

    @property
    def env_file(self) -> str:
        """The secret ``EnvironmentFile=`` (0600, next to the backups)."""
        assert self._store is not None
        return launch.secret_env_file(self._profile, self._store.backup_dir)

    async def cat(self) -> tuple[str | None, str]:
        """(main unit text, drop-ins text) as ``systemctl cat`` shows them, split at the files
        systemd names (:mod:`specconsole.remote.unitsource`); (None, '') when the unit is not
        installed."""
        source = await self.read_unit()
        return (None, "") if source is None else (source.cat.main, source.cat.dropins)

    async def artifacts(self) -> ArtifactStore:
        """The unit file on the box with its backups."""
        return await self._artifacts()

    @property
    def transport(self) -> Transport:
        return self._transport

    @property
    def uses_sudo(self) -> bool:
        """Whether the unit's files and ``systemctl`` need ``sudo -n``."""
        return self._sudo

    @property
    def secret_env(self) -> tuple[str, ...]:
        """``[service] secret_env``: what the user marked secret."""
        return self._profile.secret_env

    async def daemon_reload(self) -> None:
        await self._ctl("daemon-reload", what="systemctl daemon-reload")

    async def read_unit(self) -> UnitSource | None:
        """The unit's files and the context its specifiers and ``EnvironmentFile=`` variables
        resolve in (for :func:`~specconsole.core.launch.systemd.parse_unit`); None when the
        unit is not installed."""
        return await read_unit_source(
            self._transport, self._systemctl("").rstrip(), self.unit, sudo=self._sudo,
            user=self._user,
        )  # fmt: skip

    async def _render(self, config: ServerConfig) -> UnitEdit:
        """The unit for ``config``: the box's own unit edited (``template = "edit"``, the
        default) or a generated one (``generate``, no unit yet, or one specconsole
        generated), secrets moved to the environment file either way."""
        store = await self._artifacts()
        current = await store.current()
        dropins = ""
        context = None
        if self._profile.template is UnitTemplate.EDIT:
            source = await self.read_unit()
            if source is not None:
                dropins, context = source.cat.dropins, source.context
                current = current if current is not None else source.cat.main
        if (
            self._profile.template is UnitTemplate.GENERATE
            or current is None
            or is_generated(current)
        ):
            return generate_unit(
                config,
                unit_options(self._profile.scope),
                env_file_path=self.env_file,
                secret_env=self._profile.secret_env,
            )
        return edit_unit(
            current,
            config,
            env_file_path=self.env_file,
            secret_env=self._profile.secret_env,
            dropins=dropins,
            context=context,
        )

    async def side_dir(self) -> str:
        """Where a configuration's side files go: ``UNIT-files`` beside the unit's secret
        environment file, in the backup folder (``remote.sidefiles``)."""
        store = await self._artifacts()
        return folder_for(store.backup_dir, f"{self.unit}-files")

    async def preview(self, config: ServerConfig) -> DeployPreview:
        config = placed(config, await self.side_dir())
        store = await self._artifacts()
        preview = await store.preview((await self._render(config)).text)
        files = await side_diff(self._transport, config, sudo=self._sudo)
        return replace(preview, diff=preview.diff + files) if files else preview

    async def deploy(self, config: ServerConfig) -> Deployment:
        config = placed(config, await self.side_dir())
        store = await self._artifacts()
        edit = await self._render(config)
        await self._write_env_file(edit.env_file, edit.text, config)
        await install(self._transport, config, sudo=self._sudo)  # before the unit names them
        deployment = await store.deploy(edit.text)
        await self._ctl("daemon-reload", what="systemctl daemon-reload")
        return deployment

    async def _write_env_file(self, body: str | None, unit_text: str, config: ServerConfig) -> None:
        """Upload the secret environment file (0600, owned by the service user), or remove
        it when the configuration has no secrets."""
        path = shlex.quote(self.env_file)
        if body is None:
            await self._transport.run(f"rm -f -- {path}", sudo=self._sudo)
            return
        folder = shlex.quote(self.env_file.rsplit("/", 1)[0])
        result = await self._transport.run(
            f"umask 077; mkdir -p {folder} && chmod 700 {folder}", sudo=self._sudo
        )
        if not result.ok:
            raise TransportError(f"cannot create {folder}: {result.stderr.strip()}")
        await self._transport.upload(
            body.encode("utf-8"), self.env_file, mode=0o600, sudo=self._sudo
        )
        owner = unit_user(unit_text) or config.user
        if owner and self._sudo:
            await self._transport.run(f"chown -- {shlex.quote(owner)} {path}", sudo=True)

    async def rollback(self) -> Deployment | None:
        deployment = await (await self._artifacts()).rollback()
        if deployment is not None:
            await self._ctl("daemon-reload", what="systemctl daemon-reload")
        return deployment

    async def restore_original(self) -> Deployment | None:
        """Put back the first backup — the unit as it was before specconsole's first deploy
        (never pruned) — keeping what is there now as a backup; None if there is none."""
        store = await self._artifacts()
        found = await store.backups()
        text = await store.original()
        if text is None or not found:
            return None
        deployment = replace(await store.deploy(text), restored_from=found[0])
        if self.env_file not in text:
            await self._write_env_file(None, text, ServerConfig(model_path="-"))
        await self._ctl("daemon-reload", what="systemctl daemon-reload")
        return deployment

    async def deployed_hash(self) -> str | None:
        return await (await self._artifacts()).current_hash()

    async def running_hash(self) -> str | None:
        """sha256 of the unit the live server was started from; None when nothing runs or
        the unit file changed after the start (the running server is then not the file)."""
        props = await self._show()
        if props.get("ActiveState") not in ("active", "activating", "reloading"):
            return None
        started = props.get("ExecMainStartTimestamp", "").lstrip("@")
        if props.get("NeedDaemonReload") == "yes" or not started.isdigit():
            return None
        store = await self._artifacts()
        result = await self._transport.run(
            f"stat -c %Y -- {shlex.quote(store.path)}", sudo=self._sudo
        )
        if not result.ok or int(result.stdout.strip() or 0) > int(started):
            return None
        return await self.deployed_hash()

    # --------------------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        unit = shlex.quote(self.unit)
        # reset-failed clears the previous run's Result/NRestarts so status speaks of this one.
        await self._transport.run(self._systemctl(f"reset-failed {unit}"), sudo=self._sudo)
        await self._ctl(f"restart {unit}", what=f"systemctl restart {self.unit}")

    async def stop(self) -> None:
        props = await self._show()
        if props.get("LoadState") == "not-found":
            return
        await self._ctl(f"stop {shlex.quote(self.unit)}", what=f"systemctl stop {self.unit}")

    async def _show(self) -> dict[str, str]:
        props = ",".join(SHOW_PROPERTIES)
        out = await self._ctl(
            f"show --timestamp=unix -p {props} {shlex.quote(self.unit)}",
            what=f"systemctl show {self.unit}",
        )
        return parse_show(out)

    async def status(self) -> ServiceStatus:
        return status_from_show(await self._show())

    # -------------------------------------------------------------------------------- logs

    def _journalctl(self, *, since: int | None, after_cursor: str | None) -> str:
        parts = ["journalctl"]
        if self._user:
            parts.append("--user")
        parts += ["-u", shlex.quote(self.unit), "-o", "json", "--no-pager", "-f", "--no-tail"]
        if after_cursor:
            parts.append(f"--after-cursor={shlex.quote(after_cursor)}")
        elif since is not None:
            parts.append(f"--since=@{since}")
        return " ".join(parts)

    async def logs(self, *, after: str | None = None) -> AsyncIterator[LogRecord]:
        cursor: str | None = None
        since: int | None = None
        if after:
            invocation, sep, cursor = after.partition("/")
            if not sep or not cursor:
                raise ValueError(f"not a systemd-backend log cursor: {after!r}")
        else:
            props = await self._show()
            invocation = props.get("InvocationID", "")
            started = props.get("InactiveExitTimestamp", "").lstrip("@")
            since = int(started) - 1 if started.isdigit() else None
        if not invocation:
            return  # never started: there is no run to follow
        failures = 0
        while True:
            command = self._journalctl(since=since, after_cursor=cursor)
            try:
                async with aclosing(self._transport.stream(command, sudo=self._sudo)) as lines:
                    async for line in lines:
                        failures = 0
                        record = record_from_json(line, invocation)
                        if record is None:
                            continue
                        if record.cursor:
                            cursor = record.cursor.partition("/")[2]
                        yield record
                return
            except ConnectionLost:
                failures += 1
                if failures > 1:
                    raise
