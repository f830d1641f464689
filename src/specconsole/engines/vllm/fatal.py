"""How vLLM dies: its wording of the generic causes, the lines that are not deaths, and the
remedies its crashes get.

Why its own module: the texts vLLM prints when its KV cache does not fit, or when a request
(not the server) fails, and what the crash banner advises, are vLLM's knowledge, apart from
the handlers that read its statistics (:mod:`.logs`). The generic causes any PyTorch server
shows (CUDA out of memory, illegal memory access, NCCL, SIGKILL) are the core's.
"""

from __future__ import annotations

from specconsole.core.logs.events import FatalCause, SuggestedFix
from specconsole.core.logs.fatal import GENERIC_FIXES, LOWER_GRAPH_BS, SHRINK_TREE
from specconsole.core.logs.grammar import FatalSignature

__all__ = ["CONSEQUENCE_TEXTS", "FIXES", "HINTS", "REQUEST_ERRORS", "SIGNATURES"]

SIGNATURES: tuple[FatalSignature, ...] = (
    FatalSignature(
        FatalCause.KV_CACHE_NO_MEMORY,
        (
            "No available memory for the cache blocks",
            "than the available KV cache memory",
            "maximum number of tokens that can be stored in KV cache",
        ),
    ),
    FatalSignature(FatalCause.CUDA_OOM, ("is less than desired GPU memory utilization",)),
)
"""vLLM's texts for the generic causes (it has no cause of its own yet)."""

HINTS = ("KV cache", "utilization")
"""Every text of :data:`SIGNATURES` holds one of these or a generic hint (``emory``)."""

REQUEST_ERRORS = ("Error in preprocessing prompt inputs",)
"""Lines that say one request failed (its OpenAI server's 400 to one client): the traceback
that follows is not the server's death. The wording every OpenAI-compatible front end shares
(``Error in request``, ``... stream generator``) is the core's."""

CONSEQUENCE_TEXTS = ("See root cause above", "Engine core initialization failed")
"""The front end re-raising the engine core's failure: no second fatal event."""

FIXES: dict[str, tuple[SuggestedFix, ...]] = {
    FatalCause.ILLEGAL_MEMORY_ACCESS: (
        SuggestedFix(
            "Keep speculative_num_draft_tokens <= speculative_num_steps x "
            "speculative_eagle_topk + 1 (SGLang does not check it; larger trees crash).",
        ),
        SHRINK_TREE,
        LOWER_GRAPH_BS,
    ),
    FatalCause.NCCL_ERROR: (
        *GENERIC_FIXES[FatalCause.NCCL_ERROR],
        SuggestedFix(
            "Set SGLANG_KILLPG_ON_SCHEDULER_EXCEPTION=1 so one rank's crash stops the others "
            "instead of flooding the log with NCCL timeouts."
        ),
    ),
    FatalCause.BAD_ARGUMENT: (
        SuggestedFix(
            "Fix the argument named in the message; `specconsole validate` checks SGLang's "
            "rules before deploying."
        ),
    ),
}
"""Where vLLM's crashes get other remedies than the generic ones. Verbatim what they got when
SGLang's recipe was the product's only one — three sentences still name SGLang; moving the
grammar into this package changed no behaviour, and rewording them for vLLM belongs to the
change that makes vLLM first-class. The other causes take the generic remedies
(:data:`~specconsole.core.logs.fatal.GENERIC_FIXES`), the same texts."""
