"""vLLM's ``[server]`` keys, in vLLM's own names, and the per-batch-size K.

Why vLLM's names: a vLLM user reads ``vllm serve --help`` and ``SpeculativeConfig``, so the
keys are those: ``gpu_memory_utilization``, ``max_num_seqs``, ``max_model_len``,
``tensor_parallel_size`` (the flag without ``--``, dashes as underscores), and inside
``--speculative-config`` its ``method`` and ``num_speculative_tokens`` (``SpeculativeConfig``'s
field names); its draft ``model`` is ``speculative_model`` (the name vLLM's command line gave
it before the JSON flag), since ``model`` is the served model. Plans written before the keys
spoke vLLM used SGLang's names (``speculative_num_steps``, ``mem_fraction_static``, …): each
is still read, with a notice naming the new key (``OptionField.former``), and the keys vLLM
never rendered are dropped with one (:data:`RETIRED`).

Why a per-batch-size K: one draft length (``num_speculative_tokens``) at every batch size is
the common case, but from 0.34.0 vLLM can draft a different K at each batch size
(``num_speculative_tokens_per_batch_size``, vllm-project/vllm#32374): a long draft while few
requests run, a short one — or none — when the batch is large and verifying extra tokens costs
more than it wins. A sweep tunes that schedule like any knob, so it is a ``[server]`` key in
vLLM's own name. Its value is written compactly, ``"1-8:5,9-64:3,65-1024:1"`` (inclusive
batch-size range, colon, K), or as vLLM's own JSON list ``"[[1, 8, 5], [9, 64, 3]]"``; it is
rendered inside the ``--speculative-config`` JSON as vLLM's list of ``[start, end, K]``.

The rules are vLLM's (``validate_and_normalize_dynamic_sd_schedule`` in
``vllm/v1/spec_decode/dynamic/utils.py`` of 0.34.0), with its own texts: positive ranges,
``start <= end``, ``K >= 0``, ranges sorted without overlap, the first starting at 1.
"""

from __future__ import annotations

import dataclasses
import json

from specconsole.core.config.concepts import Concept
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.options import OptionField

__all__ = [
    "KEYS",
    "METHODS",
    "NEEDS_DRAFT_MODEL",
    "OPTION_FIELDS",
    "PER_BATCH_K",
    "RETIRED",
    "SYNTHETIC",
    "Schedule",
    "ScheduleError",
    "format_schedule",
    "normalized",
    "parse_schedule",
]

PER_BATCH_K = "num_speculative_tokens_per_batch_size"
"""The ``[server]`` key, ``SpeculativeConfig``'s field name."""
SYNTHETIC = "synthetic_acceptance_length"
"""``SpeculativeConfig``'s mean acceptance length for its synthetic rejection sampler
(``rejection_sample_method = "synthetic"``, 0.34.0): a benchmark's what-if, rendered with the
method it needs."""

Schedule = tuple[tuple[int, int, int], ...]
"""``((start, end, K), ...)``: inclusive batch-size ranges, sorted."""

METHODS: tuple[str, ...] = ("eagle", "eagle3", "ngram", "draft_model", "mtp")
"""``SpeculativeConfig.method`` values specconsole renders and the simulator imitates."""
NEEDS_DRAFT_MODEL = frozenset({"eagle", "eagle3", "draft_model"})
"""Methods that read a separate draft model (``speculative_model``)."""

_FORMER_METHODS = (
    ("EAGLE", "eagle"),
    ("EAGLE3", "eagle3"),
    ("NGRAM", "ngram"),
    ("STANDALONE", "draft_model"),
    ("NEXTN", "mtp"),
)
"""SGLang's algorithm names, which plans before vLLM's own keys wrote, as vLLM's methods."""


def _key(name: str, kind: str, flag: str, hint: str, **more: object) -> OptionField:
    return OptionField(name, kind, flag, hint, leads=True, **more)  # type: ignore[arg-type]


KEYS: tuple[OptionField, ...] = (
    _key(
        "method",
        "choice",
        "--speculative-config",
        "speculative method: eagle, eagle3, ngram, draft_model or mtp",
        choices=METHODS,
        synonyms=(("deepseek_mtp", "mtp"), ("eagle-3", "eagle3"), *_FORMER_METHODS),
        former=("speculative_algorithm",),
        example='"eagle3"',
        concept=Concept.METHOD,
        edit=True,
    ),
    _key(
        "speculative_model",
        "str",
        "--speculative-config",
        "the draft model (--speculative-config's model)",
        former=("speculative_draft_model_path",),
        plain=True,
        short="draft",
        concept=Concept.DRAFT_MODEL,
    ),
    _key(
        "num_speculative_tokens",
        "int",
        "--speculative-config",
        "K: tokens drafted per step (a chain, verified with one more)",
        former=("speculative_num_steps",),
        plain=True,
        minimum=1,
        maximum=1024,  # a typo guard: the release's own cap (128 before 0.34) is rules.py's
        example="3",
        short="spec-tokens",
        concept=Concept.DRAFT_LENGTH,
        edit=True,
    ),
    _key(
        "gpu_memory_utilization",
        "float",
        "--gpu-memory-utilization",
        "share of GPU memory vLLM takes (weights, activations, KV cache)",
        former=("mem_fraction_static",),
        plain=True,
        minimum=0.0,
        maximum=1.0,
        example="0.9",
        short="gpu-mem",
        concept=Concept.MEMORY_FRACTION,
        edit=True,
    ),
    _key(
        "max_num_seqs",
        "int",
        "--max-num-seqs",
        "cap on sequences decoded at once",
        former=("max_running_requests",),
        plain=True,
        minimum=1,
        maximum=65536,
        example="256",
        short="seqs",
        concept=Concept.MAX_CONCURRENCY,
        edit=True,
    ),
    _key(
        "tensor_parallel_size",
        "int",
        "--tensor-parallel-size",
        "tensor-parallel GPU count",
        aliases=("tp",),
        former=("tp_size",),
        plain=True,
        minimum=1,
        maximum=1024,
        example="1",
        short="tp",
        concept=Concept.PARALLEL_SIZE,
        edit=True,
    ),
    _key(
        "max_model_len",
        "int",
        "--max-model-len",
        "longest sequence (prompt + output) it serves",
        former=("context_length",),
        plain=True,
        minimum=1,
        maximum=16_777_216,
        example="32768",
        short="max-len",
        concept=Concept.CONTEXT_LENGTH,
    ),
)
"""vLLM's tuning keys, in the order files and labels show them."""

