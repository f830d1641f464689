"""One ``ExecStart=`` edited word by word, in the user's own spelling.

Why apart from the unit as a whole (:mod:`.unit`): this is the delicate part of editing a
user's unit — the words of the command line with their places in the text, each flag
matched with its counterpart in the configuration (``--tp 2`` stays ``--tp``, ``--port=1``
stays inline), only the words that differ rewritten, continuation lines and indentation kept.
When no word places can be kept safely it raises :class:`Rerender` and the caller re-renders
the whole block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import ServerConfig, parse_field
from specconsole.core.config.options import OptionField, parse_option
from specconsole.core.config.render import launcher_argv, to_argv
from specconsole.core.config.secrets import is_secret_flag
from specconsole.core.engine.protocol import Engine
from specconsole.core.engine.registry import engine_for
from specconsole.core.launch.command import parse_command
from specconsole.core.launch.systemd import _unescape_exec, systemd_quote, systemd_split

if TYPE_CHECKING:
    from specconsole.core.config.capabilities import FlagSet

__all__ = ["Rerender", "decode_word", "edit_exec", "word_spans"]


# ---------------------------------------------------------------------------------------------
# Words with their places in the text
# ---------------------------------------------------------------------------------------------


def _is_break(text: str, i: int) -> int:
    """Length of a separator at ``i`` (blank, tab, newline, backslash-newline), else 0."""
    c = text[i]
    if c in " \t\r\n":
        return 1
    if c == "\\" and text[i + 1 : i + 2] == "\n":
        return 2
    if c == "\\" and text[i + 1 : i + 3] == "\r\n":
        return 3
    return 0


def word_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each word of a unit value, split the way systemd splits (quotes and
    escapes keep a word together; a backslash-newline continuation separates)."""
    spans: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        step = _is_break(text, i)
        if step:
            i += step
            continue
        start = i
        while i < n and not _is_break(text, i):
            c = text[i]
            if c in "\"'":
                i += 1
                while i < n and text[i] != c:
                    i += 2 if text[i] == "\\" else 1
                i += 1
            elif c == "\\":
                i += 2
            else:
                i += 1
        spans.append((start, min(i, n)))
    return spans


def decode_word(raw: str) -> str:
    words = systemd_split(raw)
    return words[0] if words else ""


# ---------------------------------------------------------------------------------------------
# ExecStart
# ---------------------------------------------------------------------------------------------


class Rerender(Exception):
    """The ExecStart block cannot be edited word by word; render it whole instead."""


@dataclass(frozen=True, slots=True)
class _Group:
    """A flag with its value (``--tp 2``, ``--port=1``), a bare flag, or a positional word."""

    key: tuple[str, str]
    name: str
    values: tuple[str, ...]
    inline: bool = False
    span: tuple[int, int] = (0, 0)


def _groups(
    words: list[str], spans: list[tuple[int, int]] | None, modelled: dict[str, str]
) -> list[_Group]:
    out: list[_Group] = []
    positional = 0
    i = 0
    while i < len(words):
        word = words[i]
        start = spans[i][0] if spans else 0
        if word.startswith("-") and len(word) > 1:
            name, eq, inline = word.partition("=")
            field = modelled.get(name)
            key = ("field", field) if field else ("flag", name)
            if eq and name.startswith("--"):
                out.append(_Group(key, name, (inline,), True, (start, spans[i][1] if spans else 0)))
                i += 1
                continue
            if i + 1 < len(words) and _is_value(words[i + 1]):
                end = spans[i + 1][1] if spans else 0
                out.append(_Group(key, word, (words[i + 1],), False, (start, end)))
                i += 2
                continue
            out.append(_Group(key, word, (), False, (start, spans[i][1] if spans else 0)))
        else:
            out.append(
                _Group(("pos", str(positional)), word, (), False, spans[i] if spans else (0, 0))
            )
            positional += 1
        i += 1
    return out


def _is_value(word: str) -> bool:
    """A flag's value: any word but a flag (a negative number such as ``-1`` is a value)."""
    return not word.startswith("-") or word[1:].replace(".", "").isdigit()


def _same(old: _Group, new: _Group, options: dict[str, OptionField]) -> bool:
    if old.values == new.values:
        return True
    if old.key[0] == "field" and len(old.values) == len(new.values) == 1:
        name = old.key[1]
        try:
            if name in options:  # an engine's own key (llama.cpp's ctx_size)
                field = options[name]
                return parse_option(field, old.values[0]) == parse_option(field, new.values[0])
            return parse_field(name, old.values[0]) == parse_field(name, new.values[0])
        except ConfigError:
            return False
    return False


