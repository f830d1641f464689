"""Names people read: the one table of field abbreviations, and labels built from it.

A trial is known by how its configuration differs from the plan's base (``steps=3 draft=4``);
the header and the details box summarise a whole configuration (``EAGLE3 steps=3 topk=1 …``);
charts name their axis (``steps``). All of them abbreviate ``ServerConfig`` fields through
``FIELD_ABBREVIATIONS`` below, so a field reads the same in the console, the headless output
and every report. Environment values never appear in a label (they may be secrets): only the
variables' names do.

Every label describes what the engine runs (``core.config.effective``): a base whose draft
tokens SGLang replaces with ``steps + 1`` is never shown with the value it does not run, and a
trial is named by how *that* differs. A free-text ``description`` (a unit's ``Description=``,
the same for every trial) is a title, never a trial's name; the release (``engine_version``)
only changes flag spellings, so it is no part of a name either.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import fields
from enum import Enum
from typing import Any

from specconsole.core.config.effective import effective_config
from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.registry import EngineNotFound, engine_for
from specconsole.core.engine.schedule import Role, config_role
from specconsole.core.engine.vocabulary import field_short
from specconsole.core.logs.events import LoadStage
from specconsole.core.machine.state import Notice, TrialRecord
from specconsole.core.plans.plan import SweepPlan

FIELD_ABBREVIATIONS: dict[str, str] = {
    "speculative_algorithm": "algo",
    "speculative_num_steps": "steps",
    "speculative_eagle_topk": "topk",
    "speculative_num_draft_tokens": "draft",
    "mem_fraction_static": "mem",
    "cuda_graph_max_bs": "cg-bs",
    "max_running_requests": "mrr",
    "tp_size": "tp",
    "context_length": "ctx",
    "attention_backend": "attn",
}
"""Short names of the tuned ``ServerConfig`` fields (the editor shows SGLang's full names);
a field not listed is shown by its own name."""

SUMMARY_FIELDS: tuple[str, ...] = tuple(
    n for n in FIELD_ABBREVIATIONS if n != "speculative_algorithm"
)
"""The fields a configuration summary lists after the algorithm, in this order."""

NOT_IN_LABELS: frozenset[str] = frozenset(
    {
        "description",
        "engine_version",
        "launcher",
        "host",
        "port",
        "user",
        "working_directory",
        "box_flags",
        "side_dir",
        "options",
    }
)
"""Fields that say where/how the server runs (or only how its flags are spelt, or a title),
not what is being tuned."""

LOAD_STAGE_LABELS: dict[LoadStage, str] = {
    LoadStage.STARTING: "starting",
    LoadStage.WEIGHTS: "weights",
    LoadStage.KV_CACHE: "KV cache",
    LoadStage.CUDA_GRAPH: "CUDA graphs",
    LoadStage.WARMUP: "warmup",
}


def short_name(name: str, engine: str | None = None) -> str:
    """The abbreviation of ``ServerConfig`` field ``name`` — in ``engine``'s own words when it
    has one (vLLM's ``spec-tokens``, ``gpu-mem``: ``core.engine.vocabulary``) — else the
    shared one, else the name itself."""
    return field_short(engine, name) or FIELD_ABBREVIATIONS.get(name, name)


def format_value(name: str, value: Any) -> str:
    """One field's value as a label shows it (enum values bare, tuples space-separated,
    environment variables by name only; unset: ``default``, the engine chooses)."""
    if value is None:
        return "default"
    if isinstance(value, Enum):
        return str(value.value)
    if name == "env":
        return ",".join(key for key, _secret in value) or "()"
    if isinstance(value, tuple):
        return " ".join(map(str, value)) or "()"
    return str(value)


def _options(config: ServerConfig) -> dict[str, str]:
    """The engine's own keys that are set, by their short names (``n_max``: llama.cpp's
    ``spec_draft_n_max``; ``core.config.options``), in the engine's order."""
    try:
        own = {f.name: f.short or f.name for f in engine_for(config).option_fields}
    except EngineNotFound:
        own = {}
    return {own.get(k, k): format_value(k, v) for k, v in config.options}


def _option_parts(config: ServerConfig, base: ServerConfig | None) -> list[str]:
    mine, theirs = _options(config), _options(base) if base is not None else {}
    return [f"{k}={v}" for k, v in mine.items() if theirs.get(k) != v] + [
        f"{k}=default" for k in theirs if k not in mine
    ]


def load_stage_label(stage: LoadStage | None) -> str:
    """``KV cache``, ``CUDA graphs``…; empty for no stage."""
    if stage is None:
        return ""
    return LOAD_STAGE_LABELS.get(stage, stage.value.replace("_", " "))


def schedule_text(config: ServerConfig) -> str | None:
    """``schedule 1-2:5,3-8:4,9+:3``: a configuration that drafts by batch size, its
    ranges and draft lengths (None: one length at every size)."""
    try:
        rows = engine_for(config).scheduled(config)
    except EngineNotFound:
        return None
    if rows is None:
        return None
    return "schedule " + ",".join(f"{row.span}:{row.steps}" for row in rows)


_FIXED_AT = re.compile(r"fixed at ([0-9.]+)")


