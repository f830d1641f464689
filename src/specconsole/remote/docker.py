"""The docker service backend: the server in a container started from the SGLang image.

The deployed artifact is the exact ``docker run`` command, kept on the box as a script next
to its sha256 (so it can be diffed, backed up, rolled back and recognised after a console
restart, like the other backends). The server's own flags come from
:func:`specconsole.core.config.render.to_argv`; this module adds only docker's: ``-d``, the name,
the profile's ``docker_args`` (default ``--gpus all --ipc=host``), ``-e`` per environment
variable and ``-p`` publishing the server port on the box's loopback. Inside the container
the server must listen on all its interfaces for the published port to reach it, so the
rendered ``--host`` becomes ``0.0.0.0`` there; the port is still only reachable from the
box itself.

Status comes from ``docker inspect`` (``State.Status``, ``ExitCode``, ``OOMKilled``), logs
from ``docker logs -f --timestamps`` (the timestamp is both the line's source time and the
resume cursor). ``stop`` stops (TERM, then KILL after the grace period) and removes the
container; ``start`` removes any leftover one first.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from dataclasses import replace
from datetime import datetime
from typing import Any

from specconsole.core.config.model import ServerConfig
from specconsole.core.config.render import to_argv
from specconsole.core.plans.profile import ServiceProfile, for_engine, named
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
from specconsole.remote.shell import clean_line, expand_home
from specconsole.remote.sidefiles import folder_for, install, placed, side_diff, side_files

_RFC3339 = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$")

_DOCKER_STATES = {
    "created": ServiceState.STARTING,
    "restarting": ServiceState.STARTING,
    "running": ServiceState.RUNNING,
    "paused": ServiceState.RUNNING,
    "removing": ServiceState.EXITED,
    "exited": ServiceState.EXITED,
    "dead": ServiceState.FAILED,
}


def uses_host_network(docker_args: tuple[str, ...]) -> bool:
    """Whether ``docker_args`` put the container on the box's own network stack."""
    joined = " ".join(docker_args)
    return any(f in joined for f in ("--network host", "--network=host", "--net=host"))


def docker_run_argv(config: ServerConfig, profile: ServiceProfile) -> list[str]:
    """``docker run`` argv for ``config`` (the server part rendered by the core).

    With the default bridge network the server listens on all of the container's interfaces
    and the port is published on the box's loopback only; with ``--network host`` the
    server's own ``--host`` applies and nothing is published. Names the ``[service]`` leaves
    to the engine are ``config``'s engine's.
    """
    profile = for_engine(profile, config.engine)
    host_network = uses_host_network(profile.docker_args)
    inside = config if host_network else replace(config, host="0.0.0.0")
    argv = ["docker", "run", "-d", "--name", profile.container, *profile.docker_args]
    for name, value in config.env:
        argv += ["-e", f"{name}={value}"]
    if config.working_directory:
        argv += ["-w", config.working_directory]
    if not host_network:
        argv += ["-p", f"127.0.0.1:{config.port}:{config.port}"]
    if side_files(config) and config.side_dir:  # the adaptive config the flags name
        argv += ["-v", f"{config.side_dir}:{config.side_dir}:ro"]
    argv += [profile.image, *to_argv(inside)]
    return argv


def render_run_script(config: ServerConfig, profile: ServiceProfile) -> str:
    """The docker backend's artifact: a script holding the exact ``docker run`` command."""
    return (
        "#!/bin/sh\n# Deployed by specconsole (docker backend).\n"
        + shlex.join(docker_run_argv(config, profile))
        + "\n"
    )


def parse_docker_time(text: str) -> float | None:
    """RFC 3339 with nanoseconds (docker's format) → epoch seconds; None if unset/invalid."""
    match = _RFC3339.match(text.strip())
    if match is None or match.group(1).startswith("0001-"):
        return None
    base, fraction, zone = match.groups()
    try:
        moment = datetime.fromisoformat(base + ("+00:00" if zone == "Z" else zone))
    except ValueError:
        return None
    return moment.timestamp() + (float(fraction) if fraction else 0.0)


def status_from_inspect(data: Any) -> ServiceStatus:
    """``docker inspect NAME`` JSON (a one-element list) → :class:`ServiceStatus`."""
    if isinstance(data, list):
        data = data[0] if data else None
    if not isinstance(data, Mapping) or not isinstance(data.get("State"), Mapping):
        return ServiceStatus(ServiceState.INACTIVE, result="not-found", detail="no container")
    state: Mapping[str, Any] = data["State"]
    status = str(state.get("Status", ""))
    coarse = _DOCKER_STATES.get(status, ServiceState.UNKNOWN)
    exit_code = state.get("ExitCode")
    oom = bool(state.get("OOMKilled"))
    running = coarse in (ServiceState.RUNNING, ServiceState.STARTING)
    if coarse is ServiceState.EXITED and (exit_code not in (0, None) or oom):
        coarse = ServiceState.FAILED
    signal = None
    exit_status = None if running else exit_code
    if isinstance(exit_code, int) and exit_code > 128 and not running:
        signal, exit_status = exit_code - 128, None  # docker reports death by signal N as 128+N
    error = str(state.get("Error") or "")
    return ServiceStatus(
        state=coarse,
        pid=(state.get("Pid") or None) if running else None,
        exit_status=exit_status,
        signal=signal,
        result=_result(running=running, oom=oom, exit_code=exit_code, signal=signal),
        restarts=data.get("RestartCount"),
        oom_killed=oom,
        detail=f"{status}{': ' + error if error else ''}",
    )


def _result(*, running: bool, oom: bool, exit_code: object, signal: int | None) -> str | None:
    if oom:
        return "oom-kill"
    if running:
        return None
    if signal:
        return "signal"
    return "success" if exit_code == 0 else "exit-code"


