"""A unit read the way systemd reads it: its lines, ``systemctl cat``'s file headers,
specifiers (``%h``, ``%n``…), ``EnvironmentFile=`` variables and ``$VAR`` in ``ExecStart=``.

Why its own module (issue 27 #10, #11; issue 33 #1): the project's reader took a unit more
literally than systemd does, and so read something else than what runs — ``--model-path
$MODEL`` (set by an ``EnvironmentFile=``) became the model ``$MODEL`` and was re-rendered as
``$$MODEL``; ``%h`` stayed ``%h``; a comment ``# /dev/shm must be >= 16G`` before
``ExecStart=`` was taken for a ``systemctl cat`` file header and silently cut the unit there;
U+2028 or U+0085 inside a value split a line that systemd keeps whole. The rules here are
systemd's own (systemd.unit(5), systemd.service(5), systemd.exec(5)):

* lines end at ``\\n`` only (``\\r\\n`` tolerated), nothing else;
* ``systemctl cat`` prints each file as a block whose first line is ``# /absolute/path``, the
  blocks separated by one empty line — and when the caller asked systemd for the paths
  (``FragmentPath``, ``DropInPaths``) only those headers count;
* a specifier is resolved from the unit's name and path, the manager's scope and what the
  box told (:class:`UnitContext`); one that cannot be known here is an error naming it;
* in ``ExecStart=``, ``${NAME}`` is replaced inside a word, ``$NAME`` as a word of its own is
  split at blanks, ``$$`` is a ``$``; values come from ``Environment=`` and, overriding them,
  ``EnvironmentFile=`` files the caller could read. A variable the unit does not set, or that
  only an unread file sets, is an error naming it, never a literal ``$MODEL``.

Pure: the box's facts and files are gathered by the systemd backend.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from specconsole.core.config.errors import ConfigError

__all__ = [
    "CatOutput",
    "UnitContext",
    "expand_exec",
    "expand_specifiers",
    "parse_env_file",
    "read_cat",
    "specifier_values",
    "split_cat",
    "substitute_vars",
    "systemd_split",
    "unit_lines",
]


def unit_lines(text: str, *, keepends: bool = False) -> list[str]:
    """The unit's lines as systemd splits them: at ``\\n`` only (a trailing ``\\r`` is part
    of the line ending). ``str.splitlines`` would also split at U+0085, U+2028, ``\\x0b``…"""
    if not text:
        return []
    parts = text.split("\n")
    if keepends:
        lines = [part + "\n" for part in parts[:-1]]
        return lines + ([parts[-1]] if parts[-1] else [])
    if parts[-1] == "":
        parts.pop()
    return [part[:-1] if part.endswith("\r") else part for part in parts]


_ESCAPES = {"n": "\n", "t": "\t", "s": " ", "\\": "\\", '"': '"', "'": "'", " ": " "}


def systemd_split(text: str) -> list[str]:
    """Split a unit-file value into words the way systemd does (quotes, C escapes).

    ``%%`` and ``$$`` are *not* collapsed here; callers do that per setting.
    """
    words: list[str] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            break
        word: list[str] = []
        while i < n and text[i] not in " \t":
            c = text[i]
            if c in "\"'":
                i += 1
                while i < n and text[i] != c:
                    if text[i] == "\\" and i + 1 < n:
                        word.append(_ESCAPES.get(text[i + 1], text[i + 1]))
                        i += 2
                    else:
                        word.append(text[i])
                        i += 1
                if i >= n:
                    raise ConfigError("unit", f"unbalanced quote in {text!r}.", "close the quote.")
                i += 1
            elif c == "\\" and i + 1 < n:
                word.append(_ESCAPES.get(text[i + 1], text[i + 1]))
                i += 2
            else:
                word.append(c)
                i += 1
        words.append("".join(word))
    return words


# ---------------------------------------------------------------------------------------------
# systemctl cat
# ---------------------------------------------------------------------------------------------

_HEADER = re.compile(r"# (/\S+)\Z")
_SYSTEM_DIRS = (
    "/etc/systemd/system",
    "/run/systemd/system",
    "/run/systemd/transient",
    "/run/systemd/generator",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
)


@dataclass(frozen=True, slots=True)
class CatOutput:
    """``systemctl cat UNIT`` read back into its files."""

    main: str | None
    """The unit file's text (None when the output names no file)."""
    dropins: str
    """The drop-ins' texts, in order, joined by newlines."""
    fragment: str | None = None
    """The unit file's path, from its header."""
    dropin_paths: tuple[str, ...] = ()


def _is_dropin(path: str) -> bool:
    return ".d/" in path and path.endswith(".conf")


