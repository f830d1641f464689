"""argparse types for numbers, URLs and output files, bounded like a plan's values.

Why: ``specconsole bench`` had looser checks than the plan's ``[bench]`` (issue 27: ``--ladder
1000000`` ran until killed, ``--duration inf``, ``--temperature nan``, ``--output-len 1e13``,
``http://127.0.0.1:99999`` a traceback). Every option here reads through the same bounds as
the plan (:data:`specconsole.core.config.bounds.BENCH_BOUNDS`) and the same URL rule
(:func:`specconsole.core.config.inputs.url_problem`), so a value refused in a plan is refused
on the command line, with the option's name and the fix, as a usage error (exit 2) — never a
traceback. Output files are checked before any work is done, so a benchmark is not run for an
hour to fail on ``--output-file DIR`` at the end.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from specconsole.core.config.bounds import (
    BENCH_BOUNDS,
    MAX_LADDER_LEVELS,
    Bound,
    parse_bounded,
)
from specconsole.core.config.inputs import url_problem

__all__ = [
    "bench_number",
    "bounded_number",
    "ladder",
    "output_file_problem",
    "percentiles",
    "server_url",
]


def bounded_number(bound: Bound, option: str) -> Callable[[str], int | float]:
    """An argparse ``type``: the text as a number within ``bound``, or a usage error naming
    ``option`` and the fix."""

    def parse(text: str) -> int | float:
        try:
            return parse_bounded(text, bound, option)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def bench_number(field: str, option: str) -> Callable[[str], int | float]:
    """:func:`bounded_number` for a ``BenchSpec`` field (the plan's bound for it)."""
    return bounded_number(BENCH_BOUNDS[field], option)


def _number_list(text: str, option: str, bound: Bound, most: int) -> tuple[int | float, ...]:
    parts = [part for part in text.split(",") if part.strip()]
    if not parts:
        raise argparse.ArgumentTypeError(f"{option} {text!r}: give comma-separated values")
    if len(parts) > most:
        raise argparse.ArgumentTypeError(
            f"{option} has {len(parts)} values, above the limit of {most}; fix: keep the "
            "ones that matter"
        )
    try:
        return tuple(parse_bounded(part, bound, option) for part in parts)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def ladder(text: str) -> tuple[int, ...]:
    """``--ladder 1,4,16``: concurrencies within the plan's bound, at most
    :data:`MAX_LADDER_LEVELS` of them."""
    levels = _number_list(text, "--ladder", BENCH_BOUNDS["ladder"], MAX_LADDER_LEVELS)
    return tuple(int(level) for level in levels)


def percentiles(text: str) -> tuple[float, ...]:
    """``--percentiles 50,90,99.9``: each above 0 and below 100."""
    values = _number_list(text, "--percentiles", BENCH_BOUNDS["percentiles"], 32)
    if any(q >= 100 for q in values):
        raise argparse.ArgumentTypeError(
            f"--percentiles {text!r}: each percentile must be below 100, e.g. 50,90,99.9"
        )
    return tuple(float(q) for q in values)


def server_url(text: str) -> str:
    """A server base URL (``http://HOST:PORT``), checked by ``url_problem``."""
    if problem := url_problem(text, "URL"):
        raise argparse.ArgumentTypeError(problem)
    return text


def output_file_problem(path: str, option: str, example: str = "out.jsonl") -> str:
    """'' when ``path`` can be appended to (an existing regular file, or a new name in an
    existing writable folder), else why not and the fix — checked before the work starts."""
    target = Path(path).expanduser()
    if target.is_dir():
        return f"{option} {path}: is a folder; fix: give a file name, e.g. {target / example}"
    if target.exists():
        if not target.is_file():
            return f"{option} {path}: is not a regular file; fix: give a file name"
        if not os.access(target, os.W_OK):
            return f"{option} {path}: cannot be written (permission denied); fix: another file"
        return ""
    folder = target.parent
    if not folder.is_dir():
        return f"{option} {path}: the folder {folder} does not exist; fix: create it first"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{option} {path}: cannot write in {folder} (permission denied)"
    return ""
