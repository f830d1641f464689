"""Names people read: the keys' abbreviations, and labels built from them.

A trial is known by how its configuration differs from the plan's base (``steps=3 draft=4``);
the header and the details box summarise a whole configuration (``EAGLE3 steps=3 topk=1 …``);
charts name their axis (``steps``). All of them abbreviate a key by the short name its engine
declares (``OptionField.short``: SGLang's ``steps``, vLLM's ``spec-tokens``, llama.cpp's
``n_max``), so a key reads the same in the console, the headless output and every report.
Environment values never appear in a label (they may be secrets): only the variables' names do.

Every label describes what the engine runs (``core.config.effective``): a base whose draft
tokens SGLang replaces with ``steps + 1`` is never shown with the value it does not run, and a
trial is named by how *that* differs. Those rules (the engine's validation) are loaded with the
first configuration named, not with this module: every caller holds a configuration, and the
plan that made it has loaded them already; the console's first frame, which may show none,
loads none of them. A free-text ``description`` (a unit's ``Description=``,
the same for every trial) is a title, never a trial's name; the release (``engine_version``)
only changes flag spellings, so it is no part of a name either.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import fields, replace
from enum import Enum
from typing import TYPE_CHECKING, Any

from specconsole.core.config.concepts import Concept, concept_keys, concept_value
from specconsole.core.config.model import ServerConfig, option_fields
from specconsole.core.config.options import with_options
from specconsole.core.engine.registry import EngineNotFound, default_engine, engine_for
from specconsole.core.engine.schedule import Role, config_role
from specconsole.core.engine.vocabulary import field_short
from specconsole.core.logs.stages import LoadStage

if TYPE_CHECKING:
    from specconsole.core.machine.state import Notice, TrialRecord
    from specconsole.core.plans.plan import SweepPlan


def abbreviations(engine: str) -> list[tuple[str, str]]:
    """(short, key) for each of ``engine``'s keys that has a short name, in its order."""
    return [(f.short, f.name) for f in option_fields(engine).values() if f.short]


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


def _effective(config: ServerConfig) -> ServerConfig:
    """What the engine runs for ``config`` (``core.config.effective``), its rules loaded with
    the first configuration named."""
    from specconsole.core.config.effective import effective_config

    return effective_config(config)


def short_name(name: str, engine: str | None = None) -> str:
    """The abbreviation ``engine`` declares for key ``name`` (vLLM's ``spec-tokens``, SGLang's
    ``steps``: ``core.engine.vocabulary``), else the name itself."""
    return field_short(engine or default_engine(), name) or name


def format_value(name: str, value: Any) -> str:
    """One field's value as a label shows it (enum values bare, switches ``on``/``off``,
    tuples space-separated, environment variables by name only; unset: ``default``, the
    engine chooses)."""
    if value is None:
        return "default"
    if isinstance(value, bool):  # a switch, as a person says it (not Python's True)
        return "on" if value else "off"
    if isinstance(value, Enum):
        return str(value.value)
    if name == "env":
        return ",".join(key for key, _secret in value) or "()"
    if isinstance(value, tuple):
        return " ".join(map(str, value)) or "()"
    return str(value)


def _options(config: ServerConfig, leading: bool | None = None) -> dict[str, str]:
    """The engine's keys that are set, by their short names (``n_max``: llama.cpp's
    ``spec_draft_n_max``; ``core.config.options``), in the engine's order (only the leading
    ones, or only the others, when ``leading`` says)."""
    own = option_fields(config.engine)
    return {
        (own[k].short or k) if k in own else k: format_value(k, v)
        for k, v in config.options
        if leading is None or (k in own and own[k].leads) == leading
    }


def _option_parts(
    config: ServerConfig, base: ServerConfig | None, leading: bool | None = None
) -> list[str]:
    mine = _options(config, leading)
    theirs = _options(base, leading) if base is not None else {}
    return [f"{k}={v}" for k, v in mine.items() if theirs.get(k) != v] + [
        f"{k}=default" for k in theirs if k not in mine
    ]


