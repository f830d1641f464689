"""Request headers for authenticated or customised servers, with the secrets kept out.

Why a module of its own: an API key must reach the server and nothing else — not the
records, not the plan copy, not the console or the table. So the key (``--api-key`` or
``[bench] api_key``) may be given as ``env:VAR`` and is read from the environment only when
the run starts; it becomes an ``Authorization: Bearer ...`` header of the load generator's
clients; and what a record keeps is :func:`header_names` — the names, never the values.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from specconsole.core.ports import BenchSpec

ENV_PREFIX = "env:"


def resolve_value(value: str, where: str, environ: Mapping[str, str] | None = None) -> str:
    """``env:VAR`` → the variable's value (ValueError naming it when unset), else ``value``."""
    if not value.startswith(ENV_PREFIX):
        return value
    name = value[len(ENV_PREFIX) :]
    env = os.environ if environ is None else environ
    if not name or name not in env:
        raise ValueError(f"{where}: environment variable {name or '(empty name)'} is not set")
    return env[name]


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
"""An HTTP header name (RFC 9110 token)."""


def header_problem(name: str, value: str, where: str) -> str:
    """'' when ``name: value`` can be sent as one header line; else why not (a line break
    would inject another header or end the request head; a non-Latin-1 character cannot be
    encoded)."""
    if not _TOKEN.match(name):
        return f"{where}: {name!r} is not a header name (letters, digits, '-'...)"
    bad = next((c for c in value if (ord(c) < 32 and c != "\t") or ord(c) == 127), None)
    if bad is not None:
        return f"{where}: the value of {name} contains the control character {bad!r}"
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return f"{where}: the value of {name} has characters HTTP headers cannot carry"
    return ""


def parse_header(text: str) -> tuple[str, str]:
    """``"K: V"`` / ``"K:V"`` → ``("K", "V")``; ValueError naming ``--header`` otherwise."""
    name, sep, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not sep or header_problem(name, value, "--header"):
        raise ValueError(f"--header: {text!r} is not NAME:VALUE, e.g. --header X-Team:tuning")
    return name, value


def request_headers(
    spec: BenchSpec, environ: Mapping[str, str] | None = None
) -> tuple[tuple[str, str], ...]:
    """Every extra header of ``spec``'s requests, secrets resolved (for the clients only)."""
    out = [(name, resolve_value(value, f"header {name}", environ)) for name, value in spec.headers]
    if spec.api_key:
        key = resolve_value(spec.api_key, "api_key", environ)
        if not key:
            raise ValueError("api_key: the key is empty")
        out = [(n, v) for n, v in out if n.lower() != "authorization"]
        out.append(("Authorization", f"Bearer {key}"))
    for name, value in out:  # resolved values too: the environment is input as well
        if problem := header_problem(
            name, value, "api_key" if name == "Authorization" else "header"
        ):
            raise ValueError(problem)  # names the header, never the value
    return tuple(out)


def header_names(headers: tuple[tuple[str, str], ...]) -> list[str]:
    """What a record may say about the headers: their names."""
    return [name for name, _ in headers]
