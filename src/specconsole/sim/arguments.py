"""What every face's reading of a command line shares: the values it parsed, the flags it
kept without physics for them, and a refusal in the engine's own words.

Why shared: each face parses its engine's command line its own way (SGLang's
flags, ``vllm serve MODEL``), but the process (:mod:`specconsole.sim.process`) handles what
comes out alike — a :class:`ParsedArgs` to resolve, or a :class:`SimArgError` the face prints
as its engine prints a refusal. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ParsedArgs", "SimArgError", "split_unknown"]


class SimArgError(ValueError):
    """A launch argument the imitated engine itself would refuse; the message is the
    engine's (or as close)."""

    def __init__(self, message: str, exception_type: str = "ValueError") -> None:
        super().__init__(message)
        self.exception_type = exception_type
        """The Python exception class the engine raises (``ValueError``, ``AssertionError``,
        pydantic's ``ValidationError``...)."""


@dataclass(frozen=True, slots=True)
class ParsedArgs:
    """Flag values as given (``None`` = not set) plus unrecognised flags."""

    values: Mapping[str, Any]
    unknown: Mapping[str, Any] = field(default_factory=dict)


def _flag_to_key(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def split_unknown(unknown: Sequence[str]) -> dict[str, Any]:
    """Turn leftover ``--flag [value]`` tokens into ``{flag_name: value}`` (True if bare)."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(unknown):
        tok = unknown[i]
        if tok.startswith("--"):
            if "=" in tok:
                name, value = tok.split("=", 1)
                out[_flag_to_key(name)] = value
            elif i + 1 < len(unknown) and not unknown[i + 1].startswith("--"):
                out[_flag_to_key(tok)] = unknown[i + 1]
                i += 1
            else:
                out[_flag_to_key(tok)] = True
        else:
            out.setdefault("_positional", []).append(tok)
        i += 1
    return out