def _field_parts(config: ServerConfig, base: ServerConfig, names: Sequence[str]) -> list[str]:
    return [
        f"{short_name(n, config.engine)}={format_value(n, getattr(config, n))}"
        for n in names
        if getattr(config, n) != getattr(base, n)
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


def schedule_unit(config: ServerConfig) -> str:
    """What a schedule's pairs are, in the engine's words: ``batch size:steps`` (SGLang),
    ``batch size:K`` where the engine calls its draft length K."""
    keys = concept_keys(config.engine, Concept.DRAFT_LENGTH)
    return f"batch size:{short_name(keys[0], config.engine) if keys else 'draft length'}"


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
    if role is Role.ADAPTIVE:  # the engine's own mode: what it chooses among
        parts = [p for p in _option_parts(config, base) if not p.startswith("adaptive=")]
        return "adaptive " + (" ".join(parts) if parts else "defaults")
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
    config = _effective(config)
    special = _role_label(config, base)
    return special if special is not None else _plain_label(config, base)


_LABELLED = tuple(f.name for f in fields(ServerConfig) if f.name not in NOT_IN_LABELS)
"""The shared fields a label names when they differ (the model, the engine, extra_args, env)."""


def _plain_label(config: ServerConfig, base: ServerConfig | None) -> str:
    if base is not None:
        base = _effective(base)
        parts = [
            *_field_parts(config, base, _LABELLED[:2]),  # the model and the engine
            *_option_parts(config, base, leading=True),
            *_field_parts(config, base, _LABELLED[2:]),
            *_option_parts(config, base, leading=False),
        ]
        if parts:
            return " ".join(parts)
    if _options(config, leading=False):  # the engine's further keys: what they say
        return " ".join(_option_parts(config, None, leading=False))
    return _speculation_label(config)


def _speculation_label(config: ServerConfig) -> str:
    """``EAGLE3 steps/topk/draft=3/1/4`` (a tree), ``eagle3 spec-tokens=3`` (a chain),
    ``no-spec``."""
    method = concept_value(config, Concept.METHOD)
    if method is None:
        return "no-spec"
    engine = config.engine
    keys = [*concept_keys(engine, Concept.DRAFT_LENGTH), *concept_keys(engine, Concept.DRAFT_SHAPE)]
    shorts = "/".join(short_name(k, engine) for k in keys)
    values = "/".join(str(getattr(config, k)) for k in keys)
    return f"{format_value('', method)} {shorts}={values}"


def config_summary(config: ServerConfig | None) -> str:
    """``EAGLE3 steps=3 topk=1 draft=4 mem=0.85 …``: the tuned keys that are set, as the
    engine runs them."""
    if config is None:
        return "no configuration"
    config = _effective(config)
    if config_role(config) is Role.SCHEDULE and (said := schedule_text(config)):
        return _schedule_summary(config, said)
    if _options(config, leading=False):  # the engine's further keys: those are its settings
        return " ".join(_option_parts(config, None, leading=False))
    method = concept_value(config, Concept.METHOD)
    parts = [format_value("", method) if method is not None else "no speculation"]
    own = option_fields(config.engine)
    skip = {Concept.METHOD, Concept.DRAFT_MODEL}
    for name, value in config.options:
        if name in own and own[name].leads and own[name].concept not in skip:
            parts.append(f"{short_name(name, config.engine)}={format_value(name, value)}")
    return " ".join(parts)


def _schedule_summary(config: ServerConfig, said: str) -> str:
    """``EAGLE3 schedule 1-2:5,3-8:4,9+:3 topk=1 mem=0.88 …``: the schedule in the notation
    every view uses, then the leading keys it does not decide (the draft length is the
    schedule's; a shape the engine derives from it per range is left out with it)."""
    method = concept_value(config, Concept.METHOD)
    parts = [format_value("", method) if method is not None else "", said]
    own = option_fields(config.engine)
    skip = {Concept.METHOD, Concept.DRAFT_MODEL, Concept.DRAFT_LENGTH}
    derived = _derived_from_length(config)
    for name, value in config.options:
        if (
            name in own
            and own[name].leads
            and own[name].concept not in skip
            and name not in derived
        ):
            parts.append(f"{short_name(name, config.engine)}={format_value(name, value)}")
    return " ".join(p for p in parts if p)


def _derived_from_length(config: ServerConfig) -> set[str]:
    """The keys whose value changes with the draft length when the engine runs this
    configuration (SGLang's verify width, ``steps + 1`` at top-k 1): what a schedule decides
    besides the length itself."""
    keys = concept_keys(config.engine, Concept.DRAFT_LENGTH)
    if not keys:
        return set()
    length = concept_value(config, Concept.DRAFT_LENGTH)
    if not isinstance(length, int):
        return set()
    own = option_fields(config.engine)
    longer = with_options(config.options, {keys[0]: length + 1}, own)
    other = _effective(replace(config, options=longer))
    mine = dict(config.options)
    return {k for k, v in other.options if k != keys[0] and mine.get(k) != v}


def trial_label(record: TrialRecord, base: ServerConfig | None) -> str:
    """``#3 steps=3``: the trial's number and how what it ran differs from ``base`` (the base
    itself gets its full speculative label rather than an empty one)."""
    return f"#{record.index + 1} {record_label(record, base)}"


def record_label(record: TrialRecord, base: ServerConfig | None) -> str:
    """How the configuration a trial ran (``TrialRecord.effective``) differs from ``base``;
    a trial that re-measured it says where (``@ c=2,3,8,9``, ``on alternating:coding,prose``)."""
    label = config_label(record.effective, base)
    again = record.remeasure
    if again is not None and again.ladder:
        label += " @ c=" + ",".join(map(str, again.ladder))
    if again is not None and again.dataset:
        label += f" on {again.dataset}"
    return label


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
