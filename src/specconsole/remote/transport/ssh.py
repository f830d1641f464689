"""The SSH transport: commands, streams, files and port forwards to the GPU box over asyncssh.

Why it looks like this:

* Host keys are always verified (``known_hosts`` is never ``None``): an unknown or changed
  key raises :class:`HostKeyRejected` with the fix, and is never retried.
* The box is named the way the user already names it: a profile hostname, or an
  ``~/.ssh/config`` alias whose ``HostName``/``User``/``Port``/``IdentityFile``/``ProxyJump``
  asyncssh applies itself.
* A long trial outlives flaky links: keepalives notice a dead link, and the next operation
  reconnects with capped exponential backoff (after the first successful connect). One-shot
  commands are retried once on a fresh connection (also when the channel closed without an
  exit status because the link died under it); when reconnecting fails the caller gets
  :class:`BoxUnreachable` (a failure of reach: the sweep stops, no trial is blamed).
  Streams raise :class:`ConnectionLost` when their channel dies so the backend can resume
  them from its cursor on the new connection. Port forwards are re-established on the same
  local port, so URLs handed out stay valid.
* Listeners (the controller) learn about drops and recoveries through ``on_event``.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from specconsole.core.plans.profile import HostProfile
from specconsole.core.ports import (
    AuthenticationFailed,
    BoxUnreachable,
    CommandResult,
    ConnectionLost,
    HostKeyRejected,
    PortForward,
    TransportError,
)
from specconsole.remote.shell import (
    ShellFiles,
    check_stream_end,
    check_sudo,
    command_name,
    wrap_sudo,
)
from specconsole.remote.transport import sshhints
from specconsole.remote.transport.connection import ConnectionEvent, ConnectionListener
from specconsole.remote.transport.sshlib import asyncssh

_DROP_ERRORS: tuple[type[BaseException], ...] = (
    asyncssh.ConnectionLost,
    asyncssh.DisconnectError,
    asyncssh.ChannelOpenError,
    BrokenPipeError,
    ConnectionError,
    OSError,
)
"""Exceptions that mean "the connection is gone" once a connection existed."""

_STDERR_LIMIT = 64 * 1024


class SshTransport(ShellFiles):
    """:class:`specconsole.core.ports.Transport` over one asyncssh connection."""

    def __init__(self, profile: HostProfile, *, on_event: ConnectionListener | None = None) -> None:
        self._profile = profile
        self._on_event = on_event
        self._conn: asyncssh.SSHClientConnection | None = None
        self._ever_connected = False
        self._lock = asyncio.Lock()
        self._is_root: bool | None = None
        self._login_user: str | None = None
        self._forwards: dict[int, tuple[str, int, asyncssh.SSHListener]] = {}
        self._closed = False

    # ---------------------------------------------------------------- connection management

    @property
    def description(self) -> str:
        p = self._profile
        where = p.hostname or p.alias or "?"
        port = f":{p.port}" if p.port else ""
        user = f"{p.user}@" if p.user else ""
        return f"{p.alias or where} (ssh {user}{where}{port})"

    @property
    def connection(self) -> asyncssh.SSHClientConnection | None:
        """The live asyncssh connection, if any (tests use it to cut the link)."""
        return self._conn

    def _options(self) -> dict[str, Any]:
        p = self._profile
        options: dict[str, Any] = {
            "connect_timeout": p.connect_timeout,
            "keepalive_interval": p.keepalive_interval,
            "keepalive_count_max": p.keepalive_count_max,
        }
        if p.ssh_config is not None:
            options["config"] = [str(Path(p.ssh_config).expanduser())] if p.ssh_config else []
        if p.hostname and p.alias and p.hostname != p.alias:
            options["host"] = p.hostname
        if p.user:
            options["username"] = p.user
        if p.port:
            options["port"] = p.port
        if p.identity_files:
            options["client_keys"] = [str(Path(k).expanduser()) for k in p.identity_files]
        if not p.use_agent:
            options["agent_path"] = None
        if p.proxy_jump:
            options["tunnel"] = p.proxy_jump
        if p.known_hosts:
            # Never None: verification stays on. A missing file trusts nothing.
            options["known_hosts"] = str(Path(p.known_hosts).expanduser())
        return options

    def _emit(self, event: ConnectionEvent, detail: str) -> None:
        if self._on_event is not None:
            self._on_event(event, detail)

    async def _open(self) -> asyncssh.SSHClientConnection:
        """One connection attempt, with errors mapped to the port's exceptions."""
        p = self._profile
        target = p.alias or p.hostname or "localhost"
        options = self._options()
        host = options.pop("host", target)
        try:
            async with asyncio.timeout(p.connect_timeout + 5):
                return await asyncssh.connect(host, **options)
        except asyncssh.HostKeyNotVerifiable as exc:
            known = p.known_hosts or "~/.ssh/known_hosts (and the ssh config's UserKnownHostsFile)"
            entry = sshhints.lookup(target, p.ssh_config)
            hostname, port = p.hostname or entry.hostname, p.port or entry.port
            raise HostKeyRejected(
                f"refusing to connect to {self.description}: its host key is not trusted "
                f"({exc.reason}). The key is unknown or has CHANGED compared with {known}. "
                + sshhints.host_key_fix(hostname, port)
            ) from None
        except asyncssh.PermissionDenied as exc:
            raise AuthenticationFailed(
                f"{self.description}: authentication failed ({exc.reason}); check the user, "
                "IdentityFile / [host] identity_files, and that the key is loaded in the agent"
            ) from None
        except asyncssh.ConfigParseError as exc:
            raise TransportError(f"cannot read the ssh config: {exc}") from None
        except (TimeoutError, asyncssh.Error, OSError) as exc:
            reason = str(exc) or type(exc).__name__
            if isinstance(exc, TimeoutError):
                reason = f"no answer within {p.connect_timeout:g} s"
            elif p.alias and not p.hostname:  # a typo in an alias reads as a DNS failure
                reason += sshhints.unknown_alias_hint(p.alias, reason, p.ssh_config)
            raise BoxUnreachable(f"cannot connect to {self.description}: {reason}") from None

    async def connect(self) -> None:
        """Connect now (otherwise the first operation connects)."""
        await self._connection()

    async def _connection(self) -> asyncssh.SSHClientConnection:
        if self._closed:
            raise TransportError("the SSH transport was closed")
        conn = self._conn
        if conn is not None and not _is_closed(conn):
            return conn
        async with self._lock:
            conn = self._conn
            if conn is not None and not _is_closed(conn):
                return conn
            if not self._ever_connected:
                self._conn = await self._open()
                self._ever_connected = True
                self._emit(ConnectionEvent.CONNECTED, self.description)
                return self._conn
            self._conn = None
            self._emit(ConnectionEvent.LOST, f"connection to {self.description} dropped")
            self._conn = await self._reconnect()
            await self._restore_forwards(self._conn)
            self._emit(ConnectionEvent.RECONNECTED, self.description)
            return self._conn

    async def _reconnect(self) -> asyncssh.SSHClientConnection:
        p = self._profile
        last = ""
        for attempt in range(max(1, p.reconnect_attempts)):
            if attempt:
                delay = min(p.reconnect_max_delay, 0.25 * 2 ** (attempt - 1))
                await asyncio.sleep(delay * random.uniform(0.8, 1.2))
            try:
                return await self._open()
            except ConnectionLost as exc:
                last = str(exc)
        self._emit(ConnectionEvent.FAILED, last)
        raise BoxUnreachable(  # a failure of reach: the sweep stops, no trial is blamed
            f"lost the connection to {self.description} and {p.reconnect_attempts} reconnect "
            f"attempts failed: {last}"
        )

    def _mark_lost(self, conn: asyncssh.SSHClientConnection) -> None:
        if self._conn is conn:
            conn.abort()

    def _refused_channel(self, conn: asyncssh.SSHClientConnection, exc: BaseException) -> None:
        """A channel the box refused on a live connection is an error, not a drop."""
        if isinstance(exc, asyncssh.ChannelOpenError) and not _is_closed(conn):
            raise TransportError(
                f"{self.description} refused a new SSH channel ({exc.reason}); check sshd's "
                "MaxSessions and AllowTcpForwarding"
            ) from None

    async def _remote_is_root(self) -> bool:
        if self._is_root is None:
            result = await self.run("id -u; id -un", timeout=30)
            out = result.stdout.split()
            self._is_root = bool(out) and out[0] == "0"
            self._login_user = out[1] if len(out) > 1 else (self._profile.user or "?")
        return self._is_root

    # ---------------------------------------------------------------------------- operations

    async def run(
        self,
        command: str,
        *,
        timeout: float | None = 60.0,
        sudo: bool = False,
        stdin: str | None = None,
    ) -> CommandResult:
        use_sudo = sudo and not await self._remote_is_root()
        full = wrap_sudo(command, use_sudo)
        for attempt in range(2):
            conn = await self._connection()
            try:
                completed = await conn.run(full, input=stdin, check=False, timeout=timeout)
            except asyncssh.TimeoutError as exc:
                return CommandResult(
                    command=command,
                    exit_status=None,
                    stdout=str(exc.stdout or ""),
                    stderr=f"{exc.stderr or ''}timed out after {timeout:g} s",
                )
            except _DROP_ERRORS as exc:
                self._refused_channel(conn, exc)
                self._mark_lost(conn)
                if attempt:
                    raise ConnectionLost(
                        f"connection to {self.description} dropped while running a command: "
                        f"{exc or type(exc).__name__}"
                    ) from None
                continue
            if (
                completed.exit_status in (None, -1)
                and not completed.exit_signal
                and (_is_closed(conn))
            ):  # the connection died under the command: a drop, not the command's answer
                if attempt:
                    raise ConnectionLost(
                        f"connection to {self.description} dropped while running a command"
                    )
                continue
            exit_status = None if completed.exit_signal else completed.exit_status
            result = CommandResult(
                command=command,
                exit_status=exit_status,
                stdout=str(completed.stdout or ""),
                stderr=str(completed.stderr or ""),
            )
            if use_sudo:
                check_sudo(result, user=self._login_user or "?", what=command_name(command))
            return result
        raise AssertionError("unreachable")

    async def stream(self, command: str, *, sudo: bool = False) -> AsyncIterator[str]:
        """Yield output lines (trailing newline removed, undecodable bytes kept as
        surrogate escapes so callers can count bytes; lines beyond asyncssh's buffer arrive
        in pieces). Raises ConnectionLost if the link drops; a partial last line is then
        withheld (it is re-read on resume)."""
        use_sudo = sudo and not await self._remote_is_root()
        conn = await self._connection()
        try:
            process = await conn.create_process(
                wrap_sudo(command, use_sudo),
                stdin=asyncssh.DEVNULL,
                encoding="utf-8",
                errors="surrogateescape",
            )
        except _DROP_ERRORS as exc:
            self._refused_channel(conn, exc)
            self._mark_lost(conn)
            raise ConnectionLost(f"connection to {self.description} dropped: {exc}") from None
        stderr_chunks: list[str] = []
        stderr_task = asyncio.create_task(_drain(process.stderr, stderr_chunks))
        dropped = False
        pending: str | None = None  # a chunk without newline: a piece, or the last line
        try:
            while True:
                try:
                    line = await process.stdout.readline()
                except _DROP_ERRORS:
                    dropped = True
                    break
                if not line:
                    break
                if pending is not None:
                    yield pending  # more data followed: it was a piece of a very long line
                    pending = None
                if line.endswith("\n"):
                    yield line[:-1]
                else:
                    pending = line
            if not dropped:
                with contextlib.suppress(TimeoutError, *_DROP_ERRORS):
                    async with asyncio.timeout(10):
                        await process.wait_closed()
                dropped = process.exit_status is None and process.exit_signal is None
            if pending is not None and not dropped:
                yield pending  # the command really ended without a final newline
        finally:
            if process.exit_status is None and process.exit_signal is None:
                with contextlib.suppress(*_DROP_ERRORS):
                    process.terminate()
                process.close()
            stderr_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, *_DROP_ERRORS):
                await stderr_task
        if dropped:
            self._mark_lost(conn)
            raise ConnectionLost(f"connection to {self.description} dropped during a stream")
        check_stream_end(
            command,
            None if process.exit_signal else process.exit_status,
            "".join(stderr_chunks),
            sudo_user=(self._login_user or "?") if use_sudo else None,
        )

    async def forward_local_port(
        self, remote_port: int, remote_host: str = "127.0.0.1"
    ) -> PortForward:
        conn = await self._connection()
        try:
            listener = await conn.forward_local_port("127.0.0.1", 0, remote_host, remote_port)
        except _DROP_ERRORS as exc:
            message = f"cannot forward a port to {self.description}: {exc}"
            if not _is_closed(conn):  # e.g. no local port: not the link's fault
                raise TransportError(message) from None
            self._mark_lost(conn)
            raise ConnectionLost(message) from None
        local_port = listener.get_port()
        self._forwards[local_port] = (remote_host, remote_port, listener)
        return PortForward(local_port=local_port, remote_host=remote_host, remote_port=remote_port)

    async def _restore_forwards(self, conn: asyncssh.SSHClientConnection) -> None:
        for local_port, (host, port, old) in list(self._forwards.items()):
            old.close()
            try:
                listener = await conn.forward_local_port("127.0.0.1", local_port, host, port)
            except OSError:
                del self._forwards[local_port]  # the port was taken meanwhile
                continue
            self._forwards[local_port] = (host, port, listener)

    async def close(self) -> None:
        self._closed = True
        for _host, _port, listener in self._forwards.values():
            listener.close()
        self._forwards.clear()
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await conn.wait_closed()


def _is_closed(conn: asyncssh.SSHClientConnection) -> bool:
    # is_closed() turns true only after cleanup; the transport is cleared at the drop.
    return conn.is_closed() or getattr(conn, "_transport", True) is None


async def _drain(reader: asyncssh.SSHReader[str], chunks: list[str]) -> None:
    size = 0
    while True:
        data = await reader.read(4096)
        if not data:
            return
        if size < _STDERR_LIMIT:
            chunks.append(data)
            size += len(data)
