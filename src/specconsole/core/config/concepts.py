"""The few ideas the core needs of a configuration, whatever its engine calls them.

Why: search, reports, the console and the simulator reason about a draft length, whether a
configuration speculates and with which method, its draft model, the share of memory it
takes, how many requests it runs at once, its context and its GPU count — but each engine
names these in its own words (SGLang's ``speculative_num_steps``, vLLM's
``num_speculative_tokens``, llama.cpp's ``spec_draft_n_max``). An engine tags each of its
``[server]`` keys with the concept it stands for (``OptionField.concept``); the core reads and
writes a concept through this module and never spells an engine's key. A concept an engine
lacks reads as ``None`` and is never written.
"""

from __future__ import annotations

from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING, Any

from specconsole.core.engine.registry import EngineNotFound, get_engine

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig

__all__ = [
    "Concept",
    "concept_key",
    "concept_keys",
    "concept_value",
    "speculates",
    "with_concepts",
]


class Concept(StrEnum):
    """What a key means to the core (``OptionField.concept``'s values)."""

    METHOD = "method"
    """The speculative method (SGLang's algorithm, vLLM's ``method``); unset: none."""
    DRAFT_MODEL = "draft_model"
    """The draft model's path or hub id."""
    DRAFT_LENGTH = "draft_length"
    """Tokens drafted per step (SGLang's steps, vLLM's K, llama.cpp's ``n_max``)."""
    DRAFT_SHAPE = "draft_shape"
    """Another size of the draft (SGLang's tree width and verify width): it moves the
    capacity line only through the verify tokens (``core.search.capacity``)."""
    MEMORY_FRACTION = "memory_fraction"
    """The share of GPU memory the server takes for weights and KV cache (0 to 1)."""
    GRAPH_BATCH = "graph_batch"
    """The largest batch captured as a CUDA graph (its workspace is carved from memory)."""
    MAX_CONCURRENCY = "max_concurrency"
    """The cap on requests decoded at once."""
    CONTEXT_LENGTH = "context_length"
    """The longest sequence it serves."""
    PARALLEL_SIZE = "parallel_size"
    """GPUs one copy of the model spans (tensor parallelism)."""


CAPACITY_CONCEPTS: frozenset[Concept] = frozenset(
    {Concept.MEMORY_FRACTION, Concept.GRAPH_BATCH, Concept.MAX_CONCURRENCY}
)
"""Concepts that change memory and batching, not how one request is decoded."""


@cache
def _keys(engine: str) -> dict[str, tuple[str, ...]]:
    try:
        fields = get_engine(engine).option_fields
    except EngineNotFound:
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for field in fields:
        if field.concept:
            out[field.concept] = (*out.get(field.concept, ()), field.name)
    return out


def concept_keys(engine: str | None, concept: Concept) -> tuple[str, ...]:
    """The keys of ``engine`` that stand for ``concept``, the main one first (``()``: it has
    none)."""
    return _keys(str(engine)).get(concept, ()) if engine else ()


def concept_key(engine: str | None, concept: Concept) -> str | None:
    """The key of ``engine`` that stands for ``concept`` (``None``: it has none)."""
    keys = concept_keys(engine, concept)
    return keys[0] if keys else None


def concept_value(config: ServerConfig, concept: Concept) -> Any:
    """``config``'s value of ``concept`` (``None``: unset, or the engine has no such key)."""
    key = concept_key(config.engine, concept)
    return None if key is None else dict(config.options).get(key)


def speculates(config: ServerConfig) -> bool:
    """Whether ``config`` names a speculative method or a draft model (what it asks for;
    whether it really drafts is its engine's ``speculation_off``)."""
    method = concept_value(config, Concept.METHOD)
    return (method is not None and str(method).lower() != "none") or bool(
        concept_value(config, Concept.DRAFT_MODEL)
    )


def with_concepts(config: ServerConfig, values: dict[Concept, Any]) -> ServerConfig:
    """``config`` with each concept its engine has set to the given value (``None`` unsets
    it); a concept the engine lacks is left out."""
    from specconsole.core.config.model import set_values

    keyed = {}
    for concept, value in values.items():
        for key in concept_keys(config.engine, concept):
            keyed[key] = value
    return set_values(config, **keyed) if keyed else config
