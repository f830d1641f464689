"""How SGLang dies: its own fatal causes, its wording of the generic ones, and its remedies.

Why its own module: which crash a trial had, and what to change, is the first thing a user
reads on the console's crash banner; SGLang's texts for it and its "OOM Troubleshooting"
recipe (with ``CUDA_GRAPH_CAPTURE_FAILED_MSG``'s advice) are SGLang's knowledge, kept apart
from the handlers that read its lines (:mod:`.logs`). The core classifies with these rows and
ranks (:class:`~specconsole.core.logs.fatal.FatalRules`); the generic causes any PyTorch
server shows (CUDA out of memory, illegal memory access, NCCL, SIGKILL) are the core's.
"""

from __future__ import annotations

from enum import StrEnum

from specconsole.core.logs.events import FatalCause, SuggestedFix
from specconsole.core.logs.fatal import CHECK_GPU_FREE, GENERIC_RANKS, READ_EXCERPT
from specconsole.core.logs.grammar import FatalSignature

__all__ = [
    "CONSEQUENCE_TEXTS",
    "FIXES",
    "HINTS",
    "PRECEDENCE",
    "RECOVERABLE",
    "SIGNATURES",
    "TRACEBACK_OPENERS",
    "SGLangCause",
    "argument_error",
]


class SGLangCause(StrEnum):
    """The ways to die only SGLang reports."""

    CUDA_GRAPH_CAPTURE_FAILED = "cuda_graph_capture_failed"
    """``Capture cuda graph failed`` (usually out of memory while capturing)."""
    WARMUP_FAILED = "warmup_failed"
    """``Initialization failed. warmup error``: loaded, but the warm-up request failed."""
    SCHEDULER_EXCEPTION = "scheduler_exception"
    """``Scheduler hit an exception`` with no more specific signature."""


PRECEDENCE: dict[str, int] = {
    SGLangCause.CUDA_GRAPH_CAPTURE_FAILED: 200,
    SGLangCause.WARMUP_FAILED: 800,
    SGLangCause.SCHEDULER_EXCEPTION: 900,
}
"""Where SGLang's causes rank among the generic ones: a failed CUDA-graph capture after the
KV cache (100) and before an illegal memory access (300) — a capture that failed because of
an OOM is a capture failure —; the warm-up and scheduler wrappers after a SIGKILL (700), so any
specific signature in the excerpt beats them."""
assert not set(PRECEDENCE) & set(GENERIC_RANKS)

SIGNATURES: tuple[FatalSignature, ...] = (
    FatalSignature(
        FatalCause.KV_CACHE_NO_MEMORY,
        (
            "Not enough memory. Please try to increase --mem-fraction-static",
            "leave no GPU memory for the KV cache",
        ),
    ),
    FatalSignature(
        SGLangCause.CUDA_GRAPH_CAPTURE_FAILED,
        (
            "Capture cuda graph failed",
            "Capture CUDA graph failed",
            "Capture prefill CUDA graph failed",  # 0.5.14+: the prefill graphs' runner
            "Piecewise CUDA graph failed",  # 0.5.14+: piecewise capture
        ),
    ),
    FatalSignature(
        SGLangCause.WARMUP_FAILED,
        ("warmup error", "Warmup failed", "warm up failed"),
        wrapper=True,
    ),
    FatalSignature(
        SGLangCause.SCHEDULER_EXCEPTION,
        ("hit an exception", "Received sigquit", "scheduler is dead"),
        wrapper=True,
    ),
)
"""SGLang's texts for its causes; the wrappers only say that something failed (the proof shown
is the traceback's exception line)."""

HINTS = ("emory", "raph")
"""Every text of :data:`SIGNATURES` (wrappers aside) holds one of these, and so does
:func:`argument_error`'s ``: error: `` (``rror``, a generic hint)."""

TRACEBACK_OPENERS = ("hit an exception",)
"""``Scheduler hit an exception: <message>`` opens a traceback group without a traceback on
its line."""

RECOVERABLE = ("Decode out of memory happened", "Prefill out of memory")
"""SGLang retracting requests when the KV pool runs low: it recovers by itself."""

CONSEQUENCE_TEXTS = ("Please see the error messages above",)
"""``Initialization failed. Please see the error messages above.``: reports an earlier failure."""


