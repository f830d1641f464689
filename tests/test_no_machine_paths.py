"""Nothing the project ships points at the machine it was written on.

A path such as ``/work/...`` or ``/root/...`` in the sources, the docs or the examples names a
folder only the development machine has (a reference folder, a checkout, a ``.venv``); a user
reading it cannot follow it. Cite the upstream source itself (project, file, release) or state
the fact plainly instead. Paths computed at run time (``Path(__file__)``) and user paths such as
``~/.cache/...`` are not affected.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCANNED = ("src", "docs", "examples", "README.md")
MACHINE_PATHS = ("/work/", "/root/")


def _tracked_files() -> list[Path]:
    """Tracked files under SCANNED, as git lists them (so build output and caches never count)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", *SCANNED],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    return [REPO / name for name in listed.decode().split("\0") if name]


def _offences(path: Path) -> list[str]:
    """``path:line: text`` for every line of a text file that holds a machine path."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:  # tracked but removed in the working tree (a move in progress)
        return []
    if b"\0" in data:  # binary (images): not prose anyone reads
        return []
    text = data.decode("utf-8", errors="replace")
    return [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), start=1)
        if any(marker in line for marker in MACHINE_PATHS)
    ]


def test_scanned_folders_are_tracked() -> None:
    """The scan sees the files it is meant to (an empty listing would pass vacuously)."""
    names = {path.relative_to(REPO).as_posix() for path in _tracked_files()}
    assert "README.md" in names
    assert any(name.startswith("src/specconsole/") for name in names)
    assert any(name.startswith("docs/") for name in names)


def test_no_development_machine_paths() -> None:
    offences = [line for path in _tracked_files() for line in _offences(path)]
    assert not offences, (
        "machine-specific paths (cite the upstream source or state the fact instead):\n"
        + "\n".join(offences)
    )
