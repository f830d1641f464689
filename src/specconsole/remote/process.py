"""The plain-process service backend: the server as a detached process with a PID file and
one log file per run.

For boxes without systemd or root, for the demo and for the tests. Why it is built this way:

* The deployed artifact is a small launch script (``command.sh``: working directory,
  environment, then ``exec`` of the command line rendered by :mod:`specconsole.core.render`).
  Its sha256 is the deployed configuration's identity; each run keeps a copy of the script
  it started from, so "is what runs the configuration I deployed?" survives a console
  restart.
* Each start makes a new run folder ``runs/ID`` with ``log``, ``pid`` and, when the server
  ends, ``exit``. A tiny ``sh`` wrapper started with ``setsid`` (a new session, so its PID is
  the process group) records the exit status — the console may be disconnected when the
  server dies. The wrapper traps TERM with a no-op handler (not ignore: an ignored signal
  would be inherited by the server) so it outlives the server long enough to record.
* Stopping signals only that process group: TERM, then KILL after the grace period.
* Logs are the run's file followed from byte 0 with ``tail -c +N -F --pid``; the cursor is
  ``RUN_ID:OFFSET``, so after a dropped connection the stream resumes at the exact byte
  where it stopped — no line lost or repeated — and ends once the server has exited and
  the file is drained.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass

from specconsole.core.config import ServerConfig
from specconsole.core.jobscript import launch_lines
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
from specconsole.core.profile import ServiceProfile
from specconsole.remote.artifact import ArtifactStore, sha256_text
from specconsole.remote.shell import clean_line, expand_home

_WRAPPER = (
    "echo $$ > pid.tmp && mv pid.tmp pid; trap : TERM INT HUP; "
    "sh ./command.sh >> log 2>&1 < /dev/null; "
    "echo $? > exit.tmp && mv exit.tmp exit"
)
"""Runs inside the new session: record the PID, run the server, record its exit status."""


def launch_script(config: ServerConfig) -> str:
    """The process backend's artifact: cd, environment, exec of the rendered command."""
    lines = [
        "#!/bin/sh",
        "# Deployed by specconsole (process backend). Runs the server in the foreground.",
        *launch_lines(config),
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class _RunInfo:
    run_id: str | None
    pid: int | None
    alive: bool
    exit_code: int | None
    stopped: str | None


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


class ProcessBackend:
    """:class:`specconsole.core.ports.ServiceBackend` running the server as a plain process."""

    def __init__(self, transport: Transport, profile: ServiceProfile) -> None:
        self._transport = transport
        self._profile = profile
        self._run_dir: str | None = None
        self._store: ArtifactStore | None = None

    @property
    def description(self) -> str:
        return f"process in {self._profile.run_dir} on {self._transport.description}"

    async def _paths(self) -> tuple[str, ArtifactStore]:
        if self._run_dir is None or self._store is None:
            run_dir = await expand_home(self._transport, self._profile.run_dir.rstrip("/"))
            backup_dir = await expand_home(self._transport, self._profile.resolved_backup_dir())
            self._store = ArtifactStore(self._transport, f"{run_dir}/command.sh", backup_dir)
            self._run_dir = run_dir
        return self._run_dir, self._store

    async def _sh(self, script: str, *, timeout: float = 60.0, what: str) -> str:
        result = await self._transport.run(script, timeout=timeout)
        if not result.ok:
            detail = result.stderr.strip() or f"exit status {result.exit_status}"
            raise TransportError(f"{what} failed on {self._transport.description}: {detail}")
        return result.stdout

    # ------------------------------------------------------------------------------ deploy

    async def preview(self, config: ServerConfig) -> DeployPreview:
        _, store = await self._paths()
        return await store.preview(launch_script(config))

    async def deploy(self, config: ServerConfig) -> Deployment:
        _, store = await self._paths()
        return await store.deploy(launch_script(config))

    async def rollback(self) -> Deployment | None:
        _, store = await self._paths()
        return await store.rollback()

    async def deployed_hash(self) -> str | None:
        _, store = await self._paths()
        return await store.current_hash()

    async def running_hash(self) -> str | None:
        """sha256 of the script the live run was started from (None if nothing runs)."""
        run_dir, _ = await self._paths()
        info = await self._run_info()
        if info.run_id is None or not info.alive:
            return None
        data = await self._transport.read_file(f"{run_dir}/runs/{info.run_id}/command.sh")
        return None if data is None else sha256_text(data.decode("utf-8", "replace"))

    # --------------------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        await self.stop()
        run_dir, _ = await self._paths()
        script = f"""
set -e
if [ ! -f {shlex.quote(run_dir)}/command.sh ]; then
    echo "nothing deployed in {run_dir}: deploy first" >&2
    exit 3
fi
cd {shlex.quote(run_dir)}
id=$(date -u +%Y%m%dT%H%M%S)-$$
mkdir -p "runs/$id"
cp command.sh "runs/$id/command.sh"
: > "runs/$id/log"
printf '%s\\n' "$id" > current.tmp && mv current.tmp current
cd "runs/$id"
setsid sh -c {shlex.quote(_WRAPPER)} < /dev/null > /dev/null 2>&1 &
i=0
while [ ! -s pid ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
[ -s pid ] || {{ echo "the server did not start (no PID file in $PWD)" >&2; exit 4; }}
echo "$id $(cat pid)"
"""
        await self._sh(script, timeout=30, what="starting the server")

    async def _run_info(self) -> _RunInfo:
        run_dir, _ = await self._paths()
        script = f"""
cd {shlex.quote(run_dir)} 2>/dev/null || exit 0
id=$(cat current 2>/dev/null) || exit 0
d="runs/$id"
pid=$(cat "$d/pid" 2>/dev/null || true)
alive=0
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    st=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1)
    [ "$st" = Z ] || alive=1  # a zombie waiting for its reaper is not alive
fi
echo "$id"
echo "$pid"
echo "$alive"
cat "$d/exit" 2>/dev/null || echo
cat "$d/stopped" 2>/dev/null || echo
"""
        out = (await self._sh(script, what="reading the server status")).split("\n")
        if not out or not out[0]:
            return _RunInfo(None, None, False, None, None)
        fields = [*out, "", "", "", "", ""]
        return _RunInfo(
            run_id=fields[0],
            pid=_int_or_none(fields[1]),
            alive=fields[2] == "1",
            exit_code=_int_or_none(fields[3]),
            stopped=fields[4] or None,
        )

    async def status(self) -> ServiceStatus:
        info = await self._run_info()
        if info.run_id is None:
            return ServiceStatus(ServiceState.INACTIVE, detail="never started")
        exit_status: int | None = None
        sig: int | None = None
        if info.exit_code is not None:
            # sh reports death by signal N as 128+N.
            if info.exit_code > 128:
                sig = info.exit_code - 128
            else:
                exit_status = info.exit_code
        if info.exit_code is None and info.alive:
            return ServiceStatus(ServiceState.RUNNING, pid=info.pid, detail=f"run {info.run_id}")
        if info.stopped:
            return ServiceStatus(
                ServiceState.INACTIVE,
                pid=None,
                exit_status=exit_status,
                signal=sig if info.exit_code is not None else _SIGNALS.get(info.stopped),
                result="stopped",
                detail=f"run {info.run_id} stopped with {info.stopped}",
            )
        if info.exit_code is None:
            return ServiceStatus(
                ServiceState.EXITED,
                result="unknown",
                detail=f"run {info.run_id}: the server and its wrapper died without "
                "recording an exit status (killed from outside?)",
            )
        result = "success" if exit_status == 0 else ("signal" if sig else "exit-code")
        return ServiceStatus(
            ServiceState.EXITED if exit_status == 0 else ServiceState.FAILED,
            exit_status=exit_status,
            signal=sig,
            result=result,
            detail=f"run {info.run_id} exited with "
            + (f"signal {sig}" if sig else f"status {exit_status}"),
        )

    async def stop(self) -> None:
        run_dir, _ = await self._paths()
        grace_ticks = max(1, int(self._profile.stop_timeout * 10))
        script = f"""
cd {shlex.quote(run_dir)} 2>/dev/null || exit 0
id=$(cat current 2>/dev/null) || exit 0
d="runs/$id"
pid=$(cat "$d/pid" 2>/dev/null) || exit 0
kill -0 "-$pid" 2>/dev/null || exit 0
echo TERM > "$d/stopped"
kill -TERM "-$pid" 2>/dev/null || true
i=0
while kill -0 "-$pid" 2>/dev/null && [ $i -lt {grace_ticks} ]; do sleep 0.1; i=$((i+1)); done
if kill -0 "-$pid" 2>/dev/null; then
    echo KILL > "$d/stopped"
    kill -KILL "-$pid" 2>/dev/null || true
    i=0
    while kill -0 "-$pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
fi
"""
        await self._sh(script, timeout=self._profile.stop_timeout + 30, what="stopping the server")

    # -------------------------------------------------------------------------------- logs

    async def logs(self, *, after: str | None = None) -> AsyncIterator[LogRecord]:
        run_dir, _ = await self._paths()
        if after:
            run_id, _, offset_text = after.rpartition(":")
            offset = _int_or_none(offset_text)
            if not run_id or offset is None or offset < 0:
                raise ValueError(f"not a process-backend log cursor: {after!r}")
        else:
            info = await self._run_info()
            if info.run_id is None:
                return
            run_id, offset = info.run_id, 0
        folder = f"{run_dir}/runs/{run_id}"
        failures = 0
        while True:
            pid_data = await self._transport.read_file(f"{folder}/pid")
            pid = _int_or_none(pid_data.decode().strip()) if pid_data else None
            log = shlex.quote(f"{folder}/log")
            follow = f"-F -s 0.2 --pid={pid}" if pid else ""
            command = f"exec tail -c +{offset + 1} {follow} {log}"
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


_SIGNALS = {"TERM": 15, "KILL": 9}
