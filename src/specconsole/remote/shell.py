"""Shell snippets and error mapping shared by the SSH and local transports.

Both transports carry the same operations over a POSIX shell on the box — ``sudo -n``
wrapping, atomic uploads (temp name in the same folder, keep the mode, then ``mv``), file
reads — so the snippets live here once and each transport only decides how a command string
reaches ``sh``. Doing uploads through the shell (not SFTP) is deliberate: the same code path
works with ``sudo`` (root-owned unit folders) and over the local transport, and base64 on
stdin keeps any bytes intact.
"""

from __future__ import annotations

import base64
import re
import shlex
import weakref

from specconsole.core.ports import CommandResult, SudoWouldPrompt, Transport, TransportError

ABSENT_MARKER = "specconsole:absent"
"""Printed by the read snippet when the file does not exist (base64 never contains ':')."""

_SUDO_PROMPT = re.compile(
    r"sudo: (a password is required|a terminal is required|sorry, you must have a tty)",
)
_SUDO_DENIED = re.compile(r"is not in the sudoers file|is not allowed to run sudo|may not run sudo")


def wrap_sudo(command: str, sudo: bool) -> str:
    """``command`` run through ``sudo -n sh -c`` when ``sudo`` (never prompts)."""
    if not sudo:
        return command
    return f"sudo -n -- sh -c {shlex.quote(command)}"


def command_name(command: str, limit: int = 72) -> str:
    """A command as a message names it: its first line, cut at a word (never mid-word)
    with ``…`` when longer than ``limit``."""
    line = command.strip().split("\n", 1)[0]
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0]
    return f"{cut} …"


def check_sudo(result: CommandResult, *, user: str, what: str) -> None:
    """Raise a clear error when ``sudo -n`` refused (password needed, not allowed, missing)."""
    if result.ok:
        return
    if _SUDO_PROMPT.search(result.stderr):
        raise SudoWouldPrompt(
            f"{what}: sudo would ask {user!r} for a password. Allow it without one for this "
            f"account (a sudoers line like '{user} ALL=(ALL) NOPASSWD: ALL', or limited to "
            "systemctl/journalctl), log in as root, or set [service] sudo = false "
            "(only for --user units, processes, or docker without sudo)."
        )
    if _SUDO_DENIED.search(result.stderr):
        raise TransportError(
            f"{what}: {user!r} may not use sudo on the box ({result.stderr.strip()}). "
            "Grant it in sudoers or use an account that may."
        )
    if result.exit_status == 127 and "sudo" in result.stderr and "not found" in result.stderr:
        raise TransportError(f"{what}: sudo is not installed on the box; log in as root instead")


def upload_script(remote_path: str, mode: int | None) -> str:
    """Shell that writes base64 from stdin to ``remote_path`` atomically.

    The temp file sits in the same folder (so ``mv`` is an atomic rename), gets the old
    file's mode (or ``mode``), and is removed if anything fails; the target is untouched
    until the final rename.
    """
    path = shlex.quote(remote_path)
    mode_line = (
        f"mode={mode:o}"
        if mode is not None
        else 'if [ -e "$target" ]; then mode=$(stat -c %a -- "$target"); else mode=644; fi'
    )
    return "\n".join(
        [
            "set -e",
            f"target={path}",
            'dir=$(dirname -- "$target")',
            'tmp="$dir/.$(basename -- "$target").specconsole-tmp.$$"',
            'mkdir -p -- "$dir"',
            mode_line,
            "umask 077",  # the temp file is never readable by others, even before chmod
            "trap 'rm -f -- \"$tmp\"' EXIT",
            'base64 -d > "$tmp"',
            'chmod "$mode" -- "$tmp"',
            'mv -f -- "$tmp" "$target"',
            "trap - EXIT",
        ]
    )


def upload_stdin(data: bytes) -> str:
    """The stdin text for :func:`upload_script`."""
    return base64.encodebytes(data).decode("ascii")


