"""Turning the bytes of a plan or session file into text, with an error a person can act on.

Why one helper: plan files, ``session.toml`` and ``trials.jsonl`` are read by several
commands (validate, render, sweep, resume, report, the console). Reading them with
``Path.read_text()`` raised a bare ``UnicodeDecodeError`` on a binary or damaged file; reading
bytes and decoding here gives every caller the same ``DecodeError`` naming the file and the
byte offset of the first bad byte, and the fix.
"""

from __future__ import annotations


class DecodeError(ValueError):
    """The bytes are not UTF-8; the message names the file, the byte offset and the fix."""

    def __init__(self, source: str, offset: int, detail: str) -> None:
        self.source = source
        self.offset = offset
        super().__init__(
            f"{source}: not UTF-8 text at byte offset {offset} ({detail}); fix: the file is "
            "binary or damaged — restore it or save it as UTF-8"
        )


def decode_text(data: bytes, source: str, *, base_offset: int = 0) -> str:
    """``data`` decoded as UTF-8 (a leading BOM is dropped); ``DecodeError`` otherwise.

    ``base_offset`` is where ``data`` starts in the file (for one line of a larger file)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        raise DecodeError(source, base_offset + exc.start, f"byte 0x{bad}") from None
    if "\x00" in text:
        raise DecodeError(source, base_offset + data.index(b"\x00"), "a NUL byte")
    return text.removeprefix("\ufeff")
