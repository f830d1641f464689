"""A session's files as bytes on disk: written atomically, read back with errors that name
the byte.

Why apart from the session (:mod:`.store`): the guarantees a kill or a full disk must not
break — a temp file, fsync and rename for every rewrite (no temp file left behind when the
write fails), an append-only ``trials.jsonl`` whose only possibly torn line is the last —
are file mechanics, tested on their own.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specconsole.core.config.inputs import load_json
from specconsole.core.plans.decoding import decode_text

__all__ = [
    "SessionError",
    "TrialLines",
    "atomic_write",
    "fsync_dir",
    "parse_trial_lines",
    "read_text_file",
]


class SessionError(Exception):
    """A session folder is missing, incomplete or unreadable; the message names the fix."""


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in ``path`` durable (best effort: not every filesystem can)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder, fsync, rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()  # a full disk must not leave a temp file behind
        raise
    fsync_dir(path.parent)


def read_text_file(path: Path) -> str:
    """A plan or session file's text; ``DecodeError`` names the file and the byte offset."""
    return decode_text(path.read_bytes(), str(path))


@dataclass(frozen=True, slots=True)
class TrialLines:
    """What ``trials.jsonl`` holds: the complete records and a torn tail, if any."""

    records: tuple[dict[str, Any], ...]
    torn_offset: int | None = None
    """Byte offset where an unfinished last line starts (``None``: the file is whole)."""
    torn: bytes = b""


def parse_trial_lines(data: bytes, source: str) -> TrialLines:
    """Split ``trials.jsonl`` bytes into records; only the last line may be unfinished.

    A line that is not UTF-8, not JSON or not an object raises ``SessionError`` naming its
    line and byte offset, unless it is the final line without its newline (a kill tore it)."""
    records: list[dict[str, Any]] = []
    offset = 0
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        start, offset = offset, offset + len(raw) + 1
        last = number == len(lines)
        if not raw.strip():
            continue
        try:
            value = load_json(decode_text(raw, source, base_offset=start), "the line", ValueError)
            if not isinstance(value, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:  # DecodeError and JSONDecodeError are ValueErrors
            if last:
                return TrialLines(tuple(records), start, raw)
            raise SessionError(
                f"{source}: line {number} (byte offset {start}) is not a trial record "
                f"({exc}); fix: repair or remove that line by hand — it is never skipped, "
                "since skipping a record would run its trial again"
            ) from None
        records.append(value)
    return TrialLines(tuple(records))
