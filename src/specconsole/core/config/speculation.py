"""The speculative-decoding rule every engine shares: draft settings without a method.

Why in the core: every engine has a speculative method and keys that size or name the draft
(``core.config.concepts``); when the method is unset those keys do nothing, and a user who
set them meant to speculate. What each engine *does* with its keys is its own package's rule.
"""

from __future__ import annotations

from specconsole.core.config.concepts import Concept, concept_key, concept_keys
from specconsole.core.config.issues import IssueReport
from specconsole.core.config.model import ServerConfig, option_fields

__all__ = ["draft_keys", "spec_fields_without_algorithm"]


def draft_keys(engine: str) -> tuple[str, ...]:
    """The keys that size or name ``engine``'s draft: its length, its shape, its model."""
    return tuple(
        key
        for concept in (Concept.DRAFT_LENGTH, Concept.DRAFT_SHAPE, Concept.DRAFT_MODEL)
        for key in concept_keys(engine, concept)
    )


def spec_fields_without_algorithm(config: ServerConfig, r: IssueReport) -> None:
    """A warning when draft sizes or a draft model are set but speculation is off."""
    set_fields = [f for f in draft_keys(config.engine) if getattr(config, f) is not None]
    if set_fields:
        method = concept_key(config.engine, Concept.METHOD) or "the speculative method"
        field = option_fields(config.engine).get(method)
        example = f" (e.g. {field.example})" if field is not None and field.example else ""
        r.warn(
            set_fields[0],
            f"{', '.join(set_fields)} {'is' if len(set_fields) == 1 else 'are'} ignored: "
            "speculative decoding is off.",
            f"set {method}{example} or remove them.",
        )
