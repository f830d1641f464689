"""The transport contract, checked on the local transport and over the real test sshd."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import stat
import time
from pathlib import Path

import pytest

from specconsole.core.plans.profile import HostProfile, TransportKind
from specconsole.core.ports import ConnectionLost, HostKeyRejected, Transport, TransportError
from specconsole.remote.transport.connection import ConnectionEvent
from specconsole.remote.transport.ssh import SshTransport
from tests.fixtures.lifecycle import free_port
from tests.fixtures.sshd import SshdServer
from tests.remote.helpers import ssh_profile


async def test_run_reports_status_and_output(transport: Transport) -> None:
    result = await transport.run("echo out; echo err >&2; exit 3")
    assert (result.exit_status, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.ok
    fed = await transport.run("cat", stdin="fed through stdin\n")
    assert fed.stdout == "fed through stdin\n"


async def test_run_times_out(transport: Transport) -> None:
    result = await transport.run("sleep 20", timeout=0.5)
    assert result.exit_status is None
    assert "timed out" in result.stderr


async def test_stream_yields_lines_as_they_come(transport: Transport) -> None:
    command = "for i in $(seq 1 20); do echo line$i; sleep 0.02; done"
    lines: list[str] = []
    async with asyncio.timeout(20):
        async for line in transport.stream(command):
            lines.append(line)
    assert lines == [f"line{i}" for i in range(1, 21)]


async def test_stream_applies_backpressure(transport: Transport, tmp_path: Path) -> None:
    # The producer writes a counter file per line; a slow consumer keeps it far behind.
    counter = tmp_path / "written"
    command = (
        f"i=0; while [ $i -lt 200000 ]; do i=$((i+1)); printf '%s\\n' "
        f'"$i-$(printf %0200d 0)"; [ $((i % 1000)) -eq 0 ] '
        f"&& echo $i > {counter}.new && mv {counter}.new {counter}; done"  # never read half-written
    )
    stream = transport.stream(command)
    async with asyncio.timeout(30):
        first = await anext(stream)
        await asyncio.sleep(1.5)
        written = int(counter.read_text()) if counter.exists() else 0
        await stream.aclose()
    assert first.startswith("1-")
    assert written < 100000, f"producer ran {written} lines ahead of a stalled consumer"


async def test_stream_keeps_long_lines_and_a_last_line_without_newline(
    transport: Transport,
) -> None:
    command = "head -c 3000000 /dev/zero | tr '\\0' x; echo; printf tail"
    lengths: list[int] = []
    last = ""
    async with asyncio.timeout(30):
        async for line in transport.stream(command):
            lengths.append(len(line))
            last = line
    assert sum(lengths[:-1]) == 3_000_000  # nothing lost (local splits beyond 1 MiB)
    assert last == "tail"


async def test_stream_failure_raises_with_stderr(transport: Transport) -> None:
    with pytest.raises(TransportError, match="exit status 4: nope"):
        async for _ in transport.stream("echo one; echo nope >&2; exit 4"):
            pass


async def test_upload_is_atomic_and_keeps_mode(transport: Transport, tmp_path: Path) -> None:
    target = tmp_path / "sub" / "unit.service"
    await transport.upload(b"first\n", str(target), mode=0o640)
    assert target.read_bytes() == b"first\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    inode = target.stat().st_ino
    await transport.upload(b"second\x00\xff\n", str(target))
    assert target.read_bytes() == b"second\x00\xff\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # kept
    assert target.stat().st_ino != inode  # replaced by rename, never rewritten in place
    assert sorted(p.name for p in target.parent.iterdir()) == ["unit.service"]
    assert await transport.read_file(str(target)) == b"second\x00\xff\n"
    assert await transport.read_file(str(tmp_path / "absent")) is None


async def test_upload_failure_changes_nothing(transport: Transport, tmp_path: Path) -> None:
    target = tmp_path / "blocked" / "unit.service"
    target.parent.mkdir()
    target.write_text("original\n")
    # A path below a regular file cannot be created even by root.
    with pytest.raises(TransportError, match=r"upload to .* failed: .*nothing was changed"):
        await transport.upload(b"new\n", str(target / "x"))
    assert target.read_text() == "original\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["unit.service"]


async def test_forward_reaches_the_box_loopback(transport: Transport) -> None:
    server = await asyncio.start_server(_hello, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        forward = await transport.forward_local_port(port)
        reader, writer = await asyncio.open_connection("127.0.0.1", forward.local_port)
        assert await reader.readline() == b"hello\n"
        writer.close()
    finally:
        server.close()


async def _hello(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"hello\n")
    await writer.drain()
    writer.close()


@pytest.mark.ssh
async def test_unknown_or_changed_host_key_is_refused(sshd: SshdServer, tmp_path: Path) -> None:
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    marker = tmp_path / "should-not-exist"
    for known in (sshd.wrong_known_hosts, empty):
        ssh = SshTransport(ssh_profile(sshd, known_hosts=str(known)))
        with pytest.raises(HostKeyRejected, match="host key is not trusted"):
            await ssh.run(f"touch {marker}")
        with pytest.raises(HostKeyRejected):
            await ssh.upload(b"x", str(marker))  # refused again, never accepted later
        await ssh.close()
    assert not marker.exists()


@pytest.mark.ssh
async def test_alias_from_ssh_config(sshd: SshdServer) -> None:
    profile = HostProfile(
        transport=TransportKind.SSH,
        alias=sshd.host_alias,
        ssh_config=str(sshd.ssh_config),
        use_agent=False,
    )
    ssh = SshTransport(profile)
    try:
        result = await ssh.run("echo $USER")
        assert result.stdout.strip() == sshd.username
        assert sshd.host_alias in ssh.description
    finally:
        await ssh.close()


@pytest.mark.ssh
async def test_refused_connection_is_a_clear_error(sshd: SshdServer) -> None:
    port = free_port()  # nothing listens there now
    ssh = SshTransport(ssh_profile(sshd, port=port, connect_timeout=3.0))
    with pytest.raises(ConnectionLost, match="cannot connect to"):
        await ssh.run("true")
    await ssh.close()


def cut(transport: SshTransport) -> None:
    """Close the SSH socket under the transport, as a dropped link would."""
    assert transport.connection is not None
    sock = transport.connection.get_extra_info("socket")
    sock.shutdown(socket.SHUT_RDWR)


@pytest.mark.ssh
async def test_reconnects_after_a_drop(sshd: SshdServer) -> None:
    events: list[ConnectionEvent] = []
    ssh = SshTransport(ssh_profile(sshd), on_event=lambda e, _d: events.append(e))
    try:
        server = await asyncio.start_server(_hello, "127.0.0.1", 0)
        forward = await ssh.forward_local_port(server.sockets[0].getsockname()[1])
        first = await ssh.run("echo $$")
        cut(ssh)
        await asyncio.sleep(0.2)
        second = await ssh.run("echo again")
        assert second.stdout == "again\n" and first.ok
        assert events == [
            ConnectionEvent.CONNECTED,
            ConnectionEvent.LOST,
            ConnectionEvent.RECONNECTED,
        ]
        # The forward came back on the same local port.
        reader, writer = await asyncio.open_connection("127.0.0.1", forward.local_port)
        assert await reader.readline() == b"hello\n"
        writer.close()
        server.close()
    finally:
        await ssh.close()


@pytest.mark.ssh
async def test_drop_mid_stream_raises_connection_lost(sshd: SshdServer) -> None:
    ssh = SshTransport(ssh_profile(sshd))
    try:
        lines: list[str] = []
        with pytest.raises(ConnectionLost):
            async with asyncio.timeout(20):
                async for line in ssh.stream("for i in $(seq 1 100); do echo $i; sleep 0.05; done"):
                    lines.append(line)
                    if len(lines) == 3:
                        cut(ssh)
        assert lines[:3] == ["1", "2", "3"]
        assert (await ssh.run("echo back")).stdout == "back\n"
    finally:
        await ssh.close()


class TcpRelay:
    """A loopback TCP relay in front of the test sshd: the 'network' between us and the box.

    ``close()`` takes the box off the network (open links cut, new ones refused);
    ``blackhole = True`` silently drops every byte, like a link that died without a FIN."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.server: asyncio.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []
        self.blackhole = False

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.writers += [writer, up_writer]

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await src.read(65536):
                    if not self.blackhole:
                        dst.write(data)
                        await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.writers:
            writer.transport.abort()
        await self.server.wait_closed()


