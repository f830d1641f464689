"""The session lock: one process at a time writes a session folder.

Why: two ``resume`` of one session at once wrote two records with the same index, removed each
other's temp files and crashed each other's servers. ``sweep --session``, ``resume`` and the
console take this lock before touching the folder and hold it until they exit.

How: an advisory ``flock`` on ``SESSION/lock``, a small file that also holds the owner's PID,
host and start time so the refusal can say who has it. The kernel drops a ``flock`` when its
process dies, so a lock left by a killed run (its file still names a PID that is gone) is
simply taken over, with a notice naming the dead owner. After locking, the file's inode is
checked against the path, so a release (which removes the file) racing a new locker cannot
leave two owners.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from pathlib import Path

LOCK_FILE = "lock"


class SessionLocked(Exception):
    """Another live process holds the session; the message names it and the fix."""


def _owner_text(path: Path) -> str:
    try:
        raw = path.read_bytes()[:512].decode("utf-8", "replace")
    except OSError:
        return ""
    return " ".join(raw.split())


def _field(text: str, key: str) -> str:
    for word in text.split():
        if word.startswith(key + "="):
            return word.partition("=")[2]
    return ""


class SessionLock:
    """``with SessionLock(folder) as lock: ...``; ``lock.notice`` says if a stale lock was
    taken over."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK_FILE
        self.notice = ""
        self._fd: int | None = None

    def acquire(self) -> SessionLock:
        for _ in range(20):  # bounded: only a release racing us makes us retry
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                owner = _owner_text(self.path)
                for _ in range(10):  # the owner may not have written its name yet
                    if owner:
                        break
                    time.sleep(0.05)
                    owner = _owner_text(self.path)
                pid, host = _field(owner, "pid"), _field(owner, "host")
                who = f"PID {pid} on {host}" if pid else "another process"
                raise SessionLocked(
                    f"{self.path.parent} is in use by {who}; wait for that run to end or "
                    f"stop it (kill {pid or 'PID'}), then try again"
                ) from None
            try:
                same = os.fstat(fd).st_ino == self.path.stat().st_ino
            except FileNotFoundError:
                same = False
            if not same:  # released and removed between our open and our flock
                os.close(fd)
                continue
            previous = _owner_text(self.path)
            old_pid = _field(previous, "pid")
            if old_pid and old_pid != str(os.getpid()):
                old_host = _field(previous, "host")
                self.notice = (
                    f"took over the stale lock of PID {old_pid} on {old_host or '?'} "
                    "(that run is no longer running)"
                )
            stamp = f"pid={os.getpid()} host={socket.gethostname()} since={time.time():.0f}\n"
            os.pwrite(fd, stamp.encode(), 0)
            os.ftruncate(fd, len(stamp.encode()))
            self._fd = fd
            return self
        raise SessionLocked(f"{self.path}: could not take the lock (it keeps changing)")

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(fd)

    def __enter__(self) -> SessionLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