def split_timestamped(line: str) -> tuple[str, str]:
    """``docker logs --timestamps`` line → (timestamp, text)."""
    stamp, sep, text = line.partition(" ")
    if not sep or not stamp[:4].isdigit():
        return "", line
    return stamp, text


class DockerBackend:
    """:class:`specconsole.core.ports.ServiceBackend` running the server in a container."""

    def __init__(self, transport: Transport, profile: ServiceProfile) -> None:
        profile = named(profile)
        self._transport = transport
        self._profile = profile
        self._sudo = profile.uses_sudo()
        self._store: ArtifactStore | None = None

    @property
    def description(self) -> str:
        return f"docker container {self._profile.container} on {self._transport.description}"

    async def _artifacts(self) -> ArtifactStore:
        if self._store is None:
            run_dir = await expand_home(self._transport, self._profile.run_dir.rstrip("/"))
            backups = await expand_home(self._transport, self._profile.resolved_backup_dir())
            self._store = ArtifactStore(
                self._transport, f"{run_dir}/docker-run.sh", backups, mode=0o600
            )  # 0600: its -e arguments may hold secrets
        return self._store

    @property
    def _name(self) -> str:
        return shlex.quote(self._profile.container)

    async def side_dir(self) -> str:
        """Where a configuration's side files go (mounted read-only at the same path)."""
        store = await self._artifacts()
        return folder_for(store.path.rsplit("/", 1)[0])

    async def preview(self, config: ServerConfig) -> DeployPreview:
        config = placed(config, await self.side_dir())
        store = await self._artifacts()
        preview = await store.preview(render_run_script(config, self._profile))
        files = await side_diff(self._transport, config, sudo=self._sudo)
        return replace(preview, diff=preview.diff + files) if files else preview

    async def deploy(self, config: ServerConfig) -> Deployment:
        config = placed(config, await self.side_dir())
        await install(self._transport, config, sudo=self._sudo)
        return await (await self._artifacts()).deploy(render_run_script(config, self._profile))

    async def rollback(self) -> Deployment | None:
        return await (await self._artifacts()).rollback()

    async def deployed_hash(self) -> str | None:
        return await (await self._artifacts()).current_hash()

    async def start(self) -> None:
        store = await self._artifacts()
        if await store.current() is None:
            raise TransportError(f"nothing deployed at {store.path}: deploy first")
        await self._remove()
        result = await self._transport.run(
            f"sh {shlex.quote(store.path)}", timeout=600, sudo=self._sudo
        )
        if not result.ok:
            raise TransportError(
                f"docker run failed on {self._transport.description}: {result.stderr.strip()}"
            )
        await self._transport.upload(
            (await self.deployed_hash() or "").encode() + b"\n", self._started_path(store)
        )

    @staticmethod
    def _started_path(store: ArtifactStore) -> str:
        return store.path.rsplit("/", 1)[0] + "/started.sha256"

    async def running_hash(self) -> str | None:
        """sha256 of the script the live container was started from (None if none runs)."""
        if (await self.status()).state not in (ServiceState.RUNNING, ServiceState.STARTING):
            return None
        data = await self._transport.read_file(self._started_path(await self._artifacts()))
        return data.decode().strip() or None if data else None

    async def _remove(self) -> None:
        result = await self._transport.run(
            f"docker rm -f {self._name}", timeout=120, sudo=self._sudo
        )
        if not result.ok and "No such container" not in result.stderr:
            raise TransportError(f"docker rm -f {self._profile.container}: {result.stderr}")

    async def stop(self) -> None:
        timeout = int(self._profile.stop_timeout)
        result = await self._transport.run(
            f"docker stop -t {timeout} {self._name}", timeout=timeout + 60, sudo=self._sudo
        )
        if not result.ok and "No such container" not in result.stderr:
            raise TransportError(f"docker stop {self._profile.container}: {result.stderr}")
        await self._remove()

    async def status(self) -> ServiceStatus:
        result = await self._transport.run(
            f"docker inspect {self._name}", timeout=60, sudo=self._sudo
        )
        if not result.ok:
            if "No such object" in result.stderr or "No such container" in result.stderr:
                return status_from_inspect([])
            raise TransportError(f"docker inspect {self._profile.container}: {result.stderr}")
        try:
            return status_from_inspect(json.loads(result.stdout))
        except (ValueError, RecursionError) as exc:
            raise TransportError(
                f"docker inspect returned something that is not JSON: {exc}"
            ) from None

    async def logs(self, *, after: str | None = None) -> AsyncIterator[LogRecord]:
        since, seen_at_since = "", 0
        if after:
            since, _, count = after.rpartition("#")
            if not since or not count.isdigit():
                raise ValueError(f"not a docker-backend log cursor: {after!r}")
            seen_at_since = int(count)
        failures = 0
        while True:
            since_arg = f" --since {shlex.quote(since)}" if since else ""
            command = f"docker logs -f --timestamps{since_arg} {self._name} 2>&1"
            skip = seen_at_since if since else 0
            try:
                async with aclosing(self._transport.stream(command, sudo=self._sudo)) as lines:
                    async for raw in lines:
                        failures = 0
                        stamp, text = split_timestamped(clean_line(raw))
                        if since and stamp == since and skip > 0:
                            skip -= 1  # already delivered before the drop
                            continue
                        if stamp and stamp == since:
                            seen_at_since += 1
                        elif stamp:
                            since, seen_at_since = stamp, 1
                        yield LogRecord(
                            text=text,
                            source_time=parse_docker_time(stamp) if stamp else None,
                            cursor=f"{since}#{seen_at_since}" if since else None,
                        )
                return
            except ConnectionLost:
                failures += 1
                if failures > 1:
                    raise