@pytest.mark.ssh
async def test_reconnect_gives_up_with_connection_lost(sshd: SshdServer, tmp_path: Path) -> None:
    relay = TcpRelay(sshd.port)
    port = await relay.start()
    known = tmp_path / "known_hosts"
    key = sshd.known_hosts.read_text().split(" ", 1)[1]
    known.write_text(f"[127.0.0.1]:{port} {key}")
    events: list[ConnectionEvent] = []
    ssh = SshTransport(
        ssh_profile(
            sshd,
            port=port,
            known_hosts=str(known),
            reconnect_attempts=3,
            reconnect_max_delay=0.2,
        ),
        on_event=lambda e, _d: events.append(e),
    )
    try:
        assert (await ssh.run("echo via relay")).stdout == "via relay\n"
        await relay.close()  # the box drops off the network for good
        await asyncio.sleep(0.2)
        with pytest.raises(ConnectionLost, match="3 reconnect attempts failed"):
            await ssh.run("true")
        assert events == [
            ConnectionEvent.CONNECTED,
            ConnectionEvent.LOST,
            ConnectionEvent.FAILED,
        ]
    finally:
        await ssh.close()


@pytest.mark.ssh
async def test_proxy_jump_from_ssh_config(sshd: SshdServer, tmp_path: Path) -> None:
    closed_port = free_port()  # nothing listens there now
    common = (
        f"  HostName 127.0.0.1\n  User {sshd.username}\n  IdentityFile {sshd.client_key}\n"
        f"  UserKnownHostsFile {sshd.known_hosts}\n"
    )
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host jump\n{common}  Port {sshd.port}\n\n"
        f"Host deadjump\n{common}  Port {closed_port}\n\n"
        f"Host via-jump\n{common}  Port {sshd.port}\n  ProxyJump jump\n\n"
        f"Host via-deadjump\n{common}  Port {sshd.port}\n  ProxyJump deadjump\n"
    )

    def profile(alias: str) -> HostProfile:
        return HostProfile(
            transport=TransportKind.SSH,
            alias=alias,
            ssh_config=str(config),
            use_agent=False,
            connect_timeout=5.0,
        )

    ssh = SshTransport(profile("via-jump"))
    try:
        assert (await ssh.run("echo through")).stdout == "through\n"
    finally:
        await ssh.close()
    # The same target behind a jump host that is down cannot be reached: the jump is used.
    dead = SshTransport(profile("via-deadjump"))
    with pytest.raises(ConnectionLost, match="cannot connect"):
        await dead.run("true")
    await dead.close()


