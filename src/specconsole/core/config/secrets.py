"""Which values are secrets, and how they are kept out of every file and line.

Why: an ``env = { HF_TOKEN = "..." }`` value used to land in every session's records, the
plan copy, the unit and every backup on the box (issue 19); a server's ``--api-key`` in
``extra_args`` still did (issue 27 #1, #2). The rule lives here once. A value is *secret*
when

* its variable's name looks secret (:func:`is_secret_name`: ``*TOKEN*``, ``*API_KEY*``,
  ``*PASSWORD*``, ``*_KEY``…),
* its flag is known-secret (:func:`is_secret_flag`: ``--api-key``, ``--admin-api-key``,
  ``--hf-token``, any flag ending in ``-key``, ``-token``, ``-password``, ``-secret``…),
* the user marks it (``[service] secret_env`` names variables and ``--flags``), or
* the value itself looks like a credential (:func:`looks_like_credential`: ``hf_…``,
  ``sk-…``, ``ghp_…``, ``AKIA…``, a JWT, a PEM private key).

Where it goes:

* on the box it is never inline in a unit: a secret variable's value, and a secret flag's
  (``--api-key ${SPECCONSOLE_API_KEY}``, :func:`flag_variable`), are written to an
  ``EnvironmentFile=`` with mode 0600 (:func:`env_file_text`);
* everything specconsole writes or prints here — records, the plan copy, reports, diffs,
  argv, console and headless output, logs — keeps a reference, never the value: records keep
  *every* environment value as :data:`REDACTED` (the names stay, so a record still says which
  variables a trial set; the session's plan copy is their reference) and every secret flag's
  value as :data:`REDACTED`; the plan copy keeps the non-secret values a resume needs and
  replaces the secret ones; ``resume`` takes them from the shell (the variable's own name, or
  :func:`flag_variable` for a flag) or names what to export.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from specconsole.core.config.model import ServerConfig

REDACTED = "<redacted>"
"""What a record keeps instead of a secret (and of any environment value)."""

_SECRET = re.compile(
    r"TOKEN(?!IZ)|SECRET|PASSW|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE|AUTH|(?:^|_)KEY(?:$|_)|"
    r"(?:^|_)PASS(?:$|_)|(?:^|_)PWD$",
    re.I,
)
"""Environment names treated as secrets without being listed (``HF_TOKEN``,
``OPENAI_API_KEY``, ``AWS_SECRET_ACCESS_KEY``, ``WANDB_KEY``, ``DB_PASS``...). A tokenizer's
setting (``TOKENIZERS_PARALLELISM``, which every vLLM unit sets) names no token: kept."""
_NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})
"""Shell variables that match the pattern but hold no secret (the working directory)."""

SECRET_FLAG_WORDS = frozenset(
    {"key", "apikey", "token", "password", "passwd", "passphrase", "secret", "credentials"}
)
"""A flag whose last word (``--admin-api-key`` → ``key``) is one of these takes a secret."""

_CREDENTIAL = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{30,}|"
    r"github_pat_[A-Za-z0-9_]{30,}|glpat-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|"
    r"AKIA[0-9A-Z]{16}|eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)
"""Values that are credentials whatever names them (Hugging Face, OpenAI-style, GitHub,
GitLab, Slack, AWS access keys, JWTs, PEM private keys)."""


def is_secret_name(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether the variable's value is a secret (by its name, or listed in ``extra``)."""
    if name in set(extra):
        return True
    return name not in _NOT_SECRET_NAMES and bool(_SECRET.search(name))


def is_secret_flag(flag: str, extra: Iterable[str] = ()) -> bool:
    """Whether ``--flag``'s value is a secret: known-secret (its last word), or listed in
    ``extra`` (``[service] secret_env`` entries starting with ``--``)."""
    name = flag.partition("=")[0]
    if not name.startswith("-"):
        return False
    if name in set(extra):
        return True
    words = re.split(r"[-_]+", name.strip("-").lower())
    return bool(words) and words[-1] in SECRET_FLAG_WORDS


def looks_like_credential(value: str) -> bool:
    """Whether ``value`` contains a well-known credential format."""
    return bool(_CREDENTIAL.search(value))


def flag_variable(flag: str) -> str:
    """The variable that carries a secret flag's value — in the box's 0600 environment file
    (``--api-key ${SPECCONSOLE_API_KEY}``) and in the shell a ``resume`` reads it from."""
    return "SPECCONSOLE_" + re.sub(r"[^A-Za-z0-9]+", "_", flag.strip("-")).upper()


