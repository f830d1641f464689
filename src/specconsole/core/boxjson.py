"""JSON from the box's HTTP endpoints (``/server_info``, ``/version``), read strictly.

Why its own module: what these answers say decides the engine's release (the flags every later
trial is rendered with) and is recorded with each trial, and a real box answers them wrongly
by accident — a proxy's HTML error page, a body cut short, ``NaN`` (which Python's ``json``
accepts and no JSON allows), a number past a float's range (``1e400``: valid JSON that Python
reads as infinity), an answer nested thousands deep or megabytes long. Every reader of
such an answer goes through :func:`read_box_json`, which never raises: it returns the value or
the reason it is not trusted, and the caller records "unknown" with that reason instead of
guessing.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_JSON_CHARS", "read_box_json", "scalar"]

MAX_JSON_CHARS = 4 * 1024 * 1024
"""A longer answer is not read (SGLang's ``/server_info`` is a few KiB)."""
MAX_DEPTH = 32
"""Nesting past this is not an engine's answer."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"{literal[:40]} is past a float's range")
    return value


def _depth(value: Any, limit: int) -> bool:
    """Whether ``value`` nests deeper than ``limit`` (iterative: no recursion to exhaust)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


def read_box_json(text: Any) -> tuple[Any, str]:
    """(the decoded answer, '') or (None, why it is not trusted): not text, too long, an HTML
    page (a proxy), not JSON, ``NaN``/``Infinity`` or a number past a float's range, nested too
    deep. Never raises."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str):
        return None, f"not text ({type(text).__name__})"
    if len(text) > MAX_JSON_CHARS:
        return None, f"an answer of {len(text):,} characters, past {MAX_JSON_CHARS:,}"
    head = text.lstrip()[:200].lower()
    if head.startswith("<"):
        kind = "an HTML page" if "html" in head or head.startswith("<!") else "markup"
        return None, f"{kind}, not JSON (a proxy or another server answered)"
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        return None, "not JSON: nested too deep"
    except ValueError as exc:
        return None, f"not JSON ({str(exc).splitlines()[0][:120]})"
    if _depth(value, MAX_DEPTH):
        return None, f"nested more than {MAX_DEPTH} deep"
    return value, ""


def scalar(value: Any, *, max_chars: int = 200) -> str | int | float | bool | None:
    """``value`` when it is a plain figure a record can keep — a bool, a finite number, a
    string of at most ``max_chars`` printable characters — else None."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if abs(value) < 10**18 else None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str) and len(value) <= max_chars and value.isprintable():
        return value
    return None
