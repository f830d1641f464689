"""Bounds on every number a plan, a profile or a command line may give, and the characters a
string that reaches a command line or a unit may hold.

Why: nothing stopped ``input_len = 10000000000000`` (the load generator grew to 17 GB and
ignored SIGTERM), ``duration_s = inf`` (a level that never ends), ``speculative_num_steps =
10**12``, a NUL byte written raw into a systemd unit, or — on the command line, which had its
own looser checks — ``bench --ladder 1000000`` and ``--temperature nan`` (issue 27). Each limit
here is far above anything a real box runs, so it only refuses values that are typos or
hostile, and each comes with the fix. One table per domain, used by every reader:

* a server key's bounds are its engine's declaration (``OptionField.maximum``):
  ``core.config.validation`` applies them to a ``ServerConfig``;
* :data:`BENCH_BOUNDS` — a benchmark's numbers by ``BenchSpec`` field, both lower and upper
  bound: the plan's ``[bench]`` (``core.plans.tables``) and ``specconsole bench``'s options
  (``commands.bounded``) read through it, so a value refused in a plan is refused on the
  command line with the same limit;
* :data:`PLAN_LIMITS` — the upper limits by the name an error shows (``[table] key``);
* :func:`control_char_problem` — every character a line-oriented file (a unit, a script, a
  log line) would break on, not only ASCII's.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

E = TypeVar("E", bound=StrEnum)


@dataclass(frozen=True, slots=True)
class Bound:
    """The values a number may take: ``low`` (exclusive when ``low_open``) to ``high``."""

    high: float
    low: float = 0.0
    integer: bool = False
    low_open: bool = True
    example: str = ""
    """A value to suggest in the fix (``8``, ``0.5``)."""

    def describe(self) -> str:
        """``a whole number from 1 to 4,096`` / ``a number above 0 up to 86,400``."""
        kind = "a whole number" if self.integer else "a number"
        low, high = format_limit(self.low), format_limit(self.high)
        if self.integer and self.low_open:
            return f"{kind} from {format_limit(self.low + 1)} to {high}"
        if self.low_open:
            return f"{kind} above {low} up to {high}"
        return f"{kind} from {low} to {high}"


BENCH_BOUNDS: dict[str, Bound] = {
    "ladder": Bound(4096, integer=True, example="1,4,16"),
    "requests_per_level": Bound(100_000, integer=True, example="8"),
    "warmup_requests": Bound(10_000, low=0, integer=True, low_open=False, example="1"),
    "input_len": Bound(1_048_576, integer=True, example="256"),
    "output_len": Bound(1_048_576, integer=True, example="256"),
    "seed": Bound(2**63 - 1, low=0, integer=True, low_open=False, example="42"),
    "duration_s": Bound(86_400.0, example="60"),
    "window_s": Bound(86_400.0, example="2"),
    "window_tokens": Bound(1_000_000_000, integer=True, example="2000"),
    "request_rate": Bound(100_000.0, example="4"),
    "request_timeout_s": Bound(86_400.0, example="600"),
    "stall_timeout_s": Bound(86_400.0, example="30"),
    "temperature": Bound(100.0, low=0.0, low_open=False, example="0"),
    "repeats": Bound(100, integer=True, example="3"),
    "range_ratio": Bound(1.0, example="0.5"),
    "percentiles": Bound(100.0, example="50,90,99"),
}
"""Every number of a benchmark, by ``BenchSpec`` field (``ladder``: each level)."""

MAX_LADDER_LEVELS = 256
"""Levels in one ladder (each runs for its requests or its duration)."""

PROFILE_LIMITS: dict[str, Bound] = {
    "[host] connect_timeout": Bound(3600.0, example="10"),
    "[host] keepalive_interval": Bound(3600.0, example="15"),
    "[host] reconnect_max_delay": Bound(3600.0, example="30"),
    "[host] keepalive_count_max": Bound(1000, low=0, integer=True, low_open=False, example="3"),
    "[host] reconnect_attempts": Bound(10_000, low=0, integer=True, low_open=False, example="5"),
    "[service] keep_backups": Bound(10_000, integer=True, example="20"),
    "[service] stop_timeout": Bound(86_400.0, example="60"),
    "[service] gpus": Bound(1024, integer=True, example="8"),
}
"""The host profile's numbers (a timeout of ``inf`` waits forever; ``nan`` compares false)."""