def read_script(remote_path: str) -> str:
    """Shell that prints the file as base64, or :data:`ABSENT_MARKER` if it does not exist."""
    path = shlex.quote(remote_path)
    return f"if [ ! -e {path} ]; then echo {ABSENT_MARKER}; else base64 -- {path}; fi"


def decode_read(result: CommandResult, remote_path: str) -> bytes | None:
    """Bytes from :func:`read_script`'s output; raises with the box's reason on failure."""
    if not result.ok:
        raise TransportError(
            f"cannot read {remote_path} on the box: {result.stderr.strip() or 'unknown error'}"
        )
    if result.stdout.strip() == ABSENT_MARKER:
        return None
    return base64.b64decode(result.stdout)


def upload_error(result: CommandResult, remote_path: str) -> TransportError:
    """A clear error for a failed upload (the box is unchanged: only the temp was touched)."""
    reason = result.stderr.strip() or f"exit status {result.exit_status}"
    hint = ""
    if "Permission denied" in reason or "Read-only file system" in reason:
        hint = (
            " — the login user may not write there; use a folder it owns, or enable sudo "
            "([service] sudo = true) for system paths"
        )
    return TransportError(f"upload to {remote_path} failed: {reason}{hint}; nothing was changed")


_homes: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()


async def expand_home(transport: Transport, path: str) -> str:
    """``~/x`` → the login user's home on the box (asked once per transport)."""
    if not (path == "~" or path.startswith("~/")):
        return path
    home = _homes.get(transport)
    if home is None:
        result = await transport.run('printf %s "$HOME"', timeout=30)
        if not result.ok or not result.stdout.startswith("/"):
            raise TransportError(f"cannot find the home folder on the box: {result.stderr}")
        home = result.stdout
        _homes[transport] = home
    return home + path[1:]


async def upload_via_shell(
    transport: Transport, data: bytes, remote_path: str, *, mode: int | None, sudo: bool
) -> None:
    """Atomic upload through ``transport.run`` (shared by both transports)."""
    result = await transport.run(
        upload_script(remote_path, mode), timeout=120, sudo=sudo, stdin=upload_stdin(data)
    )
    if not result.ok:
        raise upload_error(result, remote_path)


async def read_via_shell(transport: Transport, remote_path: str, *, sudo: bool) -> bytes | None:
    """File bytes through ``transport.run`` (shared by both transports)."""
    result = await transport.run(read_script(remote_path), timeout=120, sudo=sudo)
    return decode_read(result, remote_path)


class ShellFiles:
    """``upload`` and ``read_file`` of both transports: the shell snippets above, carried by
    the transport's own ``run`` (a mixin, so each transport only implements ``run``)."""

    async def upload(
        self: Transport,
        data: bytes,
        remote_path: str,
        *,
        mode: int | None = None,
        sudo: bool = False,
    ) -> None:
        await upload_via_shell(self, data, remote_path, mode=mode, sudo=sudo)

    async def read_file(self: Transport, remote_path: str, *, sudo: bool = False) -> bytes | None:
        return await read_via_shell(self, remote_path, sudo=sudo)


def check_stream_end(
    command: str, status: int | None, stderr: str, *, sudo_user: str | None
) -> None:
    """A streamed command has ended: sudo's refusal (``sudo_user`` given when it ran through
    sudo) or an exit with a positive status is an error. No status or a signal is not: the
    stream was closed by its consumer."""
    result = CommandResult(command, status, "", stderr)
    if sudo_user is not None:
        check_sudo(result, user=sudo_user, what=command_name(command))
    if status is not None and status > 0:
        raise TransportError(
            f"`{command[:120]}` ended with exit status {status}: {result.stderr.strip()}"
        )


def clean_line(raw: str) -> str:
    """A streamed line as text: drop the newline and a CR, make undecodable bytes visible."""
    line = raw[:-1] if raw.endswith("\n") else raw
    if line.endswith("\r"):
        line = line[:-1]
    return line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
