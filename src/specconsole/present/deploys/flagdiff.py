"""What a deploy changes, flag by flag: ``--speculative-num-steps: 3 → 2``.

Why: a process-backend deploy changes one 400-character command line, and a unified diff of
it says only "this line, and that one"; a systemd unit changes one flag line among thirty.
The flag-level summary says what changed in the words of ``--help``, so it leads every diff
the console, the headless run and the dry run show. Two sources give it: a unified diff
(any backend: flags are read off the removed and added lines, ``KEY=value`` unit lines by
key) and a pair of configurations (the editor and the confirmations, before anything is
rendered). ``changed_spans`` marks, inside a changed line, the words that changed, so the
diff pane can highlight them.
"""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from specconsole.present.editor_fields import FormField, default_fields, field_text

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig

UNSET = "unset"
"""How a flag that is not given reads on either side of the arrow."""

COMMAND = "command"
"""The name of the words before a command line's first flag (the program)."""

MAX_LINE = 100
"""A changed line that is neither flags nor ``KEY=value`` is shown cut to this length."""


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote: words as they stand
        return text.split()


def line_flags(line: str) -> dict[str, str] | None:
    """``{"--speculative-num-steps": "3", …}`` for a command line or a unit's flag line
    (``ExecStart=`` and a trailing ``\\`` are ignored); None when it holds no flag."""
    body = line.strip().removesuffix("\\").strip()
    if "=" in body.split(" ", 1)[0] and not body.startswith("-"):
        key, _, body = body.partition("=")
        if key != "ExecStart":
            return None
    words = _words(body)
    if not any(w.startswith("--") for w in words):
        return None
    out: dict[str, str] = {}
    program: list[str] = []
    flag: str | None = None
    for word in words:
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            flag = name
            out[flag] = value if eq else ""
        elif flag is None:
            program.append(word)
        else:
            out[flag] = f"{out[flag]} {word}".strip()
    if program:
        out = {COMMAND: " ".join(program), **out}
    return out


def _key_value(line: str) -> tuple[str, str] | None:
    """``("Environment HF_HOME", "…")`` / ``("Description", "…")`` for a unit line."""
    key, eq, value = line.strip().partition("=")
    if not eq or " " in key or not key:
        return None
    if key == "Environment":
        name, eq2, rest = value.strip('"').partition("=")
        if eq2:
            return f"Environment {name}", rest
    return key, value


def _changed_lines(diff: str) -> tuple[list[str], list[str]]:
    removed, added = [], []
    for line in diff.splitlines():
        if line.startswith(("--- ", "+++ ", "@@")):
            continue
        if line.startswith("-"):
            removed.append(line[1:])
        elif line.startswith("+"):
            added.append(line[1:])
    return removed, added


SET = "set"
"""How a flag without a value (``--speculative-adaptive``) reads when it is given."""


def _shown(value: str | None) -> str:
    return UNSET if value is None else (value or SET)


def _arrow(name: str, old: str | None, new: str | None) -> str:
    return f"{name}: {_shown(old)} → {_shown(new)}"


def summary_lines(diff: str) -> list[str]:
    """The flag-level summary of a unified diff, one change per line, in the order the new
    text has them: ``--flag: old → new`` (``unset`` for a flag given on one side only),
    ``Key: old → new`` for unit lines, ``+ line``/``- line`` for anything else. A new file
    lists its flags (``--flag: value``). Empty when nothing changed."""
    removed, added = _changed_lines(diff)
    new_file = not removed and any(line.startswith("--- /dev/null") for line in diff.splitlines())
    old: dict[str, str] = {}
    new: dict[str, str] = {}
    other_old: list[str] = []
    other_new: list[str] = []
    for lines, flags, rest in ((removed, old, other_old), (added, new, other_new)):
        for line in lines:
            parsed = line_flags(line)
            if parsed is not None:
                flags.update(parsed)
                continue
            pair = _key_value(line)
            if pair is not None:
                flags[pair[0]] = pair[1]
            elif line.strip() and not line.lstrip().startswith("#"):
                rest.append(line.strip())  # comments are the renderer's, not a change
    out: list[str] = []
    if new_file:
        out = [f"{name}: {value}" if value else name for name, value in new.items()]
    else:
        for name in [*new, *(n for n in old if n not in new)]:
            if old.get(name) != new.get(name):
                out.append(_arrow(name, old.get(name), new.get(name)))
    out += [f"- {_cut(line)}" for line in other_old if line not in other_new]
    out += [f"+ {_cut(line)}" for line in other_new if line not in other_old]
    return out


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…"


def config_diff(
    deployed: ServerConfig | None,
    candidate: ServerConfig,
    fields: Sequence[FormField] | None = None,
) -> list[str]:
    """``--flag: old → new`` for every editable field that differs (all that are set, if
    nothing is deployed), each named by the flag the edited release renders (the key when
    it renders none)."""
    lines = []
    for field in default_fields() if fields is None else fields:
        label = field.flag or field.name
        new = field_text(candidate, field.name) or UNSET
        old = UNSET if deployed is None else (field_text(deployed, field.name) or UNSET)
        if deployed is None:
            if new != UNSET:
                lines.append(f"{label}: {new}")
        elif old != new:
            lines.append(f"{label}: {old} → {new}")
    return lines


Span = tuple[int, int]


def changed_spans(old: str, new: str) -> tuple[list[Span], list[Span]]:
    """Character ranges of the words that differ between a removed line and the added line
    that replaced it: ``(in old, in new)``."""
    old_words, new_words = _positions(old), _positions(new)
    matcher = difflib.SequenceMatcher(
        a=[w for w, _s in old_words], b=[w for w, _s in new_words], autojunk=False
    )
    old_spans: list[Span] = []
    new_spans: list[Span] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old_spans += [(s, s + len(w)) for w, s in old_words[i1:i2]]
        new_spans += [(s, s + len(w)) for w, s in new_words[j1:j2]]
    return old_spans, new_spans


def _positions(line: str) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    i = 0
    for word in line.split():
        i = line.index(word, i)
        out.append((word, i))
        i += len(word)
    return out
