"""Which environment values are secrets, and how they are kept out of every file and line.

Why: an ``env = { HF_TOKEN = "..." }`` value used to land in every session's records, the
plan copy, the unit and every backup on the box (issue 19). The rule lives here once:

* on the box, a *secret* variable (by name — :func:`is_secret_name` — or listed in
  ``[service] secret_env``) never goes inline into a unit; its value is written to an
  ``EnvironmentFile=`` with mode 0600 (:func:`env_file_text`);
* in everything specconsole writes here (records, the plan copy, reports, console and
  headless output, logs) *every* environment value is replaced by :data:`REDACTED`: the
  names stay, so a record still says which variables a trial set.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from specconsole.core.config.model import ServerConfig

REDACTED = "<redacted>"
"""What a record keeps instead of an environment value."""

_SECRET = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE|AUTH", re.I)
"""Environment names treated as secrets without being listed (``HF_TOKEN``,
``OPENAI_API_KEY``, ``AWS_SECRET_ACCESS_KEY``, ``WANDB_API_KEY``...)."""


def is_secret_name(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether the variable's value is a secret (by its name, or listed in ``extra``)."""
    return name in set(extra) or bool(_SECRET.search(name))


def split_secrets(
    env: Iterable[tuple[str, str]], extra: Iterable[str] = ()
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """``(public, secret)`` pairs of an environment, order kept."""
    listed = tuple(extra)
    public = tuple((n, v) for n, v in env if not is_secret_name(n, listed))
    secret = tuple((n, v) for n, v in env if is_secret_name(n, listed))
    return public, secret


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


def redact_config(config: ServerConfig) -> ServerConfig:
    """``config`` with every environment value replaced by :data:`REDACTED`."""
    return replace(config, env=redact_env(config.env)) if config.env else config


def unredact_config(config: ServerConfig, reference: Iterable[tuple[str, str]]) -> ServerConfig:
    """Put values back from ``reference`` (the plan's environment) where a record kept only
    the marker, so a reloaded trial is the same configuration as the one the plan proposes."""
    known = dict(reference)
    if not any(value == REDACTED for _name, value in config.env):
        return config
    env = tuple(
        (name, known.get(name, value) if value == REDACTED else value) for name, value in config.env
    )
    return replace(config, env=env)


def missing_values(config: ServerConfig) -> tuple[str, ...]:
    """Names whose value is still the marker (not stored, not supplied)."""
    return tuple(name for name, value in config.env if value == REDACTED)


_ASSIGNMENT_PREFIX = re.compile(r"""(?:Environment=|export\s+|-e\s+|^|\s)["']?([A-Za-z_]\w*)=""")


def redact_text(text: str, names: Iterable[str] = ()) -> str:
    """``text`` (a unit, a launch script, a docker command, their diff) with the value of
    every environment assignment replaced by :data:`REDACTED`: the ``names`` given plus any
    name assigned on an ``Environment=`` line, after ``export`` or after docker's ``-e``."""
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
    return text


def redact_plan_source(text: str, names: Iterable[str]) -> str:
    """A plan's TOML text with the values of ``names`` in it replaced by the marker
    (comments and layout kept): ``HF_TOKEN = "..."`` → ``HF_TOKEN = "<redacted>"``."""
    for name in names:
        n = re.escape(name)
        text = re.sub(
            rf"""(^|[\s{{,]){n}(\s*=\s*)(?:"(?:[^"\\\n]|\\.)*"|'[^'\n]*')""",
            rf'\g<1>{name}\g<2>"{REDACTED}"',
            text,
            flags=re.M,
        )
    return text