def read_cat(text: str, paths: Sequence[str] | None = None) -> CatOutput:
    """``systemctl cat UNIT`` output → its files.

    A file header is a line ``# /path`` at the start of the output or right after an empty
    line; with ``paths`` (``FragmentPath`` then ``DropInPaths``, as systemd reports them) only
    a header naming the next expected path counts, so no comment of the user's can be taken
    for one. Without ``paths``, a later header must name a drop-in (``UNIT.d/NAME.conf``: the
    only files ``systemctl cat`` prints after the unit). A text that does not start with a
    header is a unit file as it is.
    """
    lines = unit_lines(text, keepends=True)
    expected = list(paths) if paths is not None else None
    blocks: list[tuple[str, list[str]]] = []
    previous_blank = True
    for line in lines:
        stripped = line.rstrip("\r\n")
        match = _HEADER.match(stripped) if previous_blank else None
        header = None
        if match is not None:
            path = match.group(1)
            if expected is not None:
                header = path if expected and path == expected[0] else None
            elif not blocks or _is_dropin(path):
                header = path
        if header is not None:
            if expected:
                expected.pop(0)
            if blocks and blocks[-1][1] and not blocks[-1][1][-1].strip():
                blocks[-1][1].pop()  # the empty line systemctl puts between files
            blocks.append((header, []))
        elif blocks:
            blocks[-1][1].append(line)
        else:
            return CatOutput(text, "")  # no header first: a plain unit file
        previous_blank = not stripped.strip()
    if not blocks:
        return CatOutput(None if not text.strip() else text, "")
    main_path, main_lines = blocks[0]
    if _is_dropin(main_path):  # no unit file, only drop-ins (a transient or masked unit)
        return CatOutput(None, "\n".join("".join(b) for _, b in blocks), None)
    dropins = blocks[1:]
    return CatOutput(
        "".join(main_lines),
        "\n".join("".join(body) for _, body in dropins),
        main_path,
        tuple(path for path, _ in dropins),
    )


def split_cat(text: str, paths: Sequence[str] | None = None) -> tuple[str | None, str]:
    """(main unit text, drop-ins text) of ``systemctl cat`` output (see :func:`read_cat`)."""
    out = read_cat(text, paths)
    return out.main, out.dropins


# ---------------------------------------------------------------------------------------------
# Specifiers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UnitContext:
    """What resolves a unit's specifiers and variables beyond its own text."""

    unit: str | None = None
    """The unit's name (``sglang.service``, ``sglang@0.service``)."""
    fragment: str | None = None
    """The unit file's path (``%y``; it also tells the manager's scope)."""
    scope: str | None = None
    """``system`` or ``user``; None: from ``fragment``, else unknown."""
    facts: Mapping[str, str] = field(default_factory=dict)
    """Specifier letter → value the box told (``H`` hostname, ``h`` home of a user manager…)."""
    env_files: Mapping[str, str] = field(default_factory=dict)
    """``EnvironmentFile=`` path → its text, for the files the caller could read."""

    @property
    def manager(self) -> str | None:
        if self.scope:
            return self.scope
        if self.fragment:
            if self.fragment.startswith(_SYSTEM_DIRS):
                return "system"
            if "/systemd/user/" in self.fragment:
                return "user"
        return None

    @classmethod
    def from_cat(cls, cat: CatOutput, **kw: object) -> UnitContext:
        """A context naming the unit ``systemctl cat`` showed (its name, path and scope)."""
        unit = cat.fragment.rsplit("/", 1)[-1] if cat.fragment else None
        return cls(unit=unit, fragment=cat.fragment, **kw)  # type: ignore[arg-type]


_SYSTEM_SPECIFIERS = {
    "C": "/var/cache",
    "D": "/usr/share",
    "E": "/etc",
    "L": "/var/log",
    "S": "/var/lib",
    "t": "/run",
    "T": "/tmp",
    "V": "/var/tmp",
    "h": "/root",
    "u": "root",
    "U": "0",
    "g": "root",
    "G": "0",
    "s": "/bin/sh",
}
"""Specifiers of the system manager (its user is root; systemd.unit(5), "Specifiers")."""


def _unescape_name(text: str) -> str:
    """systemd's unit-name unescaping: ``-`` → ``/``, ``\\xNN`` → that character."""
    return re.sub(
        r"\\x([0-9a-fA-F]{2})|-",
        lambda m: chr(int(m.group(1), 16)) if m.group(1) else "/",
        text,
    )