@pytest.mark.ssh
async def test_keepalives_end_a_silent_hang(sshd: SshdServer, tmp_path: Path) -> None:
    relay = TcpRelay(sshd.port)
    port = await relay.start()
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} " + sshd.known_hosts.read_text().split(" ", 1)[1])
    events: list[ConnectionEvent] = []
    ssh = SshTransport(
        ssh_profile(
            sshd,
            port=port,
            known_hosts=str(known),
            keepalive_interval=0.5,
            keepalive_count_max=2,
            connect_timeout=2.0,
            reconnect_max_delay=0.5,
        ),
        on_event=lambda e, _d: events.append(e),
    )
    try:
        stream = ssh.stream("echo started; sleep 30; echo never")
        assert await anext(stream) == "started"
        relay.blackhole = True  # the link goes silent: no error, no FIN
        started = time.monotonic()
        with pytest.raises(ConnectionLost):
            async with asyncio.timeout(20):
                await anext(stream)
        assert time.monotonic() - started < 10  # noticed by keepalives, not by the command
        relay.blackhole = False
        assert (await ssh.run("echo back")).stdout == "back\n"
        assert events == [
            ConnectionEvent.CONNECTED,
            ConnectionEvent.LOST,
            ConnectionEvent.RECONNECTED,
        ]
    finally:
        await ssh.close()
        await relay.close()
