"""Request headers for authenticated or customised servers, with the secrets kept out.

Why a module of its own: an API key must reach the server and nothing else — not the
records, not the plan copy, not the console or the table. So the key (``--api-key`` or
``[bench] api_key``) may be given as ``env:VAR`` and is read from the environment only when
the run starts; it becomes an ``Authorization: Bearer ...`` header of the load generator's
clients; and what a record keeps is :func:`header_names` — the names, never the values.
"""

from __future__ import annotations

import os
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


def parse_header(text: str) -> tuple[str, str]:
    """``"K: V"`` / ``"K:V"`` → ``("K", "V")``; ValueError naming ``--header`` otherwise."""
    name, sep, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not sep or not name or any(c in name for c in " \r\n") or "\n" in value or "\r" in value:
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
    return tuple(out)


def header_names(headers: tuple[tuple[str, str], ...]) -> list[str]:
    """What a record may say about the headers: their names."""
    return [name for name, _ in headers]
