"""The speculative-decoding vocabulary the configuration model shares across engines.

Why in the core: ``ServerConfig`` names speculation the way SGLang does (an algorithm, a draft
model, and a tree of ``steps`` x ``topk`` with ``draft tokens`` verified), and every engine that
maps onto those fields (vLLM's ``num_speculative_tokens`` is the steps of a chain) needs the
same groupings and the same "speculation is off, these are ignored" finding. What each engine
*does* with the fields is its own package's rule.
"""

from __future__ import annotations

from specconsole.core.config.issues import IssueReport
from specconsole.core.config.model import ServerConfig, SpecAlgorithm

__all__ = [
    "EAGLE_FAMILY",
    "NEEDS_DRAFT_MODEL",
    "TREE_ALGOS",
    "TREE_FIELDS",
    "spec_fields_without_algorithm",
]

EAGLE_FAMILY = frozenset({SpecAlgorithm.EAGLE, SpecAlgorithm.EAGLE3, SpecAlgorithm.STANDALONE})
"""Algorithms with a draft tree (NEXTN is rewritten to EAGLE by SGLang)."""
TREE_ALGOS = EAGLE_FAMILY | {SpecAlgorithm.NEXTN}
NEEDS_DRAFT_MODEL = frozenset({SpecAlgorithm.EAGLE, SpecAlgorithm.EAGLE3, SpecAlgorithm.STANDALONE})
"""Algorithms that read a separate draft model (``speculative_draft_model_path``)."""
TREE_FIELDS = ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")


def spec_fields_without_algorithm(config: ServerConfig, r: IssueReport) -> None:
    """A warning when tree sizes or a draft model are set but speculation is off."""
    set_fields = [
        f for f in (*TREE_FIELDS, "speculative_draft_model_path") if getattr(config, f) is not None
    ]
    if set_fields:
        r.warn(
            set_fields[0],
            f"{', '.join(set_fields)} {'is' if len(set_fields) == 1 else 'are'} ignored: "
            "speculative decoding is off.",
            'set speculative_algorithm (e.g. "EAGLE3") or remove them.',
        )
