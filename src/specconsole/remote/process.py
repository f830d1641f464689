"""The plain-process service backend: the server as a detached process with a PID file and
one log file per run.

For boxes without systemd or root, for the demo and for the tests. Why it is built this way:

* The deployed artifact is a small launch script (``command.sh``: working directory,
  environment, then ``exec`` of the command line rendered by :mod:`specconsole.core.config.render`).
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

from specconsole.core.config.model import ServerConfig
from specconsole.core.launch.jobscript import launch_lines
from specconsole.core.ports import LogRecord, ServiceState, ServiceStatus
from specconsole.remote.scripted import ScriptedBackend, parse_cursor

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


class ProcessBackend(ScriptedBackend):
    """:class:`specconsole.core.ports.ServiceBackend` running the server as a plain process."""

    ARTIFACT = "command.sh"

    @property
    def description(self) -> str:
        return f"process in {self._profile.run_dir} on {self._transport.description}"

    async def render(self, config: ServerConfig) -> str:
        return launch_script(config)

    async def running_hash(self) -> str | None:
        """sha256 of the script the live run was started from (None if nothing runs)."""
        run_dir, _ = await self._paths()
        info = await self._run_info()
        if info.run_id is None or not info.alive:
            return None
        return await self._script_hash(f"{run_dir}/runs/{info.run_id}/command.sh")

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
            run_id, offset = parse_cursor(after, "process")
        else:
            info = await self._run_info()
            if info.run_id is None:
                return
            run_id, offset = info.run_id, 0
        folder = f"{run_dir}/runs/{run_id}"
        pid_data = await self._transport.read_file(f"{folder}/pid")
        pid = _int_or_none(pid_data.decode().strip()) if pid_data else None
        log = shlex.quote(f"{folder}/log")
        follow = f"-F -s 0.2 --pid={pid}" if pid else ""
        async with aclosing(
            self._follow(run_id, offset, lambda at: f"exec tail -c +{at + 1} {follow} {log}")
        ) as records:
            async for record in records:
                yield record


_SIGNALS = {"TERM": 15, "KILL": 9}
