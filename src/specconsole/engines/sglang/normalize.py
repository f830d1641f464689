"""What SGLang does to a configuration before it runs it, applied ahead of time.

Why its own module: the console shows (and records) the configuration as the server will
actually run it — ``topk == 1`` forces ``draft tokens = steps + 1``, an unset tree gets
SGLang's auto sizes, an unset ``max_running_requests`` becomes 48 with speculative decoding —
with a notice per adjustment. Checking is :mod:`specconsole.core.config.validation`'s job.
"""

from __future__ import annotations

import dataclasses

from specconsole.core.config.bounds import is_int
from specconsole.core.config.issues import Issue, Severity
from specconsole.core.config.model import ServerConfig
from specconsole.engines.sglang.adaptive import adaptive_on, schedule_of
from specconsole.engines.sglang.keys import TREE_ALGOS, SpecAlgorithm
from specconsole.engines.sglang.rules import MSG_DRAFT_ADJUSTED

MSG_MAX_RUNNING_RESET = (
    "Max running requests is reset to 48 for speculative decoding. You can override this by "
    "explicitly setting --max-running-requests."
)
"""SGLang's own warning text."""

AUTO_TREE: tuple[int, int, int] = (3, 1, 4)
"""SGLang's auto (steps, topk, draft tokens) for STANDALONE and every model family but the
few listed in :data:`AUTO_TREE_LARGE`."""
AUTO_TREE_LARGE: tuple[int, int, int] = (5, 4, 8)
"""SGLang's auto tree for ``LlamaForCausalLM`` and Grok-1 targets."""
_LARGE_TREE_ARCHS = frozenset({"LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM"})


def auto_tree(architecture: str | None = None) -> tuple[int, int, int]:
    """SGLang's auto (steps, topk, draft tokens) for a target architecture (``config.json``'s
    ``architectures[0]``); unknown or ``None`` gives the common (3, 1, 4)."""
    return AUTO_TREE_LARGE if architecture in _LARGE_TREE_ARCHS else AUTO_TREE


def normalize(
    config: ServerConfig, architecture: str | None = None
) -> tuple[ServerConfig, list[Issue]]:
    """The configuration as SGLang resolves it, and a notice per adjustment; never raises.

    ``architecture`` (the target's ``config.json`` ``architectures[0]``, if known) selects
    SGLang's auto tree; without it the common (3, 1, 4) is assumed. Values that fail
    :func:`validate` are left alone.
    """
    try:
        return _normalize(config, architecture)
    except Exception:  # pragma: no cover - defensive
        return config, []


def _normalize(config: ServerConfig, architecture: str | None) -> tuple[ServerConfig, list[Issue]]:
    if not isinstance(config.speculative_algorithm, SpecAlgorithm):
        return config, []
    algo = config.speculative_algorithm
    notes: list[Issue] = []
    changes: dict[str, object] = {}
    steps, topk, draft = (
        config.speculative_num_steps,
        config.speculative_eagle_topk,
        config.speculative_num_draft_tokens,
    )
    adaptive = schedule_of(config) if adaptive_on(config) else None
    if adaptive is not None and algo in (SpecAlgorithm.EAGLE, SpecAlgorithm.EAGLE3):
        # SGLang's adaptive resolution: topk 1, the middle candidate, draft tokens steps + 1.
        if topk is None:
            topk = 1
            changes["speculative_eagle_topk"] = 1
        if steps is None:
            cands = adaptive.candidates
            steps = cands[len(cands) // 2]
            changes["speculative_num_steps"] = steps
            notes.append(
                Issue(
                    "speculative_num_steps",
                    Severity.NOTICE,
                    f"unset with the adaptive mode: SGLang starts at the middle candidate "
                    f"({steps} of {list(cands)}).",
                    "set speculative_num_steps to one of the candidates.",
                )
            )
    if algo in TREE_ALGOS:
        if steps is None and topk is None and draft is None:
            tree = AUTO_TREE if algo is SpecAlgorithm.STANDALONE else auto_tree(architecture)
            steps, topk, draft = tree
            changes.update(
                speculative_num_steps=steps,
                speculative_eagle_topk=topk,
                speculative_num_draft_tokens=draft,
            )
            notes.append(
                Issue(
                    "speculative_num_steps",
                    Severity.NOTICE,
                    f"tree sizes unset: SGLang chooses steps={steps}, topk={topk}, "
                    f"draft tokens={draft}" + (f" for {architecture}." if architecture else "."),
                    "set all three to tune them.",
                )
            )
        if (
            is_int(steps)
            and steps >= 1
            and topk == 1
            and (draft is None or (is_int(draft) and draft != steps + 1))
        ):
            changes["speculative_num_draft_tokens"] = steps + 1
            notes.append(
                Issue(
                    "speculative_num_draft_tokens",
                    Severity.NOTICE,
                    f"{MSG_DRAFT_ADJUSTED} ({draft or 'unset'} -> {steps + 1}).",
                    f"set speculative_num_draft_tokens = {steps + 1}.",
                )
            )
    elif algo is SpecAlgorithm.NGRAM and draft is None:
        changes["speculative_num_draft_tokens"] = 12
        notes.append(
            Issue(
                "speculative_num_draft_tokens",
                Severity.NOTICE,
                "NGRAM draft tokens unset: SGLang uses 12.",
                "set speculative_num_draft_tokens to tune it.",
            )
        )
    if config.max_running_requests is None and algo in TREE_ALGOS:
        # The reset is part of SGLang's EAGLE-family handling (NEXTN becomes EAGLE).
        changes["max_running_requests"] = 48
        notes.append(
            Issue(
                "max_running_requests",
                Severity.WARNING,
                MSG_MAX_RUNNING_RESET,
                "set max_running_requests explicitly.",
            )
        )
    if not changes:
        return config, notes
    return dataclasses.replace(config, **changes), notes  # type: ignore[arg-type]
