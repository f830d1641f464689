"""A configuration field in its engine's own words: how findings, labels and messages name a
``[server]`` key for a session of that engine.

Why: the ``[server]`` keys are shared (SGLang's names, the users' first vocabulary), but a vLLM
user thinks in ``num_speculative_tokens`` and ``gpu_memory_utilization``. Each engine says so
in its editor fields (``EditorField.word`` / ``short``); this module answers "what does engine
E call field F" for the rest of the product, through the registry, so nothing outside an
engine's package spells its vocabulary.
"""

from __future__ import annotations

from functools import cache

from specconsole.core.engine.registry import EngineNotFound, get_engine

__all__ = ["cause_word", "field_short", "field_word"]


@cache
def _words(engine: str) -> dict[str, tuple[str, str]]:
    try:
        fields = get_engine(engine).editor_fields(None)
    except EngineNotFound:
        return {}
    return {f.name: (f.word, f.short) for f in fields if f.word or f.short}


def field_word(engine: str | None, name: str) -> str:
    """``name`` as ``engine`` calls it (the ``[server]`` key when it has no word of its own)."""
    if not engine:
        return name
    return _words(str(engine)).get(name, ("", ""))[0] or name


def field_short(engine: str | None, name: str) -> str | None:
    """The engine's abbreviation of ``name`` for labels, if it has one."""
    if not engine:
        return None
    return _words(str(engine)).get(name, ("", ""))[1] or None


def cause_word(engine: str | None, cause: str) -> str | None:
    """The sentence ``engine``'s log grammar gives a crash cause, if it has its own."""
    if not engine:
        return None
    try:
        return get_engine(str(engine)).log_grammar.cause_words.get(cause)
    except EngineNotFound:
        return None
