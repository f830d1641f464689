"""How vLLM dies: its wording of the generic causes, the lines that are not deaths, and the
remedies its crashes get.

Why its own module: the texts vLLM prints when its KV cache does not fit, or when a request
(not the server) fails, and what the crash banner advises, are vLLM's knowledge, apart from
the handlers that read its statistics (:mod:`.logs`). The generic causes any PyTorch server
shows (CUDA out of memory, illegal memory access, NCCL, SIGKILL) are the core's.
"""

from __future__ import annotations

from specconsole.core.logs.events import FatalCause, SuggestedFix
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

CONSEQUENCE_TEXTS = (
    "See root cause above",
    "Engine core initialization failed",
    "See stack trace (above) for the root cause",
)
"""The front end re-raising the engine core's failure (at start-up, or ``EngineDeadError``
while serving): no second fatal event."""

_GPU_FREE = SuggestedFix(
    "Check that no other process holds GPU memory (nvidia-smi): vLLM wants "
    "--gpu-memory-utilization of every GPU free when it starts."
)
_KV_ROOM = SuggestedFix(
    "Raise --gpu-memory-utilization (mem_fraction_static, e.g. 0.9): the weights, the draft "
    "and the activations leave no room for the KV cache; or serve on more GPUs "
    "(--tensor-parallel-size, tp_size).",
    (("mem_fraction_static", "0.9"),),
)
_SHORTER_CONTEXT = SuggestedFix(
    "Lower --max-model-len (context_length, e.g. 32768): vLLM refuses to start unless one "
    "request of that length fits in the KV cache.",
    (("context_length", "32768"),),
)
_LESS_MEMORY = SuggestedFix(
    "Lower --gpu-memory-utilization (mem_fraction_static, e.g. 0.8): CUDA graphs and "
    "activations live outside it, and start-up needs that much of the GPU free.",
    (("mem_fraction_static", "0.8"),),
)
_FEWER_SEQS = SuggestedFix(
    "Lower --max-num-seqs (max_running_requests, e.g. 256): fewer and smaller CUDA graphs "
    "and activation buffers.",
    (("max_running_requests", "256"),),
)
_SHORTER_DRAFT = SuggestedFix(
    "Lower num_speculative_tokens in --speculative-config (speculative_num_steps, e.g. 3).",
    (("speculative_num_steps", "3"),),
)

FIXES: dict[str, tuple[SuggestedFix, ...]] = {
    FatalCause.KV_CACHE_NO_MEMORY: (_KV_ROOM, _SHORTER_CONTEXT, _GPU_FREE),
    FatalCause.CUDA_OOM: (_LESS_MEMORY, _GPU_FREE, _FEWER_SEQS, _SHORTER_DRAFT),
    FatalCause.ILLEGAL_MEMORY_ACCESS: (
        _SHORTER_DRAFT,
        SuggestedFix(
            "Run without CUDA graphs to find the kernel: add --enforce-eager to extra_args "
            "(slower; a diagnosis, not a setting to keep)."
        ),
    ),
    FatalCause.NCCL_ERROR: (
        SuggestedFix(
            "Check that every GPU of --tensor-parallel-size (tp_size) is free and visible "
            "(nvidia-smi, CUDA_VISIBLE_DEVICES); set NCCL_DEBUG=INFO in env to see why."
        ),
        SuggestedFix("Try a smaller --tensor-parallel-size (tp_size)."),
    ),
    FatalCause.BAD_ARGUMENT: (
        SuggestedFix(
            "Fix the argument named in the message; `specconsole validate` checks vLLM's "
            "rules (--speculative-config included) before deploying."
        ),
    ),
    FatalCause.SCHEDULER_KILLED: (
        SuggestedFix(
            "A vLLM process (the EngineCore or a worker) was SIGKILLed, usually by the OS "
            "OOM killer: check `dmesg -T | grep -i oom` and the host memory loading the "
            "weights takes."
        ),
        _FEWER_SEQS,
    ),
}
"""Remedies in vLLM's own words: each names the vLLM flag and, in parentheses, the
``[server]`` key a fix changes (the banner's one-key fixes apply to those keys). The causes
not listed take the generic remedies (:data:`~specconsole.core.logs.fatal.GENERIC_FIXES`)."""
