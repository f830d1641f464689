"""The local transport: the same operations as SSH, run as subprocesses on this machine.

Used when the console runs on the GPU box itself, for the demo, and in tests, so the service
backends have exactly one code path whatever carries their commands. Commands run through
``sh -c`` in their own session (process group), so a timeout or a closed stream stops the
whole command tree and nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import signal
from collections.abc import AsyncIterator

from specconsole.core.ports import PARENT_PID_ENV, CommandResult, PortForward, TransportError
from specconsole.remote.shell import (
    ShellFiles,
    check_stream_end,
    check_sudo,
    command_name,
    wrap_sudo,
)

_STREAM_LIMIT = 1 << 20
"""Lines longer than this arrive in pieces; the pipe is not read ahead beyond about twice it."""


def _child_env() -> dict[str, str]:
    """The environment of every command: ours, naming this process as the one to outlive
    (the demo's simulator stops when it is gone; ``core.ports.PARENT_PID_ENV``)."""
    return {**os.environ, PARENT_PID_ENV: str(os.getpid())}


async def _spawn(*argv: str, **options: object) -> asyncio.subprocess.Process:
    """``create_subprocess_exec``; a program that cannot be started (no ``sh`` on the PATH,
    a full process table) is a TransportError naming it and the fix, not an OSError."""
    try:
        return await asyncio.create_subprocess_exec(*argv, **options)  # type: ignore[arg-type]
    except OSError as exc:
        raise TransportError(
            f"cannot start {argv[0]} on this machine ({exc.strerror or exc}); the local "
            f"transport runs every command through {argv[0]}: put it on the PATH"
        ) from None


class LocalTransport(ShellFiles):
    """:class:`specconsole.core.ports.Transport` for this machine."""

    def __init__(self) -> None:
        self._is_root = os.geteuid() == 0

    @property
    def description(self) -> str:
        return "local"

    async def run(
        self,
        command: str,
        *,
        timeout: float | None = 60.0,
        sudo: bool = False,
        stdin: str | None = None,
    ) -> CommandResult:
        use_sudo = sudo and not self._is_root
        process = await _spawn(
            "sh",
            "-c",
            wrap_sudo(command, use_sudo),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            env=_child_env(),
        )
        data = stdin.encode() if stdin is not None else None
        try:
            async with asyncio.timeout(timeout):
                out, err = await process.communicate(data)
        except TimeoutError:
            await _stop_group(process)
            return CommandResult(command, None, "", f"timed out after {timeout:g} s")
        finally:
            if process.returncode is None:
                await _stop_group(process)
        code = process.returncode
        result = CommandResult(
            command=command,
            exit_status=code if code is not None and code >= 0 else None,
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
        )
        if use_sudo:
            check_sudo(result, user=getpass.getuser(), what=command_name(command))
        return result

    async def stream(self, command: str, *, sudo: bool = False) -> AsyncIterator[str]:
        """Yield output lines (trailing newline removed, undecodable bytes as surrogate
        escapes). The pipe is read only as fast as the consumer iterates."""
        use_sudo = sudo and not self._is_root
        process = await _spawn(
            "sh",
            "-c",
            wrap_sudo(command, use_sudo),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            env=_child_env(),
            limit=_STREAM_LIMIT,
        )
        assert process.stdout is not None and process.stderr is not None
        stderr_task = asyncio.create_task(process.stderr.read(64 * 1024))
        try:
            while True:
                try:
                    raw = await process.stdout.readuntil(b"\n")
                except asyncio.IncompleteReadError as exc:
                    raw = exc.partial  # the last line had no newline
                except asyncio.LimitOverrunError as exc:
                    # An absurdly long line: deliver it in pieces rather than lose it.
                    raw = await process.stdout.readexactly(exc.consumed)
                if not raw:
                    break
                line = raw.decode("utf-8", "surrogateescape")
                yield line[:-1] if line.endswith("\n") else line
            await process.wait()
        finally:
            if process.returncode is None:
                await _stop_group(process)
            err = b""
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2):
                    err = await stderr_task
            stderr_task.cancel()
        check_stream_end(
            command,
            process.returncode,
            err.decode("utf-8", "replace"),
            sudo_user=getpass.getuser() if use_sudo else None,
        )

    async def forward_local_port(
        self, remote_port: int, remote_host: str = "127.0.0.1"
    ) -> PortForward:
        """The box is this machine: its loopback port is reachable as it is."""
        if remote_host not in ("127.0.0.1", "localhost", "0.0.0.0"):
            raise TransportError(
                f"the local transport reaches this machine only; {remote_host!r} is not local"
            )
        return PortForward(local_port=remote_port, remote_host=remote_host, remote_port=remote_port)

    async def close(self) -> None:
        """Nothing is held open between operations."""


async def _stop_group(process: asyncio.subprocess.Process) -> None:
    """TERM the command's process group, KILL it if it lingers (only that group)."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
        if process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await process.wait()
