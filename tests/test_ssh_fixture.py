"""Proves the SSH test fixture is a real OpenSSH server that verifies host keys.

asyncssh connects with host-key checking against the fixture's known_hosts, runs a command,
streams a long command's output line by line, uploads a file by SFTP and forwards a local
port to an HTTP server on the "remote" loopback; a wrong or empty known_hosts is refused.
"""

from __future__ import annotations

import asyncio
import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import httpx
import pytest

from tests.fixtures.sshd import SshdServer

pytestmark = pytest.mark.ssh


@pytest.fixture
def loopback_http_server() -> Iterator[int]:
    """A plain HTTP server on 127.0.0.1 (the "remote" box's loopback), stopped afterwards."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"hello from the box\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


async def test_runs_a_command_with_verified_host_key(sshd: SshdServer) -> None:
    async with asyncssh.connect(**sshd.asyncssh_options()) as conn:
        result = await conn.run("echo hello; echo oops >&2; exit 3", timeout=10)
    assert result.stdout == "hello\n"
    assert result.stderr == "oops\n"
    assert result.exit_status == 3


async def test_streams_a_long_command_line_by_line(sshd: SshdServer) -> None:
    command = "for i in $(seq 1 40); do echo line$i; sleep 0.02; done"
    async with asyncssh.connect(**sshd.asyncssh_options()) as conn:
        process = await conn.create_process(command)
        arrivals: list[tuple[str, float]] = []
        async with asyncio.timeout(20):
            async for line in process.stdout:
                if not line:  # asyncssh yields '' at EOF
                    break
                arrivals.append((line.rstrip("\n"), time.monotonic()))
        await process.wait()
    assert [text for text, _ in arrivals] == [f"line{i}" for i in range(1, 41)]
    # Lines arrive as they are printed, not all at once when the command ends.
    assert arrivals[-1][1] - arrivals[0][1] > 0.4


async def test_uploads_a_file_by_sftp(sshd: SshdServer, tmp_path: Path) -> None:
    target = tmp_path / "uploaded.txt"
    async with asyncssh.connect(**sshd.asyncssh_options()) as conn:
        async with (
            conn.start_sftp_client() as sftp,
            sftp.open(str(target), "w") as remote_file,
        ):
            await remote_file.write("unit file body\n")
        result = await conn.run(f"cat {target}", check=True, timeout=10)
    assert result.stdout == "unit file body\n"
    assert target.read_text() == "unit file body\n"


async def test_forwards_a_local_port_to_the_remote_loopback(
    sshd: SshdServer, loopback_http_server: int
) -> None:
    async with asyncssh.connect(**sshd.asyncssh_options()) as conn:
        listener = await conn.forward_local_port("127.0.0.1", 0, "127.0.0.1", loopback_http_server)
        try:
            local_port = listener.get_port()
            assert local_port != loopback_http_server
            async with httpx.AsyncClient(timeout=10) as client:
                response = await client.get(f"http://127.0.0.1:{local_port}/")
        finally:
            listener.close()
    assert response.status_code == 200
    assert response.text == "hello from the box\n"


async def test_wrong_known_hosts_entry_is_refused(sshd: SshdServer) -> None:
    with pytest.raises(asyncssh.HostKeyNotVerifiable):
        async with asyncssh.connect(**sshd.asyncssh_options(wrong_host_key=True)):
            pass


async def test_empty_known_hosts_is_refused(sshd: SshdServer, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    options = sshd.asyncssh_options()
    options["known_hosts"] = str(empty)
    with pytest.raises(asyncssh.HostKeyNotVerifiable):
        async with asyncssh.connect(**options):
            pass
