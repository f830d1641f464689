"""Edit the user's own systemd unit instead of replacing it.

Why: a GPU box's ``sglang.service`` carries things the console knows nothing about —
``User=``, ``EnvironmentFile=``, limits, ordering, comments, drop-ins. Regenerating the whole
file on the first deploy silently loses them (issue 19). So a deploy changes only what the
configuration manages:

* the words of ``ExecStart=`` that differ — the launcher when it changed, and each flag whose
  value changed (in place, in the user's spelling: ``--tp 2`` stays ``--tp``, ``--port=1``
  stays inline), flags the configuration dropped, and new flags appended; untouched flags keep
  their exact bytes, continuation lines and indentation included;
* the ``Environment=`` assignments of the variables the configuration names (a variable only
  the unit sets is the user's and stays);
* secret variables (:func:`specconsole.core.config.secrets.is_secret_name`, or listed in
  ``[service] secret_env``): never inline; their values go to a separate
  ``EnvironmentFile=`` the backend writes with mode 0600, and an inline assignment of the
  same name is removed.

Every other line stays byte for byte. The result is parsed back (:func:`parse_unit`) and must
give the configuration's command line and environment, else the whole ``ExecStart`` block is
re-rendered (still leaving every other line alone); this module never returns a unit that
runs something else than the configuration. Pure text in, text out: the systemd backend reads
and writes the files.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.render import exec_words
from specconsole.core.config.secrets import (
    by_reference,
    env_file_text,
    is_secret_flag,
    split_secrets,
)
from specconsole.core.launch.systemd import (
    _HEADER,
    UnitOptions,
    _exec_lines,
    parse_unit,
    systemd_quote,
    systemd_split,
    to_unit,
)
from specconsole.core.launch.unit_exec import Rerender, decode_word, edit_exec, word_spans
from specconsole.core.launch.unit_parse import read_settings, unit_entries
from specconsole.core.launch.unit_read import (
    UnitContext,
    specifier_values,
    split_cat,
    unit_lines,
)

__all__ = ["UnitEdit", "edit_unit", "generate_unit", "is_generated", "split_cat", "word_spans"]


# ---------------------------------------------------------------------------------------------
# The whole unit
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UnitEdit:
    """A unit edited to run a configuration, and the secret ``EnvironmentFile=`` it reads."""

    text: str
    env_file: str | None
    """Body of the 0600 environment file with the secret values; None when there are none."""


def _key(line: str) -> str:
    return line.partition("=")[0].strip() if "=" in line else ""


def _sections(lines: list[str]) -> list[str]:
    out: list[str] = []
    section = ""
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1]
        out.append(section)
    return out


def _exec_block(lines: list[str], sections: list[str]) -> tuple[int, int]:
    """[start, end) of the last ``ExecStart=`` setting in ``[Service]`` (continuations too)."""
    found: tuple[int, int] | None = None
    i = 0
    while i < len(lines):
        if (
            sections[i] == "Service"
            and _key(lines[i]) == "ExecStart"
            and lines[i].split("=", 1)[1].strip()
        ):
            start = i
            while lines[i].rstrip("\r\n").endswith("\\") and i + 1 < len(lines):
                i += 1
            found = (start, i + 1)
        i += 1
    if found is None:
        raise ConfigError(
            "ExecStart", "the unit has no ExecStart= in [Service].", "point at the service's unit."
        )
    return found


def _env_words(line: str) -> list[tuple[tuple[int, int], str, str]]:
    """(span, name, value) of each assignment in one ``Environment=`` line."""
    body = line.rstrip("\r\n")
    eq = body.index("=") + 1
    out = []
    for s, e in word_spans(body[eq:]):
        name, sep, val = decode_word(body[eq + s : eq + e]).partition("=")
        if sep and name:
            out.append(((eq + s, eq + e), name, val.replace("%%", "%")))
    return out


def _edit_env_line(line: str, changes: dict[str, str | None]) -> str | None:
    """``line`` with assignments replaced (str) or removed (None); None if none is left."""
    body = line.rstrip("\r\n")
    newline = line[len(body) :]
    words = _env_words(line)
    kept = [w for w in words if changes.get(w[1], "") is not None]
    if not kept:
        return None
    out, pos = "", 0
    for (s, e), name, _value in words:
        if name not in changes:
            continue
        new = changes[name]
        if new is None:
            out += body[pos:s].rstrip(" \t") if out or pos else body[pos:s]
        else:
            out += body[pos:s] + systemd_quote(f"{name}={new}", dollar=False)
        pos = e
    out += body[pos:]
    return out + newline


def _dropin_env(dropins: str) -> dict[str, str]:
    env: dict[str, str] = {}
    for section, key, value in unit_entries(dropins):
        if section == "Service" and key == "Environment":
            if not value:
                env.clear()
            for word in systemd_split(value):
                name, sep, val = word.partition("=")
                if sep and name:
                    env[name] = val.replace("%%", "%")
    return env


def _assemble(
    lines: list[str],
    config: ServerConfig,
    block: tuple[int, int],
    exec_text: str,
    env_file_path: str,
    secret_env: tuple[str, ...],
    dropins: str,
) -> tuple[str, str | None]:
    sections = _sections(lines)
    public, secret = split_secrets(config.env, secret_env)
    secret_names = {name for name, _ in secret}
    wanted = dict(public)
    service_env = [
        i
        for i in range(len(lines))
        if sections[i] == "Service"
        and not block[0] <= i < block[1]
        and _key(lines[i]) == "Environment"
        and not lines[i].rstrip("\r\n").endswith("\\")
    ]
    last_seen: dict[str, int] = {}
    for i in service_env:
        for _span, name, _value in _env_words(lines[i]):
            last_seen[name] = i
    per_line: dict[int, dict[str, str | None]] = {}
    for i in service_env:
        for _span, name, value in _env_words(lines[i]):
            if name in secret_names:
                per_line.setdefault(i, {})[name] = None
            elif name in wanted and last_seen[name] == i and value != wanted[name]:
                per_line.setdefault(i, {})[name] = wanted[name]
    from_dropins = _dropin_env(dropins)
    added = [
        f"Environment={systemd_quote(f'{name}={value}', dollar=False)}\n"
        for name, value in public
        if name not in last_seen and from_dropins.get(name) != value
    ]
    ours = [
        i
        for i in range(len(lines))
        if sections[i] == "Service"
        and _key(lines[i]) == "EnvironmentFile"
        and lines[i].split("=", 1)[1].strip().lstrip("-") == env_file_path
    ]
    if secret and not ours:
        added.append(f"EnvironmentFile={env_file_path}\n")
    drop = set(ours) if not secret else set()
    anchors = [
        i
        for i in range(len(lines))
        if sections[i] == "Service"
        and not block[0] <= i < block[1]
        and _key(lines[i]) in ("Environment", "EnvironmentFile")
    ]
    anchor = max(anchors) if anchors else None
    out: list[str] = []
    for i, line in enumerate(lines):
        if anchor is None and i == block[0]:
            out += added
        if i == block[0]:
            out.append(exec_text)
        if block[0] <= i < block[1] or i in drop:
            continue
        if i in per_line:
            edited = _edit_env_line(line, per_line[i])
            if edited is not None:
                out.append(edited)
        else:
            out.append(line)
        if i == anchor:
            if added and not out[-1].endswith("\n"):
                out[-1] += "\n"
            out += added
    return "".join(out), env_file_text(secret) if secret else None


def _runs(
    text: str,
    dropins: str,
    config: ServerConfig,
    secret_env: tuple[str, ...],
    context: UnitContext,
) -> bool:
    """Whether ``text`` (with the drop-ins) runs ``config``: the same command line (flag
    order aside; a secret flag only the unit sets is the user's) and the configuration's
    public environment. ``context`` holds the environment file about to be written."""
    try:
        parsed = parse_unit(text + "\n" + dropins, context)
    except ConfigError:
        return False
    parsed = replace(parsed, extra_args=_without_unnamed_secrets(parsed.extra_args, config))

    def shape(c: ServerConfig) -> ServerConfig:
        # engine_version picks the flag names but is not on the command line: a unit
        # never parses back with it, so a detected release must not fail the edit.
        return replace(
            c,
            engine_version=None,
            env=(),
            user=None,
            working_directory=None,
            description="",
            extra_args=tuple(sorted(c.extra_args)),
        )

    if shape(parsed) != shape(config):
        return False
    env = dict(parsed.env)
    public, _secret = split_secrets(config.env, secret_env)
    return all(env.get(name) == value for name, value in public)


def edit_unit(
    current: str,
    config: ServerConfig,
    *,
    env_file_path: str,
    secret_env: tuple[str, ...] = (),
    dropins: str = "",
    context: UnitContext | None = None,
) -> UnitEdit:
    """``current`` changed only where ``config`` manages it (see the module docstring).

    ``dropins`` is the text of the unit's drop-ins (``systemctl cat``): variables they set to
    the wanted value are not added again. ``context`` resolves what the unit's text alone does
    not (specifiers, ``EnvironmentFile=`` variables): a word whose value is the configuration's
    stays as the user wrote it (``%h/models``, ``$MODEL``). Raises :class:`ConfigError` when
    no unit running ``config`` can be made from ``current`` (no ExecStart, two of them, a
    variable that cannot be known, a drop-in replacing ExecStart).
    """
    context = context or UnitContext()
    lines = unit_lines(current, keepends=True)
    block = _exec_block(lines, _sections(lines))
    block_text = "".join(lines[block[0] : block[1]])
    parse_unit(current + "\n" + dropins, context)  # refuses what systemd would not run
    # secret flags by reference: ``--api-key ${SPECCONSOLE_API_KEY}``, the value in the file
    ref, flag_secrets = by_reference(config, secret_env)
    names = tuple(name for name, _value in flag_secrets)
    held = replace(ref, env=(*ref.env, *flag_secrets))  # what the unit and its file hold
    env = _edit_environment(current + "\n" + dropins, context, skip=names)
    try:
        exec_text = edit_exec(block_text, ref, env)
    except Rerender:
        exec_text = None
    for attempt in (exec_text, None):
        if attempt is None:
            head, flags = exec_words(ref)
            attempt = "\n".join(_exec_lines(head, flags)) + "\n"
        attempt = _references(attempt, names)
        text, env_file = _assemble(
            lines, held, block, attempt, env_file_path, (*secret_env, *names), dropins
        )
        written = {**context.env_files, env_file_path: env_file or ""}
        if _runs(text, dropins, config, secret_env, replace(context, env_files=written)):
            return UnitEdit(text, env_file)
    raise ConfigError(
        "ExecStart",
        "the unit cannot be edited to run this configuration (a drop-in may set ExecStart=).",
        'remove the drop-in\'s ExecStart=, or set [service] template = "generate".',
    )


def _edit_environment(
    text: str, context: UnitContext, skip: tuple[str, ...] = ()
) -> dict[str, str]:
    """What decodes the unit's ExecStart words for the edit: its variables (``Environment=``,
    then readable ``EnvironmentFile=`` files) and its specifiers (as ``"%h"`` keys); the
    ``skip`` variables (secret flags' references) stay references, as the new words are."""
    settings = read_settings(text, context)
    from_files, _unread = settings.file_environment(context)
    specifiers = {f"%{letter}": value for letter, value in specifier_values(context).items()}
    env = {**specifiers, **settings.environment, **from_files}
    return {name: value for name, value in env.items() if name not in skip}


def _without_unnamed_secrets(args: tuple[str, ...], config: ServerConfig) -> tuple[str, ...]:
    """``args`` without the secret flags (and their values) ``config`` does not name."""
    named = {w.partition("=")[0] for w in config.extra_args if w.startswith("-")}
    out: list[str] = []
    skip = False
    for i, word in enumerate(args):
        if skip:
            skip = False
            continue
        flag = word.partition("=")[0]
        if word.startswith("-") and is_secret_flag(flag) and flag not in named:
            skip = "=" not in word and i + 1 < len(args) and not args[i + 1].startswith("-")
            continue
        out.append(word)
    return tuple(out)


def _references(text: str, names: tuple[str, ...]) -> str:
    """A rendered unit with the secret flags' references as systemd must read them:
    ``systemd_quote`` escapes ``$`` (``$${SPECCONSOLE_API_KEY}``), a reference must stay one."""
    for name in names:
        text = text.replace(f"$${{{name}}}", f"${{{name}}}")
    return text


def is_generated(text: str) -> bool:
    """Whether specconsole generated this unit (its header line): it is replaced whole."""
    return text.startswith(_HEADER)


def generate_unit(
    config: ServerConfig,
    options: UnitOptions | None = None,
    *,
    env_file_path: str,
    secret_env: tuple[str, ...] = (),
) -> UnitEdit:
    """A whole unit for ``config`` (:func:`to_unit`), its secrets — variables and secret
    flags' values, by reference — in ``env_file_path``."""
    ref, flag_secrets = by_reference(config, secret_env)
    public, secret = split_secrets(ref.env, secret_env)
    secret = (*secret, *flag_secrets)
    text = _references(
        to_unit(replace(ref, env=public), options), tuple(n for n, _ in flag_secrets)
    )
    if secret:
        text = text.replace("\nExecStart=", f"\nEnvironmentFile={env_file_path}\nExecStart=", 1)
    return UnitEdit(text, env_file_text(secret) if secret else None)