RETIRED: dict[str, str] = {
    "speculative_eagle_topk": (
        "speculative_eagle_topk was never a vLLM setting (vLLM drafts a chain) and is ignored."
    ),
    "speculative_num_draft_tokens": (
        "speculative_num_draft_tokens was never a vLLM setting (vLLM verifies "
        "num_speculative_tokens + 1) and is ignored."
    ),
    "cuda_graph_max_bs": (
        "cuda_graph_max_bs was never rendered for vLLM and is ignored; pass vLLM's own "
        "CUDA-graph option through extra_args."
    ),
    "attention_backend": (
        "attention_backend was never rendered for vLLM and is ignored; set "
        "VLLM_ATTENTION_BACKEND in env instead."
    ),
}
"""SGLang-named keys older vLLM plans could hold that vLLM has no key for: dropped as read,
with this notice (a record holding one loads without it)."""

OPTION_FIELDS: tuple[OptionField, ...] = (
    *KEYS,
    OptionField(
        name=PER_BATCH_K,
        kind="str",
        flag="--speculative-config",
        hint="K per batch size, e.g. 1-8:5,9-64:3,65-1024:1 (vLLM 0.34+)",
        example='"1-8:5,9-64:3,65-1024:1"',
    ),
    OptionField(
        name=SYNTHETIC,
        kind="float",
        flag="--speculative-config",
        hint="what-if: every verify step accepts this many tokens on average (vLLM 0.34+)",
        minimum=1.0,
        maximum=1024.0,
        example="4.5",
        short="synthetic-accept",
    ),
)
"""vLLM's own keys, in the order files and editors show them."""


class ScheduleError(ValueError):
    """A schedule vLLM would refuse; the message is vLLM's (or as close)."""


def _entries(text: str) -> list[tuple[int, int, int]]:
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            raw = json.loads(stripped)
        except (ValueError, RecursionError) as exc:  # nested deeper than the parser recurses
            raise ScheduleError(f"not a JSON list ({exc})") from None
        if not isinstance(raw, list):
            raise ScheduleError(
                f"{PER_BATCH_K} must be a non-empty list of "
                "(range_start, range_end, num_speculative_tokens) entries."
            )
        out = []
        for entry in raw:
            if not isinstance(entry, list | tuple) or len(entry) != 3:
                raise ScheduleError(
                    f"Each {PER_BATCH_K} entry must be a 3-item sequence: "
                    "(range_start, range_end, num_speculative_tokens)."
                )
            try:
                out.append((int(entry[0]), int(entry[1]), int(entry[2])))
            except (TypeError, ValueError):
                raise ScheduleError(f"entry {entry!r} is not three integers") from None
        return out
    out = []
    for piece in stripped.split(","):
        span, colon, k = piece.strip().partition(":")
        start, dash, end = span.partition("-")
        try:
            if not colon:
                raise ValueError
            out.append((int(start), int(end if dash else start), int(k)))
        except ValueError:
            raise ScheduleError(f"{piece.strip()!r} is not START-END:K (e.g. 1-16:4)") from None
    return out


def parse_schedule(text: str) -> Schedule:
    """The schedule ``text`` describes, checked by vLLM's rules; raises :class:`ScheduleError`
    with vLLM's message."""
    entries = _entries(text)
    if not entries:
        raise ScheduleError(f"{PER_BATCH_K} must not be empty.")
    for start, end, k in entries:
        if start <= 0 or end <= 0:
            raise ScheduleError(f"Batch-size range ({start}, {end}) must be positive.")
        if start > end:
            raise ScheduleError(f"Batch-size range start must be <= end for ({start}, {end}, {k}).")
        if k < 0:
            raise ScheduleError(f"{PER_BATCH_K} values must be >= 0.")
    entries.sort(key=lambda e: e[0])
    previous_end = 0
    for start, end, _k in entries:
        if start <= previous_end:
            raise ScheduleError("Batch-size ranges must be non-overlapping and sorted.")
        previous_end = end
    if entries[0][0] != 1:
        raise ScheduleError(
            "The first batch-size range must start at 1 so every runtime batch size has a "
            "defined schedule."
        )
    return tuple(entries)


def format_schedule(schedule: Schedule) -> str:
    """The compact text of a schedule (``1-8:5,9-64:3``)."""
    return ",".join(f"{a}-{b}:{k}" for a, b, k in schedule)


def normalized(config: ServerConfig) -> ServerConfig:
    """``config`` with its schedule (if valid) in the compact form a command line reads back
    as; anything else unchanged (validation names a bad schedule)."""
    pairs = tuple(config.options)
    out = []
    for name, value in pairs:
        if name == PER_BATCH_K and isinstance(value, str):
            try:
                value = format_schedule(parse_schedule(value))
            except ScheduleError:
                pass
        out.append((name, value))
    new = tuple(out)
    return config if new == pairs else dataclasses.replace(config, options=new)
