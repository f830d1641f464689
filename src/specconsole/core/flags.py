"""``--flag value`` words for a server's command line, shared by SGLang's and vLLM's renderers.

Why one place: both engines render modelled fields the same way — a field left unset
(``None``) is left out so the server's own default applies, and a float is written with
``repr`` (the shortest text that reads back to the same float) — and the parsers rely on
that round trip.
"""

from __future__ import annotations

from collections.abc import Iterable


def format_value(value: object) -> str:
    """A flag value as one argv word (``repr`` for floats, ``str`` otherwise)."""
    return repr(value) if isinstance(value, float) else str(value)


def flag_words(pairs: Iterable[tuple[str, object | None]]) -> list[str]:
    """``[flag, value, ...]`` for the pairs whose value is set, in order."""
    out: list[str] = []
    for flag, value in pairs:
        if value is not None:
            out += [flag, format_value(value)]
    return out
