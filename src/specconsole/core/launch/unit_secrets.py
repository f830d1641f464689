"""Secrets written inline in the user's own unit: found, and moved to a 0600 file on consent.

Why (issue 33 #8): a hand-written ``Environment=HF_TOKEN=…`` (or ``--api-key sk-…`` in
``ExecStart=``) sits in a world-readable unit file, and every deploy's backup copied it — eight
copies after one session, and nothing said so. specconsole never moves the user's lines on its
own: :func:`inline_secrets` finds them (the controller warns once, before the first deploy),
and :func:`move_inline_secrets` is the edit ``specconsole move-secrets`` shows as a diff and
makes only when the user says yes: each inline secret's assignment leaves the unit, a secret
flag's value becomes a reference (``--api-key ${SPECCONSOLE_API_KEY}``), and one
``EnvironmentFile=`` line names the 0600 file that now holds the values. The same edit applied
to the backups (:func:`move_inline_secrets` on each) leaves the secret in that one file.
Every other byte of the unit stays. Pure text in, text out.
"""

from __future__ import annotations

from dataclasses import dataclass

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.secrets import (
    env_file_text,
    flag_variable,
    is_secret_flag,
    is_secret_name,
    looks_like_credential,
)
from specconsole.core.launch.unit import (
    _edit_env_line,
    _env_words,
    _key,
    _sections,
)
from specconsole.core.launch.unit_exec import decode_word, word_spans
from specconsole.core.launch.unit_read import unit_lines

__all__ = ["InlineSecret", "MovedSecrets", "inline_secrets", "move_inline_secrets"]


@dataclass(frozen=True, slots=True)
class InlineSecret:
    """One secret written in the unit itself."""

    name: str
    """The variable (``HF_TOKEN``) or the flag (``--api-key``)."""
    line: int
    """1-based line of the unit that holds it."""
    variable: str
    """The variable that carries it once moved (a flag's: ``SPECCONSOLE_API_KEY``)."""


@dataclass(frozen=True, slots=True)
class MovedSecrets:
    """The unit with its inline secrets moved, and the environment file's body."""

    text: str
    env_file: str
    moved: tuple[InlineSecret, ...]
    values: tuple[str, ...] = ()
    """The secret values moved (longest first): what no other copy may hold."""


def _exec_words(line: str) -> list[tuple[tuple[int, int], str]]:
    """(span in ``line``, decoded word) of one ``ExecStart=`` line's words (a word systemd
    cannot decode — an unbalanced quote — is taken as written: this only looks for secrets)."""
    body = line.rstrip("\r\n").removesuffix("\\")
    start = body.index("=") + 1 if _key(body) == "ExecStart" else 0
    out = []
    for s, e in word_spans(body[start:]):
        raw = body[start + s : start + e]
        try:
            word = decode_word(raw)
        except ConfigError:
            word = raw
        out.append(((start + s, start + e), word))
    return out


def _scan(
    lines: list[str], secret_env: tuple[str, ...]
) -> list[tuple[int, InlineSecret, tuple[int, int] | None, str]]:
    """(line index, the secret, its span for a flag's value, its value)."""
    sections = _sections(lines)
    found: list[tuple[int, InlineSecret, tuple[int, int] | None, str]] = []
    in_exec = False
    previous = ""
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        key = _key(stripped)
        if sections[i] == "Service" and key == "Environment" and not in_exec:
            try:
                assignments = _env_words(stripped)
            except ConfigError:  # an unbalanced quote: systemd refuses the line too
                assignments = []
            for _span, name, value in assignments:
                if is_secret_name(name, secret_env) or looks_like_credential(value):
                    found.append((i, InlineSecret(name, i + 1, name), None, value))
        if in_exec and stripped.startswith(("#", ";")):
            continue  # a comment inside the continuation: systemd skips it
        if sections[i] == "Service" and (key == "ExecStart" or in_exec):
            if key == "ExecStart" and not in_exec:
                previous = ""
            indent = len(line) - len(stripped)
            for (s, e), word in _exec_words(stripped if key == "ExecStart" else line):
                offset = indent if key == "ExecStart" else 0
                span = (s + offset, e + offset)
                name, eq, value = word.partition("=")
                if eq and name.startswith("-") and is_secret_flag(name, secret_env):
                    if not value.startswith("$"):
                        value_span = (span[0] + len(name) + 1, span[1])
                        secret = InlineSecret(name, i + 1, flag_variable(name))
                        found.append((i, secret, value_span, value))
                elif (
                    previous
                    and "=" not in previous
                    and is_secret_flag(previous, secret_env)
                    and not word.startswith(("-", "$"))
                ):
                    secret = InlineSecret(previous, i + 1, flag_variable(previous))
                    found.append((i, secret, span, word))
                previous = word
            in_exec = line.rstrip("\r\n").endswith("\\")
        else:
            in_exec = False
    return found


def inline_secrets(text: str, secret_env: tuple[str, ...] = ()) -> tuple[InlineSecret, ...]:
    """The secrets the unit holds in its own text (``Environment=`` assignments of secret
    variables, secret flags' literal values in ``ExecStart=``), in order."""
    found = _scan(unit_lines(text, keepends=True), secret_env)
    return tuple(secret for _i, secret, _span, _value in found)


def move_inline_secrets(
    text: str, env_file_path: str, secret_env: tuple[str, ...] = ()
) -> MovedSecrets | None:
    """The unit with every inline secret moved to ``env_file_path`` (see the module
    docstring); None when it holds none."""
    lines = unit_lines(text, keepends=True)
    found = _scan(lines, secret_env)
    if not found:
        return None
    pairs: dict[str, str] = {}
    removals: dict[int, dict[str, str | None]] = {}
    replacements: dict[int, list[tuple[tuple[int, int], str]]] = {}
    for i, secret, span, value in found:
        pairs[secret.variable] = value
        if span is None:
            removals.setdefault(i, {})[secret.name] = None
        else:
            replacements.setdefault(i, []).append((span, f"${{{secret.variable}}}"))
    out: list[str] = []
    sections = _sections(lines)
    anchor = _anchor(lines, sections)
    file_line = f"EnvironmentFile={env_file_path}\n"
    has_file = any(
        _key(line.strip()) == "EnvironmentFile"
        and line.split("=", 1)[1].strip().lstrip("-") == env_file_path
        for line in lines
    )
    for i, line in enumerate(lines):
        if i == anchor and not has_file:
            out.append(file_line)
        if i in removals:
            edited = _edit_env_line(line.lstrip(), removals[i])
            if edited is not None:
                body = edited.rstrip("\r\n")
                ending = edited[len(body) :]
                out.append(line[: len(line) - len(line.lstrip())] + body.rstrip(" \t") + ending)
            continue
        for (s, e), new in sorted(replacements.get(i, []), reverse=True):
            line = line[:s] + new + line[e:]
        out.append(line)
    moved = tuple(secret for _i, secret, _span, _value in found)
    values = tuple(sorted(set(pairs.values()), key=len, reverse=True))
    return MovedSecrets("".join(out), env_file_text(pairs.items()), moved, values)


def _anchor(lines: list[str], sections: list[str]) -> int:
    """Where the ``EnvironmentFile=`` line goes: before ``ExecStart=`` in ``[Service]``."""
    for i, line in enumerate(lines):
        if sections[i] == "Service" and _key(line.strip()) == "ExecStart":
            return i
    return len(lines)
