"""Upper bounds on every number a plan or configuration may give, and the characters a
string that reaches a command line or a unit may hold.

Why: nothing stopped ``input_len = 10000000000000`` (the load generator grew to 17 GB and
ignored SIGTERM), ``duration_s = inf`` (a level that never ends), ``speculative_num_steps =
10**12`` or a NUL byte written raw into a systemd unit. Each limit here is far above anything
a real box runs, so it only refuses values that are typos or hostile, and each comes with the
fix. ``core.config.validation`` applies :data:`SERVER_LIMITS` and :func:`control_char_problem` to a
``ServerConfig``; ``core.plans.tables`` (``plan_number``) applies :data:`PLAN_LIMITS` to the
``[bench]`` and ``[sweep]`` numbers. One table, so ``validate``, ``render`` and ``sweep``
refuse the same values.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any, TypeVar

E = TypeVar("E", bound=StrEnum)

SERVER_LIMITS: dict[str, int] = {
    "speculative_num_steps": 64,
    "speculative_eagle_topk": 64,
    "speculative_num_draft_tokens": 1024,
    "cuda_graph_max_bs": 8192,
    "max_running_requests": 65536,
    "tp_size": 1024,
    "context_length": 16_777_216,
}
"""Largest value of each integer server setting (SGLang's own trees are <= 8 steps/topk)."""

PLAN_LIMITS: dict[str, float] = {
    "[bench] ladder": 4096,
    "[bench] ladder levels": 256,
    "[bench] requests_per_level": 100_000,
    "[bench] warmup_requests": 10_000,
    "[bench] input_len": 1_048_576,
    "[bench] output_len": 1_048_576,
    "[bench] seed": 2**63 - 1,
    "[bench] duration_s": 86_400.0,
    "[bench] window_s": 86_400.0,
    "[bench] window_tokens": 1_000_000_000,
    "[bench] request_rate": 100_000.0,
    "[bench] request_timeout_s": 86_400.0,
    "[bench] stall_timeout_s": 86_400.0,
    "[bench] temperature": 100.0,
    "[bench] repeats": 100,
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


def limit_problem(where: str, value: Any, limit: float) -> str:
    """An error text when ``value`` is not finite or above ``limit`` ('' when it is fine)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{where} must be a finite number, got {value!r}; fix: give a number"
    if value > limit:
        return (
            f"{where} = {value!r} is above the limit of {limit:,g}; fix: use a value up to "
            f"{limit:,g} (larger values are typos or would exhaust this machine)"
        )
    return ""


def control_char_problem(value: str) -> str:
    """'' when ``value`` holds no control characters, else which one and where."""
    for i, ch in enumerate(value):
        if ord(ch) < 32 or ord(ch) == 127:
            return f"contains the control character {ch!r} at position {i}"
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
