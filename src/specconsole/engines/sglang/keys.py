"""SGLang's ``[server]`` keys: its server arguments, by their own names.

Why here: the keys are SGLang's argument names (the flag without ``--``, dashes as
underscores), so a plan, the editor, reports and records say exactly what ``sglang serve
--help`` says. Each is declared once — kind, bounds, hint, short label, aliases, the shared
concept it stands for (``core.config.concepts``) — and the core reads them through these
declarations. They are ``plain`` (read by type; a value out of bounds is a validation finding
among the others, not a refused file) and lead the table (written before ``host``), as they
always were. The speculative algorithms are SGLang's (:class:`SpecAlgorithm`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from specconsole.core.config.concepts import Concept
from specconsole.core.config.errors import ConfigError
from specconsole.core.config.options import OptionField
from specconsole.core.config.ties import Tie

__all__ = [
    "EAGLE_FAMILY",
    "KEYS",
    "LIMITS",
    "NEEDS_DRAFT_MODEL",
    "TIES",
    "TREE_ALGOS",
    "TREE_FIELDS",
    "SpecAlgorithm",
    "read_algorithm",
]


class SpecAlgorithm(StrEnum):
    """Speculative decoding algorithms SGLang accepts for ``--speculative-algorithm``."""

    EAGLE = "EAGLE"
    EAGLE3 = "EAGLE3"
    NEXTN = "NEXTN"
    STANDALONE = "STANDALONE"
    NGRAM = "NGRAM"


EAGLE_FAMILY = frozenset({SpecAlgorithm.EAGLE, SpecAlgorithm.EAGLE3, SpecAlgorithm.STANDALONE})
"""Algorithms with a draft tree (NEXTN is rewritten to EAGLE by SGLang)."""
TREE_ALGOS = EAGLE_FAMILY | {SpecAlgorithm.NEXTN}
NEEDS_DRAFT_MODEL = frozenset({SpecAlgorithm.EAGLE, SpecAlgorithm.EAGLE3, SpecAlgorithm.STANDALONE})
"""Algorithms that read a separate draft model (``speculative_draft_model_path``)."""
TREE_FIELDS = ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")


def read_algorithm(value: Any) -> SpecAlgorithm | None:
    """``speculative_algorithm`` from a file or the editor: any case; ``none``, ``off`` or
    blank unsets it."""
    if value is None or isinstance(value, SpecAlgorithm):
        return value
    if isinstance(value, str):
        text = value.strip().upper()
        if text in ("", "NONE", "OFF"):
            return None
        if text in {a.value for a in SpecAlgorithm}:
            return SpecAlgorithm(text)
    names = ", ".join(f'"{a.value}"' for a in SpecAlgorithm)
    raise ConfigError(
        "server.speculative_algorithm",
        f"unknown speculative algorithm {value!r}.",
        f"use one of {names}, or remove the key to disable speculative decoding.",
    )


def _key(name: str, kind: str, hint: str, **more: Any) -> OptionField:
    return OptionField(
        name, kind, "--" + name.replace("_", "-"), hint, plain=True, leads=True, **more
    )


KEYS: tuple[OptionField, ...] = (
    _key(
        "speculative_algorithm",
        "choice",
        "EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM or none",
        choices=tuple(a.value for a in SpecAlgorithm),
        reader=read_algorithm,
        example='"EAGLE3"',
        short="algo",
        concept=Concept.METHOD,
    ),
    _key(
        "speculative_draft_model_path",
        "str",
        "the draft (EAGLE head) model",
        aliases=("speculative_draft_model",),
        concept=Concept.DRAFT_MODEL,
    ),
    _key(
        "speculative_num_steps",
        "int",
        "draft depth per verify step",
        minimum=1,
        maximum=64,
        example="3",
        short="steps",
        concept=Concept.DRAFT_LENGTH,
    ),
    _key(
        "speculative_eagle_topk",
        "int",
        "branching factor of the draft tree",
        minimum=1,
        maximum=64,
        example="1",
        short="topk",
        concept=Concept.DRAFT_SHAPE,
    ),
    _key(
        "speculative_num_draft_tokens",
        "int",
        "verify width (tree nodes + root)",
        minimum=1,
        maximum=1024,
        example="4",
        short="draft",
        concept=Concept.DRAFT_SHAPE,
    ),
    _key(
        "mem_fraction_static",
        "float",
        "share of GPU memory for weights + KV pool",
        minimum=0.0,
        maximum=1.0,
        example="0.85",
        short="mem",
        concept=Concept.MEMORY_FRACTION,
    ),
    _key(
        "cuda_graph_max_bs",
        "int",
        "largest decode batch captured as a CUDA graph",
        minimum=1,
        maximum=8192,
        example="32",
        short="cg-bs",
        aliases=("cuda_graph_max_bs_decode",),
        concept=Concept.GRAPH_BATCH,
    ),
    _key(
        "max_running_requests",
        "int",
        "cap on requests in flight (48 if unset with spec)",
        minimum=1,
        maximum=65536,
        example="48",
        short="mrr",
        concept=Concept.MAX_CONCURRENCY,
    ),
    _key(
        "tp_size",
        "int",
        "tensor-parallel GPU count",
        minimum=1,
        maximum=1024,
        example="1",
        short="tp",
        aliases=("tensor_parallel_size", "tp"),
        concept=Concept.PARALLEL_SIZE,
    ),
    _key(
        "context_length",
        "int",
        "maximum sequence length",
        minimum=1,
        maximum=16_777_216,
        example="32768",
        short="ctx",
        concept=Concept.CONTEXT_LENGTH,
    ),
    _key(
        "attention_backend",
        "str",
        "attention kernels (fa3, flashinfer, trtllm_mha, ...)",
        short="attn",
    ),
)
"""SGLang's tuning keys, in the order files, labels and command lines show them."""

LIMITS: dict[str, int] = {f.name: int(f.maximum) for f in KEYS if f.maximum and f.kind == "int"}
"""Largest value of each integer key (SGLang's own trees are <= 8 steps/topk): a larger one
is a typo or hostile."""

TIES: tuple[Tie, ...] = (
    Tie(
        "speculative_num_draft_tokens",
        ("speculative_num_steps", "speculative_eagle_topk"),
        holds=lambda c: c.speculative_eagle_topk == 1,
        value=lambda c: (
            c.speculative_num_steps + 1 if c.speculative_num_steps is not None else None
        ),
    ),
)
"""With topk 1 SGLang verifies ``steps + 1`` draft tokens whatever the key says."""