def secret_flag_positions(args: Sequence[str], extra: Iterable[str] = ()) -> list[int]:
    """Indexes of the words of ``args`` that hold a secret value: the word after a secret
    flag (``--api-key VALUE``), a secret flag's inline value (``--api-key=VALUE``) or a word
    that looks like a credential."""
    listed = tuple(extra)
    out: list[int] = []
    for i, word in enumerate(args):
        name, eq, _value = word.partition("=")
        inline = bool(eq) and is_secret_flag(name, listed)
        after = (
            i > 0
            and "=" not in args[i - 1]
            and is_secret_flag(args[i - 1], listed)
            and not word.startswith("--")
        )
        if inline or after or looks_like_credential(word):
            out.append(i)
    return out


def redact_args(args: Sequence[str], extra: Iterable[str] = ()) -> tuple[str, ...]:
    """``args`` with every secret value (:func:`secret_flag_positions`) as :data:`REDACTED`."""
    out = list(args)
    for i in secret_flag_positions(args, extra):
        name, eq, _value = out[i].partition("=")
        out[i] = f"{name}={REDACTED}" if eq and name.startswith("-") else REDACTED
    return tuple(out)


def drop_secret_flags(
    args: Sequence[str], extra: Iterable[str] = ()
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(``args`` without its secret flags and their values, the flags left out): what a plan
    imported from a unit keeps — the unit keeps the rest (a deploy leaves a secret flag the
    configuration does not name as it is, like a variable)."""
    listed = tuple(extra)
    positions = set(secret_flag_positions(args, listed))
    kept: list[str] = []
    dropped: list[str] = []
    for i, word in enumerate(args):
        flag = word.partition("=")[0]
        if i in positions:
            if "=" in word and flag.startswith("-"):
                dropped.append(flag)
            continue
        if word.startswith("-") and i + 1 in positions and "=" not in word:
            dropped.append(word)
            continue
        kept.append(word)
    return tuple(kept), tuple(dropped)


def split_secrets(
    env: Iterable[tuple[str, str]], extra: Iterable[str] = ()
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """``(public, secret)`` pairs of an environment, order kept (a credential-looking value
    is secret whatever its name)."""
    listed = tuple(extra)

    def secret(name: str, value: str) -> bool:
        return is_secret_name(name, listed) or looks_like_credential(value)

    pairs = tuple(env)
    return (
        tuple((n, v) for n, v in pairs if not secret(n, v)),
        tuple((n, v) for n, v in pairs if secret(n, v)),
    )


def by_reference(
    config: ServerConfig, extra: Iterable[str] = ()
) -> tuple[ServerConfig, tuple[tuple[str, str], ...]]:
    """``config`` with each secret flag's value replaced by a reference ``${VARIABLE}``
    (:func:`flag_variable`), and the (variable, value) pairs the box's environment file must
    hold for them. A value that is already a reference or the marker is left as it is."""
    args = list(config.extra_args)
    pairs: list[tuple[str, str]] = []
    for i in secret_flag_positions(args, extra):
        name, eq, value = args[i].partition("=")
        flag = name if eq and name.startswith("-") else (args[i - 1] if i else "--secret")
        value = value if eq and name.startswith("-") else args[i]
        if value == REDACTED or value.startswith("${"):
            continue
        variable = flag_variable(flag)
        pairs.append((variable, value))
        args[i] = f"{name}=${{{variable}}}" if eq and name.startswith("-") else f"${{{variable}}}"
    if not pairs:
        return config, ()
    return replace(config, extra_args=tuple(args)), tuple(pairs)


MIN_SCRUBBED = 6
"""Shortest secret value scrubbed from free text by its value (shorter ones would mangle
ordinary words and numbers; a key that short is not a secret)."""


def secret_values(config: ServerConfig, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The secret values ``config`` holds (secret variables', secret flags'), longest first:
    what :func:`scrub` takes out of free text — server logs echo their arguments (SGLang's
    ``server_args=ServerArgs(... api_key='...')``), errors quote them."""
    listed = tuple(extra)
    values = [value for _name, value in split_secrets(config.env, listed)[1]]
    args = config.extra_args
    for i in secret_flag_positions(args, listed):
        name, eq, value = args[i].partition("=")
        values.append(value if eq and name.startswith("-") else args[i])
    found = {v for v in values if len(v) >= MIN_SCRUBBED and v != REDACTED}
    return tuple(sorted(found, key=len, reverse=True))


def scrub(text: str, values: Iterable[str] = ()) -> str:
    """Free text (a log line, an error, an excerpt) with each of ``values`` and every
    credential-looking word replaced by :data:`REDACTED`."""
    for value in values:
        if value in text:
            text = text.replace(value, REDACTED)
    return _CREDENTIAL.sub(REDACTED, text)


def env_file_text(pairs: Iterable[tuple[str, str]]) -> str:
    """An ``EnvironmentFile=`` body (``NAME='value'``, systemd's shell-like quoting)."""
    lines = ["# Written by specconsole: secret environment of the service (mode 0600)."]
    for name, value in pairs:
        if "'" not in value and "\n" not in value:
            lines.append(f"{name}='{value}'")
        else:
            escaped = re.sub(r'(["\\$`])', r"\\\1", value).replace("\n", "\\n")
            lines.append(f'{name}="{escaped}"')
    return "\n".join(lines) + "\n"


def redact_env(env: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """The same names, every value replaced by :data:`REDACTED`."""
    return tuple((name, REDACTED) for name, _value in env)


def redact_config(config: ServerConfig, extra: Iterable[str] = ()) -> ServerConfig:
    """``config`` as a record keeps it: every environment value and every secret flag's
    value replaced by :data:`REDACTED`."""
    args = redact_args(config.extra_args, extra)
    if not config.env and args == tuple(config.extra_args):
        return config
    return replace(config, env=redact_env(config.env), extra_args=args)


def unredact_config(
    config: ServerConfig, reference: Iterable[tuple[str, str]], args: Sequence[str] = ()
) -> ServerConfig:
    """Put values back from ``reference`` (the plan's environment) and ``args`` (the plan's
    ``extra_args``) where a record kept only the marker, so a reloaded trial is the same
    configuration as the one the plan proposes."""
    known = dict(reference)
    env = config.env
    if any(value == REDACTED for _name, value in env):
        env = tuple((n, known.get(n, v) if v == REDACTED else v) for n, v in env)
    extra = tuple(config.extra_args)
    if REDACTED in extra or any(w.endswith("=" + REDACTED) for w in extra):
        extra = _unredact_args(extra, tuple(args))
    if env == config.env and extra == tuple(config.extra_args):
        return config
    return replace(config, env=env, extra_args=extra)


def _flag_values(args: Sequence[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for i, word in enumerate(args):
        name, eq, value = word.partition("=")
        if eq and name.startswith("-"):
            values[name] = value
        elif i and args[i - 1].startswith("-") and "=" not in args[i - 1]:
            values[args[i - 1]] = word
    return values


def _unredact_args(args: Sequence[str], reference: Sequence[str]) -> tuple[str, ...]:
    known = {k: v for k, v in _flag_values(reference).items() if v != REDACTED}
    out = list(args)
    for i, word in enumerate(out):
        name, eq, value = word.partition("=")
        if eq and name.startswith("-") and value == REDACTED and name in known:
            out[i] = f"{name}={known[name]}"
        elif word == REDACTED and i and out[i - 1] in known:
            out[i] = known[out[i - 1]]
    return tuple(out)


def fill_from_environ(config: ServerConfig, environ: Mapping[str, str]) -> ServerConfig:
    """Markers replaced by the shell's values: a variable by its own name, a secret flag by
    :func:`flag_variable` (what ``resume`` reads; a missing one stays the marker)."""
    get = environ.get
    env = tuple((n, get(n, v) if v == REDACTED else v) for n, v in config.env)
    out = list(config.extra_args)
    for i, word in enumerate(out):
        name, eq, value = word.partition("=")
        if eq and name.startswith("-") and value == REDACTED:
            found = get(flag_variable(name))
            out[i] = word if found is None else f"{name}={found}"
        elif word == REDACTED and i and out[i - 1].startswith("-"):
            out[i] = get(flag_variable(out[i - 1]), word)
    return replace(config, env=env, extra_args=tuple(out))


def missing_values(config: ServerConfig) -> tuple[str, ...]:
    """What still holds the marker (not stored, not supplied): variable names, and for a
    secret flag the variable :func:`flag_variable` names (what to export)."""
    names = [name for name, value in config.env if value == REDACTED]
    args = config.extra_args
    for i, word in enumerate(args):
        name, eq, value = word.partition("=")
        if eq and name.startswith("-") and value == REDACTED:
            names.append(flag_variable(name))
        elif word == REDACTED and i and args[i - 1].startswith("-"):
            names.append(flag_variable(args[i - 1]))
    return tuple(names)


_ASSIGNMENT_PREFIX = re.compile(r"""(?:Environment=|export\s+|-e\s+|^|\s)["']?([A-Za-z_]\w*)=""")
_FLAG_VALUE = re.compile(
    r"""(?P<flag>--?[A-Za-z][\w-]*)(?P<sep>=|(?:[ \t]|\\\r?\n)+)"""
    r"""(?P<value>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s"'\\]+)"""
)


def redact_text(text: str, names: Iterable[str] = (), flags: Iterable[str] = ()) -> str:
    """``text`` (a unit, a launch script, a docker command, an argv, their diff) with every
    secret replaced by :data:`REDACTED`: the value of every environment assignment (the
    ``names`` given plus any name assigned on an ``Environment=`` line, after ``export`` or
    after docker's ``-e``), the value after each secret flag (``--api-key VALUE``,
    ``--api-key=VALUE``, across a line continuation; ``flags`` marks more), and any
    credential-looking word."""
    found = set(names)
    for line in text.splitlines():
        body = line.lstrip("+- ")
        if body.startswith(("Environment=", "export ", "-e ")) or " -e " in body:
            found |= set(re.findall(r"""(?:^|[\s="'])([A-Za-z_]\w*)=""", body.split("=", 1)[1]))
            found |= {m.group(1) for m in _ASSIGNMENT_PREFIX.finditer(body)}
    found.discard("Environment")
    for name in sorted(found, key=len, reverse=True):
        n = re.escape(name)
        text = re.sub(rf'"{n}=(?:[^"\\\n]|\\.)*"', f'"{name}={REDACTED}"', text)
        text = re.sub(rf"'{n}=[^'\n]*'", f"'{name}={REDACTED}'", text)
        text = re.sub(
            rf"""(?<![\w"'<]){n}=(?!{re.escape(REDACTED)})(?:"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s"']*)""",
            f"{name}={REDACTED}",
            text,
        )
    listed = tuple(flags)

    def flag(match: re.Match[str]) -> str:
        value = match.group("value")
        if not is_secret_flag(match.group("flag"), listed) or value.startswith(("-", "${")):
            return match.group(0)
        return f"{match.group('flag')}{match.group('sep')}{REDACTED}"

    text = _FLAG_VALUE.sub(flag, text)
    return _CREDENTIAL.sub(REDACTED, text)


def redact_plan_source(text: str, names: Iterable[str], flags: Iterable[str] = ()) -> str:
    """A plan's TOML text with the values of ``names`` in it replaced by the marker
    (comments and layout kept): ``HF_TOKEN = "..."`` → ``HF_TOKEN = "<redacted>"``; the string
    after each secret flag in an array (``"--api-key", "..."``, ``"--api-key=..."``) and every
    credential-looking string too."""
    for name in names:
        n = re.escape(name)
        text = re.sub(
            rf"""(^|[\s{{,]){n}(\s*=\s*)(?:"(?:[^"\\\n]|\\.)*"|'[^'\n]*')""",
            rf'\g<1>{name}\g<2>"{REDACTED}"',
            text,
            flags=re.M,
        )
    listed = tuple(flags)
    string = r""""(?:[^"\\\n]|\\.)*"|'[^'\n]*'"""

    def pair(match: re.Match[str]) -> str:
        flag = match.group("flag")[1:-1]
        if not is_secret_flag(flag, listed):
            return match.group(0)
        return f'{match.group("flag")}{match.group("sep")}"{REDACTED}"'

    text = re.sub(rf"(?P<flag>{string})(?P<sep>\s*,\s*)(?P<value>{string})", pair, text)

    def inline(match: re.Match[str]) -> str:
        flag = match.group("flag")
        return f'"{flag}={REDACTED}"' if is_secret_flag(flag, listed) else match.group(0)

    text = re.sub(r"""["'](?P<flag>--?[A-Za-z][\w-]*)=(?:[^"'\\\n]|\\.)*["']""", inline, text)
    return _CREDENTIAL.sub(REDACTED, text)