PLAN_LIMITS: dict[str, float] = {
    **{f"[bench] {name}": bound.high for name, bound in BENCH_BOUNDS.items()},
    "[bench] ladder levels": MAX_LADDER_LEVELS,
    "[sweep] max_trials": 100_000,
    "[sweep] max_wall_minutes": 60.0 * 24 * 31,
    "[sweep] max_wall_s": 86_400.0 * 31,
    "[sweep] load_timeout": 86_400.0,
    "[sweep] min_gain_pct": 10_000.0,
    "[sweep] min_kv_tokens": 2**40,
    "[sweep] patience": 10_000,
    "[sweep] startup_trials": 100_000,
    "[sweep] seed": 2**63 - 1,
    "[sweep] noise_pct": 10_000.0,
}
"""Largest value of each plan number, by the name the error shows (``[table] key``)."""


def format_limit(limit: float) -> str:
    """``1,048,576`` / ``86,400`` / ``0.5``: a limit as a person reads it."""
    if float(limit).is_integer() and abs(limit) < 1e21:
        return f"{int(limit):,}"
    return f"{limit:,g}"


def limit_problem(where: str, value: Any, limit: float) -> str:
    """An error text when ``value`` is not finite or above ``limit`` ('' when it is fine)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{where} must be a finite number, got {value!r}; fix: give a number"
    if value > limit:
        shown = format_limit(limit)
        return (
            f"{where} = {value!r} is above the limit of {shown}; fix: use a value up to "
            f"{shown} (larger values are typos or would exhaust this machine)"
        )
    return ""


def bound_problem(where: str, value: Any, bound: Bound) -> str:
    """'' when ``value`` (already a number) lies within ``bound``, else the error and fix."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{where} must be {bound.describe()}, got {value!r}"
    if problem := limit_problem(where, value, bound.high):
        return problem
    if bound.integer and not float(value).is_integer():
        return f"{where} must be a whole number, got {value!r}; fix: e.g. {bound.example}"
    if value <= bound.low if bound.low_open else value < bound.low:
        floor = "greater than" if bound.low_open else "at least"
        return (
            f"{where} must be {floor} {bound.low:g}, got {value!r}; fix: give "
            f"{bound.describe()}, e.g. {bound.example}"
        )
    return ""


def parse_bounded(text: str, bound: Bound, where: str) -> int | float:
    """A number typed on a command line (``8``, ``1e3``, ``0.5``) within ``bound``; raises
    ValueError naming ``where``, the value and the fix (never OverflowError)."""
    cleaned = text.strip().replace("_", "")
    try:
        value: int | float = int(cleaned)
    except ValueError:
        try:
            value = float(cleaned)
        except ValueError:
            raise ValueError(
                f"{where} {text!r} is not a number; fix: give {bound.describe()}, "
                f"e.g. {bound.example}"
            ) from None
    if problem := bound_problem(where, value, bound):
        raise ValueError(problem)
    if bound.integer:
        return int(value)
    return float(value)


_BIDI_CONTROLS = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Format characters that reorder what a terminal shows (a unit that reads one way and runs
another)."""


def is_control_char(ch: str) -> bool:
    """Whether ``ch`` breaks or disguises a line: C0/C1 controls and DEL (``Cc``: NUL,
    newline, ESC, U+0085 NEL, U+009B CSI...), the Unicode line and paragraph separators
    (U+2028/U+2029, where ``str.splitlines`` splits) and bidirectional overrides."""
    return unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in _BIDI_CONTROLS


def control_char_problem(value: str) -> str:
    """'' when ``value`` holds no control characters (:func:`is_control_char`), else which
    one and where."""
    for i, ch in enumerate(value):
        if is_control_char(ch):
            return f"contains the control character {ch!r} (U+{ord(ch):04X}) at position {i}"
    return ""


def is_int(value: object) -> bool:
    """An integer that is not a bool (TOML and JSON booleans are ints to Python)."""
    return isinstance(value, int) and not isinstance(value, bool)


def parse_choice(enum: type[E], value: Any, where: str, error: type[Exception]) -> E:
    """``enum(value)``, or ``error`` saying ``<where> = <value> is not valid; use one of ...``
    (every value of ``enum``, in its order)."""
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(repr(m.value) for m in enum)
        raise error(f"{where} = {value!r} is not valid; use one of {choices}") from None
