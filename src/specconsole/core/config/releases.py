"""Release numbers and how an engine's flags change between releases: the mechanics.

Why in the core: every engine renames and removes flags across releases (SGLang's
``--cuda-graph-max-bs`` became ``--cuda-graph-max-bs-decode`` and was later refused; llama.cpp
removed ``--draft-max``), and every one needs the same questions answered — which spelling
does release X want for this key, which words does it no longer accept, does it still enforce
rule R. The *facts* are each engine's :class:`ReleaseTable` (in its package, checked against
its real releases by the oracle tests); the answers are computed here, once.

A version is the engine's own release text (``0.5.23``, ``0.5.15.post1``, ``0.5.10rc0``);
``None`` means unknown: a table's ``default_version`` then stands in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "FlagChange",
    "ReleaseTable",
    "at_least",
    "flag_for",
    "has_feature",
    "has_new_name",
    "parse_release",
    "parse_version",
    "removed_flags",
    "rule_applies",
    "unportable_changes",
]

Version = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class FlagChange:
    """One flag renamed in a release: ``key`` renders as ``new`` from ``since`` on."""

    key: str
    """The stable ``[server]`` key (``""`` for a flag the model does not name)."""
    old: str
    new: str
    since: str
    """First release (of those checked) with ``new``; older ones get ``old``."""
    removed: str | None = None
    """First checked release that no longer accepts ``old`` at all (``None``: still an alias)."""
    note: str = ""


@dataclass(frozen=True, slots=True)
class ReleaseTable:
    """What an engine's releases changed, as data (empty for an engine tracked by none)."""

    changes: tuple[FlagChange, ...] = ()
    known: tuple[str, ...] = ()
    """Releases the oracle tests read: the ones vouched for."""
    default_version: str | None = None
    """Names used when the release is unknown: the oldest checked spelling, which every
    release up to the one that removes it still accepts."""
    rules_until: Mapping[str, str] = field(default_factory=dict)
    """Checks later releases dropped: rule -> first checked release without it."""
    features_since: Mapping[str, str] = field(default_factory=dict)
    """What later releases added: feature -> first release with it (SGLang's adaptive
    mode), for the engine's rules and for a face of the simulator playing a release."""


_VERSION_RE = re.compile(
    r"v?(\d{1,6})\.(\d{1,6})(?:\.(\d{1,6}))?(?:\.?(post|rc|dev|a|b)(\d{0,6}))?\Z"
)
"""A release number as engines print them; each part at most six digits (a longer one is
no release: ``0.5.99999999999999999999`` is refused, not read as the newest)."""


def parse_version(text: str) -> Version:
    """``0.5.23`` -> ``(0, 5, 23, 0)``; post-releases sort after, pre-releases before.

    Raises ValueError for anything that is not a release number.
    """
    m = _VERSION_RE.match(text.strip())
    if m is None:
        raise ValueError(f"not a release number: {text!r}")
    major, minor, patch, tag, num = m.groups()
    base = (int(major), int(minor), int(patch or 0))
    if tag is None:
        return (*base, 0)
    n = int(num or 0)
    return (*base, 1 + n) if tag == "post" else (*base, -1000 + n)


def at_least(table: ReleaseTable, version: str | None, since: str) -> bool:
    """Whether ``version`` (unknown: the table's default) is ``since`` or later."""
    text = version or table.default_version
    if text is None:
        return False
    return parse_version(text) >= parse_version(since)


def has_new_name(table: ReleaseTable, change: FlagChange, version: str | None) -> bool:
    """Whether release ``version`` (unknown: the default) has ``change.new``."""
    return at_least(table, version, change.since)


def flag_for(table: ReleaseTable, key: str, default: str, version: str | None) -> str:
    """The flag that spells ``[server]`` key ``key`` for ``version`` (``default`` if unchanged)."""
    for change in table.changes:
        if change.key == key:
            return change.new if has_new_name(table, change, version) else change.old
    return default


def removed_flags(table: ReleaseTable, version: str | None) -> dict[str, FlagChange]:
    """Flags release ``version`` no longer accepts at all: old name -> the change."""
    if version is None:
        return {}
    return {
        c.old: c
        for c in table.changes
        if c.removed is not None and at_least(table, version, c.removed)
    }


def unportable_changes(table: ReleaseTable) -> tuple[FlagChange, ...]:
    """The renamed ``[server]`` keys no single flag spells for every release in
    ``table.known``: the new name is missing from the oldest, the old one refused by the
    newest. A box whose release is unknown can only be given them once it is known."""
    if not table.known:
        return ()
    versions = [parse_version(v) for v in table.known]
    oldest, newest = min(versions), max(versions)
    return tuple(
        c
        for c in table.changes
        if c.key
        and parse_version(c.since) > oldest
        and c.removed is not None
        and parse_version(c.removed) <= newest
    )


def has_feature(table: ReleaseTable, feature: str, version: str | None) -> bool | None:
    """Whether release ``version`` has ``feature`` (``features_since``); ``None`` when the
    release is unknown or not a release number."""
    if version is None:
        return None
    try:
        return parse_version(version) >= parse_version(table.features_since[feature])
    except ValueError:
        return None


def rule_applies(table: ReleaseTable, rule: str, version: str | None) -> bool:
    """Whether release ``version`` (unknown: assume it does) still enforces ``rule``."""
    until = table.rules_until[rule]
    return version is None or not at_least(table, version, until)


MAX_RELEASE_LINES = 200
"""Lines of a detection command's output looked at (the release is printed last)."""


def parse_release(output: str) -> str | None:
    """The last line of ``output`` that is a release number (``v`` dropped), else ``None``
    (an import error, an empty reply, an HTML page, a number that is no release): never a
    guess — ``None`` means "release unknown" and the trials get portable flags."""
    if not isinstance(output, str):
        return None
    for line in reversed(output.strip().splitlines()[-MAX_RELEASE_LINES:]):
        word = line.strip()
        if len(word) > 40:
            continue
        try:
            parse_version(word)
        except ValueError:
            continue
        return word.removeprefix("v")
    return None