def _render_group(old: _Group | None, new: _Group, flags: FlagSet | None = None) -> str:
    """``new``'s words in ``old``'s spelling (flag alias, ``=`` or not) when there is one and
    the box's binary accepts it (``flags``: its ``--help``; an old name it removed is
    rewritten in the name the configuration renders)."""
    kept = old is not None and old.key[0] != "pos"
    if kept and flags is not None and old is not None and not flags.accepts(old.name):
        kept = False
    name = old.name if kept and old is not None else new.name
    if new.key[0] == "pos":
        return systemd_quote(new.name)
    if kept and old is not None and old.inline and len(new.values) == 1:
        return systemd_quote(f"{name}={new.values[0]}")
    return " ".join(systemd_quote(w) for w in (name, *new.values))


def _is_server_default(group: _Group, engine: Engine) -> bool:
    """A field every configuration has (host, port) at the engine's own default value: a unit
    that leaves it out already runs it."""
    defaults = {"host": engine.default_host, "port": str(engine.default_port)}
    return group.key[0] == "field" and group.values == (defaults.get(group.key[1]),)


def edit_exec(block: str, config: ServerConfig, env: dict[str, str]) -> str:
    """The ExecStart block (its lines, continuation included) edited to run ``config``."""
    lines = block.splitlines(keepends=True)
    if any(line.lstrip().startswith(("#", ";")) for line in lines[1:]):
        raise Rerender  # a comment inside the continuation: no word places to keep
    body = block.rstrip("\r\n")
    newline = block[len(body) :]
    eq = body.index("=") + 1
    value = body[eq:]
    spans = word_spans(value)
    if not spans:
        raise Rerender
    raw_words = [value[s:e] for s, e in spans]
    first = raw_words[0]
    prefix = ""
    while first[:1] in ("-", "@", "+", "!", ":") and first:
        prefix += first[0]
        first = first[1:]
    decoded = [_unescape_exec(decode_word(w), env) for w in [first, *raw_words[1:]]]
    try:
        old = parse_command(decoded)
    except ConfigError:
        raise Rerender from None
    launcher = old.launcher.split()
    head_end = next(
        (
            k + len(launcher)
            for k in range(len(decoded))
            if decoded[k : k + len(launcher)] == launcher
        ),
        None,
    )
    if head_end is None or old.engine != config.engine:
        raise Rerender
    engine = engine_for(config)
    modelled = dict(engine.modelled_flags)
    options = {f.name: f for f in engine.option_fields}
    flags = config.box_flags
    launcher_words = launcher_argv(config)
    new_flags = to_argv(config)[len(launcher_words) :]
    new_head = launcher_words
    if not new_head[0].startswith("/"):
        new_head = ["/usr/bin/env", *new_head]
    if old.launcher == config.launcher:
        head_text = value[spans[0][0] : spans[head_end - 1][1]]
    else:
        head_text = prefix + " ".join(systemd_quote(w) for w in new_head)
    old_groups = _groups(decoded[head_end:], spans[head_end:], modelled)
    new_groups = _groups(new_flags, None, modelled)
    used: dict[int, _Group] = {}
    unmatched: list[_Group] = []
    for group in new_groups:
        match = next(
            (i for i, o in enumerate(old_groups) if i not in used and o.key == group.key),
            None,
        )
        if match is None:
            unmatched.append(group)
        else:
            used[match] = group
    out = value[: spans[0][0]] + head_text
    last_end = spans[head_end - 1][1]
    separator = " "
    for i, o in enumerate(old_groups):
        sep = value[last_end : o.span[0]]
        last_end = o.span[1]
        if i not in used:
            if o.key[0] == "flag" and is_secret_flag(o.name):  # the user's, like a variable
                out += sep + value[o.span[0] : o.span[1]]
            continue
        separator = sep
        new = used[i]
        keep = _same(o, new, options) and (flags is None or flags.accepts(o.name))
        out += sep + (value[o.span[0] : o.span[1]] if keep else _render_group(o, new, flags))
    for group in unmatched:
        if _is_server_default(group, engine):
            continue  # the unit leaves it to the server's own default, which is the same value
        out += separator + _render_group(None, group, flags)
    out += value[spans[-1][1] :]
    return body[:eq] + out + newline
