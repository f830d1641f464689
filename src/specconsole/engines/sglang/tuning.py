"""SGLang's answers to tuning by level: the baseline, the schedule, the acceptance what-if.

Why its own module: these are the engine's slots a per-level sweep asks
(``core.engine.protocol``, "tuning by level"), in SGLang's terms —

* **the baseline**: the same launch without ``--speculative-*`` (no draft loaded, SGLang's
  own ``max_running_requests`` default then, unless the plan set one);
* **the schedule**: each level's best draft length in the bucket its batch sizes route to
  (:mod:`.adaptive`): one candidate per bucket, so SGLang's EMA has nothing to choose and the
  server runs what was measured; ``--speculative-num-steps`` is the largest (SGLang sizes the
  draft-token slots for it anyway) and topk 1. A level whose best drafted nothing gets a 0
  candidate (0.5.14+). The bucket keys are the ranges' first batch sizes
  (``core.engine.schedule.level_ranges``); SGLang rounds a batch up to its captured
  CUDA-graph size before it looks the bucket up, so a boundary moves up to the next captured
  size (1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64 … with speculation) — every measured level
  still lands in its own bucket;
* **the what-if**: ``SGLANG_SIMULATE_ACC_LEN`` (SGLang's ``environ.py``: a float, off when
  ≤ 0) makes every verify step accept that many tokens — the bonus included, at most
  ``steps + 1`` — drawn as its floor or ceiling so the mean holds
  (``SGLANG_SIMULATE_ACC_METHOD=match-expected``, set too: 0.5.9's default, ``multinomial``,
  draws from a normal around it and clamps, which moves the mean).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from specconsole.core.config.issues import Issue, Severity
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.options import OptionField, with_options
from specconsole.core.engine.schedule import (
    LengthWords,
    LevelPick,
    Refusal,
    ScheduleRow,
    SideFile,
    pick_rows,
    static_lengths,
)
from specconsole.engines.sglang.adaptive import (
    ADAPTIVE,
    ADAPTIVE_CONFIG,
    SCHEDULE,
    AdaptiveFile,
    adaptive_on,
    rows,
    schedule_of,
    side_file,
)
from specconsole.engines.sglang.adaptive import OPTION_FIELDS as ADAPTIVE_FIELDS
from specconsole.engines.sglang.keys import SpecAlgorithm

__all__ = [
    "ACCEPT",
    "OPTION_FIELDS",
    "SIMULATE_ACC_LEN",
    "fix_acceptance",
    "fixed_acceptance",
    "schedule",
    "scheduled",
    "side_files",
    "with_simulated_env",
    "without_speculation",
]

SIMULATE_ACC_LEN = "SGLANG_SIMULATE_ACC_LEN"
SIMULATE_ACC_METHOD = "SGLANG_SIMULATE_ACC_METHOD"
ACCEPT = "simulate_accept_length"
"""The what-if's ``[server]`` key: rendered as the environment variables by
:func:`with_simulated_env` (what is deployed: the engine's normalization), kept as a key so
the trial's record says it (records keep environment variables by name only)."""

OPTION_FIELDS: tuple[OptionField, ...] = (
    OptionField(
        ACCEPT,
        "float",
        "",
        f"what-if: every verify step accepts this many tokens on average ({SIMULATE_ACC_LEN})",
        minimum=1.0,
        maximum=65.0,
        example="4.5",
        short="what-if-accept",
    ),
)
_SPEC_FIELDS = (
    "speculative_algorithm",
    "speculative_draft_model_path",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
)
_DEPTH = ("speculative_num_steps", "speculative_num_draft_tokens", "description")
_ORDER = [f.name for f in (*ADAPTIVE_FIELDS, *OPTION_FIELDS)]


def without_speculation(config: ServerConfig) -> ServerConfig:
    """``config`` without a draft: no ``--speculative-*``, no adaptive mode, no what-if."""
    options = with_options(config.options, {k: None for k in _ORDER}, _ORDER)
    env = _without_knob(config.env)
    return dataclasses.replace(
        config, **{name: None for name in _SPEC_FIELDS}, options=options, env=env
    )


def _steps(config: ServerConfig) -> int | None:
    """The draft length ``config`` runs (0: none), None when it is not a static chain."""
    if config.speculative_algorithm is None:
        return 0
    if adaptive_on(config):
        return None
    steps = config.speculative_num_steps
    return steps if isinstance(steps, int) and steps >= 1 else None


_WORDS = LengthWords(
    field="speculative_num_steps",
    switches="its draft length (or has no draft length)",
    built_from="static chains",
    sweep_fix="sweep static speculative_num_steps values at topk 1.",
    length="the draft length",
    lengths="draft lengths",
)
"""How SGLang's refusals of a schedule name what it switches."""


def _refuse(field: str | None, message: str, fix: str) -> Issue:
    return Issue(field, Severity.ERROR, message, fix)


def schedule(picks: Sequence[LevelPick]) -> ServerConfig | Issue:
    """One adaptive configuration drafting each pick's length at its batch sizes."""
    if not picks:
        return _refuse(None, "no level was measured.", "benchmark the static candidates first.")
    found = static_lengths(picks, _steps, without_speculation, _DEPTH, _WORDS)
    if isinstance(found, Refusal):
        return _refuse(found.field, found.message, found.fix)
    base, lengths = found
    assert isinstance(base, ServerConfig)
    if base.speculative_algorithm not in (SpecAlgorithm.EAGLE, SpecAlgorithm.EAGLE3):
        return _refuse(
            "speculative_algorithm",
            f"SGLang switches the draft length by batch size for EAGLE/EAGLE3 only "
            f"({base.speculative_algorithm}).",
            "measure EAGLE or EAGLE3 draft lengths, or deploy each level's best on its own.",
        )
    if base.speculative_eagle_topk not in (None, 1):
        return _refuse(
            "speculative_eagle_topk",
            f"SGLang's adaptive mode drafts chains (topk 1); the picks draft topk "
            f"{base.speculative_eagle_topk}.",
            "measure the draft lengths at speculative_eagle_topk = 1.",
        )
    table = pick_rows(picks, lengths)
    adaptive = AdaptiveFile(tuple((row.start, (row.steps,)) for row in table))
    top = max(lengths)
    options = with_options(
        base.options, {SCHEDULE: adaptive.compact(), ADAPTIVE: None, ADAPTIVE_CONFIG: None}, _ORDER
    )
    return dataclasses.replace(
        base,
        speculative_num_steps=top,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=top + 1,
        options=options,
        description="",
    )


def scheduled(config: ServerConfig) -> tuple[ScheduleRow, ...] | None:
    """The draft length per batch-size range of a measured schedule (one candidate per
    bucket); None for a static configuration or an EMA's choice among several."""
    adaptive = schedule_of(config)
    return None if adaptive is None else rows(adaptive)


def side_files(config: ServerConfig) -> tuple[SideFile, ...]:
    adaptive = schedule_of(config)
    return () if adaptive is None else (side_file(adaptive),)


def fix_acceptance(config: ServerConfig, length: float) -> ServerConfig | Issue:
    """``simulate_accept_length = length``: ``SGLANG_SIMULATE_ACC_LEN`` (and
    ``match-expected``, so the mean holds) once normalized (:func:`with_simulated_env`)."""
    if config.speculative_algorithm is None:
        return _refuse(
            "speculative_algorithm",
            "without speculation there is no acceptance to fix.",
            "fix it on a speculative configuration.",
        )
    if not length >= 1.0:
        return _refuse(
            "env",
            f"an accept length of {length:g} is below 1 (the bonus token always counts).",
            "give a length of at least 1.",
        )
    options = with_options(config.options, {ACCEPT: float(length)}, _ORDER)
    return dataclasses.replace(config, env=_without_knob(config.env), options=options)


def _without_knob(env: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return tuple((n, v) for n, v in env if n not in (SIMULATE_ACC_LEN, SIMULATE_ACC_METHOD))


def with_simulated_env(config: ServerConfig) -> ServerConfig:
    """``config`` as deployed: its what-if key written as SGLang's environment variables."""
    length = dict(config.options).get(ACCEPT)
    if not isinstance(length, int | float) or isinstance(length, bool):
        return config
    knob = ((SIMULATE_ACC_LEN, f"{length:g}"), (SIMULATE_ACC_METHOD, "match-expected"))
    return dataclasses.replace(config, env=(*_without_knob(config.env), *knob))


def fixed_acceptance(config: ServerConfig) -> str | None:
    value = dict(config.options).get(ACCEPT, dict(config.env).get(SIMULATE_ACC_LEN))
    try:
        length = float(value) if value is not None else -1.0
    except ValueError:
        return None
    if length <= 0 or config.speculative_algorithm is None:
        return None
    return f"accept length fixed at {length:g} ({SIMULATE_ACC_LEN})"