def _name_specifiers(unit: str) -> dict[str, str]:
    stem, _dot, _suffix = unit.rpartition(".")
    prefix, at, instance = stem.partition("@")
    values = {"n": unit, "N": stem, "p": prefix, "P": _unescape_name(prefix)}
    values["j"] = prefix.rsplit("-", 1)[-1]
    values["J"] = _unescape_name(values["j"])
    if at:
        values["i"], values["I"] = instance, _unescape_name(instance)
        values["f"] = "/" + values["I"]
    else:
        values["i"] = values["I"] = ""
        values["f"] = "/" + values["P"]
    return values


def specifier_values(context: UnitContext) -> dict[str, str]:
    """Every specifier letter this context resolves, with its value."""
    return _specifier_values(context)


def _specifier_values(context: UnitContext) -> dict[str, str]:
    values: dict[str, str] = {}
    if context.manager == "system":
        values.update(_SYSTEM_SPECIFIERS)
    elif context.manager == "user" and "h" in context.facts:
        home = context.facts["h"]
        values.update(
            {
                "C": f"{home}/.cache",
                "D": f"{home}/.local/share",
                "E": f"{home}/.config",
                "L": f"{home}/.local/state/log",
                "S": f"{home}/.local/state",
                "T": "/tmp",
                "V": "/var/tmp",
            }
        )
    if context.unit:
        values.update(_name_specifiers(context.unit))
    if context.fragment:
        values["y"] = context.fragment
        values["Y"] = context.fragment.rsplit("/", 1)[0] or "/"
    values.update(context.facts)
    return values


_SPECIFIER = re.compile(r"%(.)?", re.S)


def expand_specifiers(value: str, context: UnitContext, where: str) -> str:
    """``value`` with its ``%`` specifiers resolved; one that cannot be known here (the
    hostname of a box not asked, ``%h`` of a manager whose scope is unknown) or that systemd
    does not know is a ConfigError naming it and the fix."""
    if "%" not in value:
        return value
    values = _specifier_values(context)

    def sub(match: re.Match[str]) -> str:
        letter = match.group(1)
        if letter == "%":
            return "%"
        if letter is not None and letter in values:
            return values[letter]
        shown = f"%{letter}" if letter else "a lone %"
        raise ConfigError(
            where,
            f"uses the specifier {shown}, which cannot be resolved here (it depends on the "
            "box or the service manager, or systemd does not know it).",
            "import from the box (specconsole import HOST), which resolves it as systemd "
            "does, or write its value (a literal % is %%).",
        )

    return _SPECIFIER.sub(sub, value)


# ---------------------------------------------------------------------------------------------
# Environment files and variables
# ---------------------------------------------------------------------------------------------

_ASSIGN = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)\Z", re.S)


def parse_env_file(text: str) -> dict[str, str]:
    """An ``EnvironmentFile=``'s variables: ``NAME=value`` lines, ``#``/``;`` comments,
    single quotes literal, double quotes with ``\\``-escapes, a trailing ``\\`` continuing the
    line (systemd's own rules)."""
    env: dict[str, str] = {}
    pending = ""
    for line in unit_lines(text):
        if not pending and line.lstrip().startswith(("#", ";")):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending += line[:-1]
            continue
        line, pending = pending + line, ""
        match = _ASSIGN.match(line)
        if match is None:
            continue
        env[match.group(1)] = _env_value(match.group(2).strip())
    return env


def _env_value(raw: str) -> str:
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "'":
            end = raw.find("'", i + 1)
            end = n if end < 0 else end
            out.append(raw[i + 1 : end])
            i = end + 1
        elif c == '"':
            i += 1
            while i < n and raw[i] != '"':
                if raw[i] == "\\" and i + 1 < n and raw[i + 1] in '"\\$`':
                    i += 1
                out.append(raw[i])
                i += 1
            i += 1
        elif c == "\\" and i + 1 < n:
            out.append(raw[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WHOLE_VAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)\Z")

Lookup = Callable[[str], str]
"""A variable's value, or raise ConfigError naming why it has none."""


def substitute_vars(word: str, lookup: Lookup) -> list[str]:
    """One decoded ``ExecStart`` word after systemd's variable expansion: ``$NAME`` alone is
    split at blanks (zero or more words), ``${NAME}`` is replaced in place, ``$$`` is ``$``."""
    whole = _WHOLE_VAR.match(word)
    if whole:
        return lookup(whole.group(1)).split()
    if "$" not in word:
        return [word]
    return [_VAR.sub(lambda m: "$" if m.group(0) == "$$" else lookup(m.group(1)), word)]


def expand_exec(words: Sequence[str], lookup: Lookup) -> list[str]:
    """Every word of a decoded ``ExecStart`` after variable expansion."""
    out: list[str] = []
    for word in words:
        out.extend(substitute_vars(word, lookup))
    return out
