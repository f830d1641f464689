"""A key in its engine's own short words, and a crash cause in its engine's own sentence.

Why: labels, charts and crash texts abbreviate a ``[server]`` key (``steps``, vLLM's
``spec-tokens``, llama.cpp's ``n_max``) and tell a cause in the engine's words; each engine
says so in its declarations (``OptionField.short``, its log grammar's ``cause_words``). This
module answers "what does engine E call this" for the rest of the product, through the
registry, so nothing outside an engine's package spells its vocabulary.
"""

from __future__ import annotations

from specconsole.core.engine.registry import EngineNotFound, get_engine

__all__ = ["capacity_word", "cause_word", "field_short"]


def field_short(engine: str | None, name: str) -> str | None:
    """The engine's abbreviation of key ``name`` for labels, if it declares one."""
    if not engine:
        return None
    try:
        fields = get_engine(str(engine)).option_fields
    except EngineNotFound:
        return None
    return next((f.short for f in fields if f.name == name and f.short), None)


def cause_word(engine: str | None, cause: str) -> str | None:
    """The sentence ``engine``'s log grammar gives a crash cause, if it has its own."""
    if not engine:
        return None
    try:
        return get_engine(str(engine)).log_grammar.cause_words.get(cause)
    except EngineNotFound:
        return None


def capacity_word(engine: str | None) -> str | None:
    """What ``engine``'s log calls the KV-cache capacity it reports, if its grammar says."""
    if not engine:
        return None
    try:
        return get_engine(str(engine)).log_grammar.capacity_words or None
    except EngineNotFound:
        return None
