"""The docker backend: its exact commands and how it reads docker's real outputs, then (when a
Docker engine can start here) end to end against a real engine.

``data/docker/`` holds outputs recorded from Debian's docker.io 20.10 engine: ``docker
inspect`` of a running, an exited (status 1), a stopped (SIGKILL after the grace period)
and an OOM-killed container, the error for a missing one, and ``docker logs --timestamps``.
The replaying transport below answers docker commands from those files the way docker
does (``--since`` included) and carries everything else to the real local shell.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import httpx
import pytest

from specconsole.core.config.model import ServerConfig
from specconsole.core.plans.profile import ServiceKind, ServiceProfile
from specconsole.core.ports import CommandResult, LogRecord, PortForward, ServiceState
from specconsole.remote.docker import (
    DockerBackend,
    docker_run_argv,
    parse_docker_time,
    status_from_inspect,
)
from specconsole.remote.transport.local import LocalTransport
from tests.fixtures.dockerd import DockerEngine, docker_engine  # noqa: F401
from tests.remote.helpers import READY, counter_config, sim_config

DATA = Path(__file__).parent / "data" / "docker"
REPO = Path(__file__).resolve().parents[2]


def recorded(name: str) -> object:
    return json.loads((DATA / name).read_text())


# --------------------------------------------------------------------------------------------
# Recorded outputs
# --------------------------------------------------------------------------------------------


def test_inspect_running() -> None:
    status = status_from_inspect(recorded("inspect-running.json"))
    assert (status.state, status.pid, status.exit_status, status.oom_killed) == (
        ServiceState.RUNNING,
        5457,
        None,
        False,
    )


def test_inspect_exit_code() -> None:
    status = status_from_inspect(recorded("inspect-exit1.json"))
    assert (status.state, status.exit_status, status.signal, status.result) == (
        ServiceState.FAILED,
        1,
        None,
        "exit-code",
    )


def test_inspect_killed_after_grace() -> None:
    status = status_from_inspect(recorded("inspect-stopped.json"))
    assert (status.state, status.exit_status, status.signal) == (ServiceState.FAILED, None, 9)


def test_inspect_oom_killed() -> None:
    status = status_from_inspect(recorded("inspect-oomkilled.json"))
    assert (status.state, status.oom_killed, status.result, status.signal) == (
        ServiceState.FAILED,
        True,
        "oom-kill",
        9,
    )


def test_inspect_missing_container() -> None:
    assert (DATA / "inspect-missing.stdout").read_text().strip() == "[]"
    status = status_from_inspect(recorded("inspect-missing.stdout"))
    assert (status.state, status.result) == (ServiceState.INACTIVE, "not-found")


def test_docker_timestamps() -> None:
    assert parse_docker_time("2026-12-03T07:25:30.202588372Z") == pytest.approx(
        1796282730.202588372, abs=1e-6
    )
    assert parse_docker_time("0001-01-01T00:00:00Z") is None
    assert parse_docker_time("garbage") is None


def test_run_command_matches_the_issue() -> None:
    config = ServerConfig(model_path="/models/qwen", port=30000, env=(("HF_HOME", "/hf"),))
    argv = docker_run_argv(config, ServiceProfile(kind=ServiceKind.DOCKER))
    assert argv[:9] == [
        "docker",
        "run",
        "-d",
        "--name",
        "specconsole-sglang",
        "--gpus",
        "all",
        "--ipc=host",
        "-e",
    ]
    assert argv[9:13] == ["HF_HOME=/hf", "-p", "127.0.0.1:30000:30000", "lmsysorg/sglang:latest"]
    assert argv[13:16] == ["python3", "-m", "sglang.launch_server"]
    server = argv[16:]
    assert server[server.index("--host") + 1] == "0.0.0.0"  # reachable via the published port
    assert server[server.index("--model-path") + 1] == "/models/qwen"


class ReplayingDocker(LocalTransport):
    """The local shell, except ``docker`` commands are answered from recorded outputs."""

    def __init__(self, inspect_file: str) -> None:
        super().__init__()
        self.inspect_file = inspect_file
        self.commands: list[str] = []

    async def run(
        self,
        command: str,
        *,
        timeout: float | None = 60.0,
        sudo: bool = False,
        stdin: str | None = None,
    ) -> CommandResult:
        if command.startswith("docker "):
            self.commands.append(command)
            if command.startswith("docker inspect"):
                if self.inspect_file == "missing":
                    err = (DATA / "inspect-missing.stderr").read_text()
                    return CommandResult(command, 1, "[]\n", err)
                return CommandResult(command, 0, (DATA / self.inspect_file).read_text(), "")
            return CommandResult(command, 0, "", "")
        if command.startswith("sh ") and command.endswith("docker-run.sh"):
            script = (await super().run(f"tail -n 1 {command.split()[-1]}")).stdout.strip()
            self.commands.append(script)
            return CommandResult(command, 0, "0123abcd\n", "")
        return await super().run(command, timeout=timeout, sudo=sudo, stdin=stdin)

    async def stream(self, command: str, *, sudo: bool = False) -> AsyncIterator[str]:
        assert command.startswith("docker logs -f --timestamps"), command
        self.commands.append(command)
        words = command.split()
        since = words[words.index("--since") + 1] if "--since" in words else ""
        for line in (DATA / "logs-timestamps.txt").read_text().splitlines():
            if line.split(" ", 1)[0] >= since:  # docker keeps lines at or after --since
                yield line

    async def forward_local_port(
        self, remote_port: int, remote_host: str = "127.0.0.1"
    ) -> PortForward:
        raise AssertionError("not used")


@pytest.fixture
def replay(tmp_path: Path) -> Iterator[tuple[ReplayingDocker, DockerBackend]]:
    transport = ReplayingDocker("inspect-running.json")
    profile = ServiceProfile(
        kind=ServiceKind.DOCKER,
        run_dir=str(tmp_path / "run"),
        backup_dir=str(tmp_path / "backups"),
        stop_timeout=7,
    )
    yield transport, DockerBackend(transport, profile)


async def test_commands_sent(replay: tuple[ReplayingDocker, DockerBackend]) -> None:
    transport, backend = replay
    config = ServerConfig(model_path="/models/qwen")
    deployment = await backend.deploy(config)
    assert transport.commands == []  # deploy only writes the run script
    assert await backend.deployed_hash() == deployment.artifact_hash
    await backend.start()
    status = await backend.status()
    await backend.stop()
    run = " ".join(docker_run_argv(config, ServiceProfile(kind=ServiceKind.DOCKER)))
    assert transport.commands == [
        "docker rm -f specconsole-sglang",
        run,
        "docker inspect specconsole-sglang",
        "docker stop -t 7 specconsole-sglang",
        "docker rm -f specconsole-sglang",
    ]
    assert status.state is ServiceState.RUNNING


async def test_logs_and_exact_resume(replay: tuple[ReplayingDocker, DockerBackend]) -> None:
    transport, backend = replay
    records: list[LogRecord] = [r async for r in backend.logs()]
    assert [r.text for r in records] == ["to-stderr", "line 0", "line 1", "line 2"]
    assert all(r.source_time and r.source_time > 1.7e9 for r in records)
    resumed = [r.text async for r in backend.logs(after=records[1].cursor)]
    assert resumed == ["line 1", "line 2"]
    assert transport.commands[-1] == (
        "docker logs -f --timestamps --since 2026-12-03T07:25:30.202608157Z specconsole-sglang 2>&1"
    )


async def test_missing_container_status(tmp_path: Path) -> None:
    backend = DockerBackend(
        ReplayingDocker("missing"), ServiceProfile(kind=ServiceKind.DOCKER, run_dir=str(tmp_path))
    )
    assert (await backend.status()).result == "not-found"
    with pytest.raises(Exception, match="deploy first"):
        await backend.start()


# --------------------------------------------------------------------------------------------
# A real engine
# --------------------------------------------------------------------------------------------


@pytest.fixture
def make_real_docker(
    docker_engine: DockerEngine,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> Callable[[tuple[str, ...]], DockerBackend]:
    """Docker backends on the private engine; the checkout and Python mounted read-only."""
    monkeypatch.setenv("DOCKER_HOST", docker_engine.docker_host)
    python_home = Path(sys.base_prefix).resolve()

    def make(extra: tuple[str, ...] = ()) -> DockerBackend:
        profile = ServiceProfile(
            kind=ServiceKind.DOCKER,
            image=docker_engine.image,
            container=f"specconsole-test-{len(extra)}",
            docker_args=(
                "--network",
                "host",
                *extra,
                "-v",
                f"{REPO}:{REPO}:ro",
                "-v",
                f"{python_home}:{python_home}:ro",
            ),
            run_dir=str(tmp_path / f"run{len(extra)}"),
            stop_timeout=5,
        )
        return DockerBackend(LocalTransport(), profile)

    return make


@pytest.fixture
def real_docker(make_real_docker: Callable[[tuple[str, ...]], DockerBackend]) -> DockerBackend:
    return make_real_docker(())


@pytest.mark.slow
async def test_real_engine_start_logs_stop(real_docker: DockerBackend) -> None:
    config = sim_config()
    await real_docker.deploy(config)
    await real_docker.start()
    try:
        seen: list[str] = []
        logs = real_docker.logs()
        async with asyncio.timeout(60):
            async for record in logs:
                seen.append(record.text)
                if READY in record.text:
                    break
        await logs.aclose()  # type: ignore[attr-defined]
        status = await real_docker.status()
        assert status.state is ServiceState.RUNNING and status.pid
        assert await real_docker.running_hash() == await real_docker.deployed_hash()
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{config.port}") as client:
            assert (await client.get("/health", timeout=10)).status_code == 200
    finally:
        await real_docker.stop()
    assert (await real_docker.status()).result == "not-found"  # stopped and removed


@pytest.mark.slow
async def test_real_engine_exit_code_and_oom(
    real_docker: DockerBackend, make_real_docker: Callable[[tuple[str, ...]], DockerBackend]
) -> None:
    await real_docker.deploy(counter_config(3))
    await real_docker.start()
    async with asyncio.timeout(30):
        texts = [r.text async for r in real_docker.logs()]  # ends with the container
    assert texts == ["line 1", "line 2", "line 3"]
    status = await real_docker.status()
    assert (status.state, status.exit_status) == (ServiceState.EXITED, 0)

    hog = "x = []\nwhile True: x.append(bytearray(1 << 20))"
    limited = make_real_docker(("--memory", "64m", "--memory-swap", "64m"))
    await limited.deploy(
        ServerConfig(model_path="unused", launcher=f"python3 -c {shlex.quote(hog)}")
    )
    await limited.start()
    async with asyncio.timeout(30):
        while (status := await limited.status()).state is ServiceState.RUNNING:
            await asyncio.sleep(0.2)
    assert (status.state, status.oom_killed, status.result) == (
        ServiceState.FAILED,
        True,
        "oom-kill",
    )
    await limited.stop()