def what_if_length(config: ServerConfig) -> float | None:
    """The accept length a what-if fixes (``Engine.fixed_acceptance``: "... fixed at L
    (...)"), None when the configuration drafts with the real one."""
    try:
        said = engine_for(config).fixed_acceptance(config)
    except EngineNotFound:
        return None
    found = _FIXED_AT.search(said or "")
    return float(found.group(1)) if found else None


def _role_label(config: ServerConfig, base: ServerConfig | None) -> str | None:
    """The label of a baseline, a schedule or a what-if (None: an ordinary configuration)."""
    role = config_role(config)
    if role is Role.SCHEDULE:
        return schedule_text(config)
    if role is Role.BASELINE and (base is None or config_role(base) is not Role.BASELINE):
        return "no-spec"
    length = what_if_length(config) if role is Role.WHAT_IF else None
    if length is None or base is None:
        return None
    fixed = engine_for(config).fix_acceptance(base, length)  # the knob drops out of the diff
    plain = _plain_label(config, fixed if isinstance(fixed, ServerConfig) else None)
    return f"{plain} what-if accept={length:g}"


def config_label(config: ServerConfig, base: ServerConfig | None = None) -> str:
    """Short label: the fields of what runs that differ from what ``base`` runs (or the
    speculative ones); ``no-spec`` for the baseline, the ranges of a schedule, a what-if's
    fixed acceptance."""
    config = effective_config(config)
    special = _role_label(config, base)
    return special if special is not None else _plain_label(config, base)


def _plain_label(config: ServerConfig, base: ServerConfig | None) -> str:
    if base is not None:
        base = effective_config(base)
        parts = [
            f"{short_name(f.name, config.engine)}={format_value(f.name, getattr(config, f.name))}"
            for f in fields(ServerConfig)
            if f.name not in NOT_IN_LABELS and getattr(config, f.name) != getattr(base, f.name)
        ] + _option_parts(config, base)
        if parts:
            return " ".join(parts)
    if config.options:  # an engine with its own keys: what they say
        return " ".join(_option_parts(config, None))
    if config.speculative_algorithm is None:
        return "no-spec"
    if field_short(config.engine, "speculative_num_steps"):  # a chain, in its engine's words
        steps = short_name("speculative_num_steps", config.engine)
        return f"{config.speculative_algorithm.value} {steps}={config.speculative_num_steps}"
    spec = (
        f"{config.speculative_num_steps}/{config.speculative_eagle_topk}/"
        f"{config.speculative_num_draft_tokens}"
    )
    return f"{config.speculative_algorithm.value} steps/topk/draft={spec}"


def config_summary(config: ServerConfig | None) -> str:
    """``EAGLE3 steps=3 topk=1 draft=4 mem=0.85 …``: the tuned fields that are set, as the
    engine runs them."""
    if config is None:
        return "no configuration"
    config = effective_config(config)
    if config.options:  # an engine with its own keys (llama.cpp): those are its settings
        return " ".join(_option_parts(config, None))
    parts = [
        str(config.speculative_algorithm)
        if config.speculative_algorithm is not None
        else "no speculation"
    ]
    for name in SUMMARY_FIELDS:
        value = getattr(config, name)
        if value is not None:
            parts.append(f"{short_name(name, config.engine)}={format_value(name, value)}")
    return " ".join(parts)


def trial_label(record: TrialRecord, base: ServerConfig | None) -> str:
    """``#3 steps=3``: the trial's number and how what it ran differs from ``base`` (the base
    itself gets its full speculative label rather than an empty one)."""
    return f"#{record.index + 1} {record_label(record, base)}"


def record_label(record: TrialRecord, base: ServerConfig | None) -> str:
    """How the configuration a trial ran (``TrialRecord.effective``) differs from ``base``."""
    return config_label(record.effective, base)


def report_title(plan: SweepPlan | None, title: str = "") -> str:
    """A session's title: ``title`` if given, else the plan's name, else its base's free-text
    description (a unit's ``Description=``: a title, never a trial's name), else the
    default."""
    if title:
        return title
    if plan is None:
        return "specconsole session report"
    return plan.name or plan.base.description or "specconsole session report"


def notice_text(notice: Notice, base: ServerConfig | None) -> str:
    """A controller notice as a person reads it: its text, and the label of the
    configuration it is about (``trial 4 (steps=4 draft=5)``)."""
    if notice.config is None:
        return notice.text
    return f"{notice.text} ({config_label(notice.config, base)})"


MEASUREMENT_TEXT: dict[str, str] = {
    "completed": "bench_serving's completed-request metrics",
    "steady": "a steady-state window of streamed tokens (docs/benchmark.md, “Steady-state window”)",
}
"""How a level's figures were measured (``LevelSummary.measurement``), in words."""


def measurement_note(trials: Sequence[TrialRecord]) -> str:
    """One sentence saying how the recorded levels were measured ("" when none were)."""
    kinds = sorted({lv.measurement for t in trials for lv in t.levels})
    if not kinds:
        return ""
    words = " and ".join(MEASUREMENT_TEXT.get(k, k) for k in kinds)
    return f"Levels measured with {words}."
