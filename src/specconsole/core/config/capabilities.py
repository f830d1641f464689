"""The flags the box's own server binary accepts, read from its ``--help``, and what a
configuration needs that it lacks.

Why: engines rename and remove flags between builds faster than release tables can follow
(llama.cpp removed ``--draft-max`` for ``--spec-draft-n-max`` and exits 1 on the old name; a
source build reports "build 0, commit unknown", so there is no release number to look up). The
one authority on what a binary accepts is the binary itself: its ``--help``. The controller
asks the box once per binary (cached per fingerprint in the session) and puts the answer on the
configuration (``ServerConfig.box_flags``); an engine's renderer then picks, for each key, the
spelling the binary has, and :func:`flag_issues` refuses — before anything is deployed — a
configuration whose command line still needs a flag the binary lacks, naming the ``[server]``
key and the fix (the flag's new name when the help says it was renamed).

Two help formats are read here: argparse's (SGLang, vLLM, the simulator: ``  --model-path
MODEL_PATH, --model MODEL_PATH``) and llama.cpp's common-args table (``-t,    --threads N``;
``--spec-draft-model, -md, --model-draft FNAME``) — both list the names of one option,
comma-separated, at the start of a line, before the description. A flag listed with "the
argument has been removed" (llama.cpp keeps removed flags in its help to say so) is removed,
with the help's own words as the reason.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from specconsole.core.config.issues import Issue, Severity

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig

__all__ = [
    "FlagSet",
    "binary_fingerprint",
    "flag_issues",
    "help_trouble",
    "parse_help",
    "python_fingerprint",
    "removed_note",
    "rendered_flags",
]

_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][A-Za-z0-9_.-]*)")
_REMOVED = re.compile(r"(?:the )?argument has been removed\.?\s*(?P<rest>.*)", re.IGNORECASE)


@dataclass(frozen=True)
class FlagSet:
    """What one server binary accepts: its flags (every alias), and the flags its help still
    lists only to say they were removed (flag -> the help's words)."""

    accepted: frozenset[str]
    removed: Mapping[str, str] = field(default_factory=dict)
    source: str = ""
    """Where it was learnt (``/opt/llama/bin/llama-server --help``), for messages."""
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The values a flag's help lists as its metavar (llama.cpp's ``--spec-type
    none,draft-simple,...``, argparse's ``{greedy,probabilistic}``), for every alias."""

    def accepts(self, flag: str) -> bool:
        return flag in self.accepted and flag not in self.removed

    def to_dict(self) -> dict[str, object]:
        return {
            "accepted": sorted(self.accepted),
            "removed": dict(sorted(self.removed.items())),
            "source": self.source,
            "choices": {k: list(v) for k, v in sorted(self.choices.items())},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FlagSet:
        accepted = data.get("accepted")
        removed = data.get("removed")
        choices = data.get("choices")
        return cls(
            accepted=frozenset(str(f) for f in accepted if isinstance(f, str))
            if isinstance(accepted, list)
            else frozenset(),
            removed={str(k): str(v) for k, v in removed.items()}
            if isinstance(removed, Mapping)
            else {},
            source=str(data.get("source") or ""),
            choices={
                str(k): tuple(str(x) for x in v) for k, v in choices.items() if isinstance(v, list)
            }
            if isinstance(choices, Mapping)
            else {},
        )


def parse_help(text: str, *, source: str = "") -> FlagSet | None:
    """The flags a ``--help`` text lists (``None`` when it lists none: not a help text)."""
    accepted: set[str] = set()
    removed: dict[str, str] = {}
    choices: dict[str, tuple[str, ...]] = {}
    lines = text.splitlines()
    for number, line in enumerate(lines):
        stripped = line.strip()
        if not stripped.startswith("-") or stripped.startswith("---"):
            continue
        found, description = _names(stripped)
        if not found:
            continue
        accepted.update(found)
        listed = _listed_values(stripped, found)
        if listed:
            choices.update(dict.fromkeys(found, listed))
        at = number
        if not description and number + 1 < len(lines):  # a long names column: text below
            at, description = number + 1, lines[number + 1].strip()
        gone = _REMOVED.search(description)
        if gone:
            rest = gone.group("rest")
            follow = lines[at + 1].strip() if at + 1 < len(lines) else ""
            if rest.endswith(" or") and follow.startswith("--"):  # wrapped onto the next line
                rest = f"{rest} {follow}"
            note = f"the argument has been removed. {rest}".strip()
            for flag in found:
                removed[flag] = note
    if not accepted:
        return None
    return FlagSet(frozenset(accepted), removed, source, choices)


_LISTED = re.compile(r"\{([\w.+-]+(?:,[\w.+-]+)+)\}|([a-z0-9][\w.+-]*(?:,[a-z0-9][\w.+-]*)+)")
"""A metavar that lists the values: ``{a,b}`` or a bare ``a,b,c`` (lower case: not argparse's
``MODEL_PATH,`` name separator)."""


def _listed_values(line: str, names: Sequence[str]) -> tuple[str, ...]:
    """The values the metavar after the last of ``names`` lists (``()`` when it lists none)."""
    words = line.split()
    last = max(i for i, w in enumerate(words) if w.rstrip(",") in names)
    if last + 1 >= len(words):
        return ()
    got = _LISTED.fullmatch(words[last + 1])
    if got is None:
        return ()
    return tuple((got.group(1) or got.group(2)).split(","))


MAX_HELP_CHARS = 4 * 1024 * 1024
"""A longer answer is not a help text (llama-server's is about 60 KiB)."""
WRAP_SHARE = 0.2
"""A help with this share of its lines at exactly its widest is hard-wrapped (``fold``, a
terminal's column limit): flags cut in two. Real helps wrap at words: 0.1-4 % of their
lines are at the widest."""


def help_trouble(text: str, flags: FlagSet, anchors: Sequence[str]) -> str:
    """Why a help text that :func:`parse_help` read is not to be trusted ('' when it is):
    too large, hard-wrapped (a flag may be cut in two, and refusing a configuration for a flag
    the help "lacks" would be a lie), or listing none of ``anchors`` — flags every build of
    the engine has (its port flag) — so it is another program's help or another layout."""
    if len(text) > MAX_HELP_CHARS:
        return f"{len(text):,} characters, past {MAX_HELP_CHARS:,}"
    widths = [len(line.rstrip()) for line in text.splitlines() if line.strip()]
    widest = max(widths, default=0)
    at_widest = sum(1 for w in widths if w == widest)
    if at_widest >= 5 and at_widest >= WRAP_SHARE * len(widths):
        return f"hard-wrapped at {widest} columns ({at_widest} of {len(widths)} lines)"
    if anchors and not any(flags.accepts(flag) for flag in anchors):
        return f"it lists none of {', '.join(anchors)}"
    return ""


def _names(line: str) -> tuple[list[str], str]:
    """The option names at the start of a help line and the description after them:
    names are comma-separated, each may carry a metavar (``N``, ``MODEL_PATH,``,
    ``[on|off]``); the first word that is neither a flag nor a metavar followed by a comma
    (or the second metavar) starts the description."""
    words = line.split()
    names: list[str] = []
    metavar = False
    for i, word in enumerate(words):
        name = word.rstrip(",")
        if _FLAG.fullmatch(name) and not name[1:].replace(".", "").isdigit():
            names.append(name)
            metavar = False
            continue
        if not names or metavar:
            return names, " ".join(words[i:])
        if word.endswith(","):
            continue  # MODEL_PATH, --model MODEL_PATH
        metavar = True
    return names, ""


def rendered_flags(config: ServerConfig) -> list[str]:
    """The flag words of ``config``'s command line after the launcher (``--flag=v`` as
    ``--flag``; values, negative numbers included, left out)."""
    from specconsole.core.config.render import launcher_argv, to_argv

    words = to_argv(config)[len(launcher_argv(config)) :]
    return [
        w.split("=", 1)[0]
        for w in words
        if w.startswith("-") and len(w) > 1 and not w[1:].replace(".", "").isdigit()
    ]


def removed_note(flags: FlagSet, flag: str) -> str:
    """What the help says of a removed flag ('' when it is not removed)."""
    return flags.removed.get(flag, "")


def flag_issues(config: ServerConfig, flags: FlagSet | None = None) -> list[Issue]:
    """Errors for every flag ``config``'s command line needs that the box's binary does not
    accept (``flags``, default ``config.box_flags``; none known: no findings). Each names the
    ``[server]`` key that renders the flag (``extra_args`` for a verbatim one) and the fix: the
    key to set instead when the help names the flag's new spelling."""
    from specconsole.core.engine.registry import engine_for

    flags = flags if flags is not None else config.box_flags
    if flags is None:
        return []
    engine = engine_for(config)
    modelled = dict(engine.modelled_flags)
    extra = {w.split("=", 1)[0] for w in config.extra_args if w.startswith("-")}
    where = f" ({flags.source})" if flags.source else ""
    issues: list[Issue] = []
    seen: set[str] = set()
    for flag in rendered_flags(config):
        if flags.accepts(flag) or flag in seen:
            continue
        seen.add(flag)
        key = "extra_args" if flag in extra else modelled.get(flag, "extra_args")
        note = removed_note(flags, flag)
        build = f"this {engine.title} build"
        if note:
            message = f"{build} removed {flag}: its --help says {note!r}{where}."
        else:
            message = f"{build} does not accept {flag}: its --help lists no such flag{where}."
        issues.append(Issue(key, Severity.ERROR, message, _fix(flag, key, note, modelled, flags)))
    fields = {f.name: f.flag for f in engine.option_fields}
    return issues + _choice_issues(config, flags, fields, f"this {engine.title} build", where)


def _choice_issues(
    config: ServerConfig, flags: FlagSet, fields: Mapping[str, str], build: str, where: str
) -> list[Issue]:
    """A value the box's help does not list for its flag (each part of a comma-separated
    list: llama.cpp's ``--spec-type`` takes several), naming the key and the listed values."""
    if not flags.choices:
        return []
    issues: list[Issue] = []
    for name, value in config.options:
        flag = fields.get(name, "")
        listed = flags.choices.get(flag)
        if not listed or not isinstance(value, str):
            continue
        unknown = [part for part in value.split(",") if part.strip() not in listed]
        if unknown:
            shown = ", ".join(listed)
            issues.append(
                Issue(
                    name,
                    Severity.ERROR,
                    f"{build}'s {flag} does not list {', '.join(map(repr, unknown))}: "
                    f"its --help lists {shown}{where}.",
                    f"set {name} to one of {shown}.",
                )
            )
    return issues


def _fix(flag: str, key: str, note: str, modelled: Mapping[str, str], flags: FlagSet) -> str:
    """The remedy: the ``[server]`` key of the flag the help names instead, else removal."""
    named = [m.group(1) for m in _FLAG.finditer(note) if m.group(1) != flag]
    for new in named:
        target = modelled.get(new)
        if target is not None and flags.accepts(new):
            if key == "extra_args":
                return (
                    f"set {target} instead (rendered as {new}) and remove {flag} from extra_args."
                )
            return f"use {new} for {target} (a newer llama.cpp engine package renders it)."
    if named:
        return f"use {' or '.join(named)} instead of {flag} (in extra_args)."
    if key == "extra_args":
        return f"remove {flag} from extra_args: the binary on the box does not know it."
    return (
        f"unset {key}: none of its spellings is accepted by the binary on the box "
        "(or install a build that has it)."
    )


_PY_FINGERPRINT = (
    "import importlib.util as u, os, sys\n"
    "s = u.find_spec(sys.argv[1].split('.')[0])\n"
    "root = os.path.dirname(s.origin)\n"
    "newest = max((os.path.getmtime(os.path.join(d, f)) for d, _, fs in os.walk(root)"
    " for f in fs if f.endswith('.py')), default=0)\n"
    "print(s.origin, newest)"
)


def python_fingerprint(launcher: Sequence[str]) -> str | None:
    """For a ``PYTHON -m MODULE`` launcher: a shell command printing the module's package
    and the time of its newest source file (an upgrade changes it), through the launcher's own
    interpreter; ``None`` for any other launcher."""
    words = list(launcher)
    if "-m" not in words[:-1] or not words[0].rsplit("/", 1)[-1].startswith("python"):
        return None
    module = words[words.index("-m") + 1]
    return shlex.join([words[0], "-c", _PY_FINGERPRINT, module])


def binary_fingerprint(program: str) -> str:
    """A shell command printing the sha256 of a native binary and the shared libraries next
    to it (llama-server is a small launcher over ``libllama-server-impl.so``)."""
    quoted = shlex.quote(program)
    return (
        f'b=$(command -v -- {quoted}) && b=$(readlink -f -- "$b") && '
        'cat -- "$b" "$(dirname -- "$b")"/lib*.so* 2>/dev/null | sha256sum'
    )