def argument_error(body: str) -> str | None:
    """``sglang serve: error: argument ...`` (argparse under SGLang's own program name; the
    ``launch_server.py: error:`` form is Python's, the core's generic rule)."""
    if ": error: " in body and body.startswith("sglang"):
        return FatalCause.BAD_ARGUMENT
    return None


# ---------------------------------------------------------------------------------------------
# Remedies (SGLang's "OOM Troubleshooting" recipe and CUDA_GRAPH_CAPTURE_FAILED_MSG)
# ---------------------------------------------------------------------------------------------

LOWER_MEM = SuggestedFix(
    "Lower mem_fraction_static (e.g. 0.8, 0.7, or 0.5) so activations and graphs fit.",
    (("mem_fraction_static", "0.7"),),
)
LOWER_GRAPH_BS = SuggestedFix(
    "Lower cuda_graph_max_bs (e.g. 16, or 4) so fewer CUDA graphs are captured.",
    (("cuda_graph_max_bs", "16"),),
)
SHRINK_TREE = SuggestedFix(
    "Shrink the draft tree: speculative_num_steps=3, speculative_eagle_topk=1, "
    "speculative_num_draft_tokens=4.",
    (
        ("speculative_num_steps", "3"),
        ("speculative_eagle_topk", "1"),
        ("speculative_num_draft_tokens", "4"),
    ),
)
LOWER_RUNNING = SuggestedFix(
    "Lower max_running_requests (e.g. 4) to bound per-request memory.",
    (("max_running_requests", "4"),),
)
RAISE_MEM = SuggestedFix(
    "Raise mem_fraction_static: the weights leave no room for the KV cache (draft weights "
    "count too), or use a smaller model / more GPUs (tp_size).",
)
_CHECK_NCCL_GPUS = SuggestedFix(
    "Check that every GPU of tp_size is free and visible (nvidia-smi, "
    "CUDA_VISIBLE_DEVICES); set NCCL_DEBUG=INFO in env to see why."
)
_SMALLER_TP = SuggestedFix("Try a smaller tp_size (fewer GPUs in the NCCL group).")
_KILLED_HOST_MEMORY = SuggestedFix(
    "A process was SIGKILLed, usually by the OS OOM killer: check `dmesg -T | grep -i "
    "oom` and reduce host memory use (fewer parallel loads, lower "
    "max_running_requests or chunked prefill)."
)
_DISABLE_GRAPH = SuggestedFix(
    "As a last resort disable CUDA graphs (--disable-cuda-graph, or "
    "--cuda-graph-backend-decode=disabled on the newest SGLang): a large slowdown.",
)

FIXES: dict[str, tuple[SuggestedFix, ...]] = {
    FatalCause.KV_CACHE_NO_MEMORY: (RAISE_MEM, CHECK_GPU_FREE),
    FatalCause.CUDA_OOM: (LOWER_MEM, LOWER_GRAPH_BS, SHRINK_TREE, LOWER_RUNNING),
    SGLangCause.CUDA_GRAPH_CAPTURE_FAILED: (
        LOWER_MEM,
        LOWER_GRAPH_BS,
        SHRINK_TREE,
        _DISABLE_GRAPH,
    ),
    FatalCause.ILLEGAL_MEMORY_ACCESS: (
        SuggestedFix(
            "Keep speculative_num_draft_tokens <= speculative_num_steps x "
            "speculative_eagle_topk + 1 (SGLang does not check it; larger trees crash).",
        ),
        SHRINK_TREE,
        LOWER_GRAPH_BS,
    ),
    FatalCause.NCCL_ERROR: (
        _CHECK_NCCL_GPUS,
        _SMALLER_TP,
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
    FatalCause.SCHEDULER_KILLED: (_KILLED_HOST_MEMORY, LOWER_RUNNING),
    SGLangCause.SCHEDULER_EXCEPTION: (
        SuggestedFix("Read the excerpt's last exception line; it names the failing component."),
        SHRINK_TREE,
        LOWER_MEM,
    ),
    SGLangCause.WARMUP_FAILED: (
        SuggestedFix(
            "The server loaded but its first (warm-up) request failed: read the excerpt's "
            "exception; an out-of-memory there means lowering mem_fraction_static or "
            "cuda_graph_max_bs."
        ),
        LOWER_MEM,
    ),
    FatalCause.UNKNOWN_TRACEBACK: (READ_EXCERPT,),
}
"""SGLang's remedies for every cause it can die of, most effective first."""
assert set(FIXES) == set(PRECEDENCE) | set(FatalCause)
