"""How vLLM dies: its own causes, its wording of the generic ones, the lines that are not
deaths, and the remedies its crashes get.

Why its own module: the texts vLLM prints when its KV cache does not fit, when its CPU backend
finds too little host memory, when a draft cannot be loaded, or when a request (not the
server) fails, and what the crash banner advises, are vLLM's knowledge, apart from the
handlers that read its statistics (:mod:`.logs`). The generic causes any PyTorch server shows
(CUDA out of memory, illegal memory access, NCCL, SIGKILL) are the core's. Every text here was
seen in a real vLLM log (0.32 on the CPU: tests/data/vllm/; the GPU texts from the releases'
sources, tests/oracle).
"""

from __future__ import annotations

from enum import StrEnum

from specconsole.core.logs.events import FatalCause, SuggestedFix
from specconsole.core.logs.grammar import FatalSignature

__all__ = [
    "CAUSE_WORDS",
    "CONSEQUENCE_TEXTS",
    "FIXES",
    "HINTS",
    "PRECEDENCE",
    "REQUEST_ERRORS",
    "SIGNATURES",
    "VllmCause",
]


class VllmCause(StrEnum):
    """vLLM's own causes (the generic ones, such as the KV cache not holding one request, are
    the core's :class:`~specconsole.core.logs.events.FatalCause`)."""

    HOST_MEMORY_UTILIZATION = "host_memory_utilization"
    """CPU backend: less host RAM is free than ``--gpu-memory-utilization`` (there a fraction
    of host memory) asks for; the default 0.92 fails on a box with anything else running."""
    KV_SPACE_EXCEEDS_MEMORY = "kv_space_exceeds_memory"
    """CPU backend: ``VLLM_CPU_KVCACHE_SPACE`` (or ``--kv-cache-memory-bytes``) asks for more
    KV cache than the host has free."""
    SPECULATIVE_CONFIG = "speculative_config"
    """``--speculative-config`` refused while the arguments are read (an unknown method)."""
    DRAFT_UNREADABLE = "draft_unreadable"
    """The draft named in ``--speculative-config`` is not a local folder or hub id it can read."""
    WEIGHTS_MISMATCH = "weights_mismatch"
    """A checkpoint's tensors do not fit its ``config.json`` (a draft whose config was
    edited): torch's ``narrow`` fails while the weights load."""
    CONTEXT_BEYOND_MODEL = "context_beyond_model"
    """``--max-model-len`` above what the model's config allows (``max_position_embeddings``)."""
    NATIVE_OPS_MISSING = "native_ops_missing"
    """vLLM's compiled ops (``vllm._C``) did not load — a system library they link is missing
    (``libnuma.so.1`` on the CPU build) — and the worker dies on its first op call."""
    TOO_MANY_SPECULATIVE_TOKENS = "too_many_speculative_tokens"
    """``num_speculative_tokens`` above the rejection sampler's ``MAX_SPEC_LEN`` (128): the
    server starts, and its first drafting request fails the engine (HTTP 500, then exit)."""


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
    FatalSignature(
        VllmCause.HOST_MEMORY_UTILIZATION, ("is less than desired CPU memory utilization",)
    ),
    FatalSignature(VllmCause.KV_SPACE_EXCEEDS_MEMORY, ("is less than requested memory for kv",)),
    FatalSignature(VllmCause.SPECULATIVE_CONFIG, ("validation error for SpeculativeConfig",)),
    FatalSignature(
        VllmCause.DRAFT_UNREADABLE, ("Invalid repository ID or local directory specified",)
    ),
    FatalSignature(VllmCause.WEIGHTS_MISMATCH, ("exceeds dimension size",)),
    FatalSignature(VllmCause.CONTEXT_BEYOND_MODEL, ("is greater than the derived max_model_len",)),
    FatalSignature(VllmCause.TOO_MANY_SPECULATIVE_TOKENS, ("max_spec_len <= MAX_SPEC_LEN",)),
    FatalSignature(VllmCause.NATIVE_OPS_MISSING, ("'_OpNamespace' '_C' object has no attribute",)),
)
"""vLLM's texts for the generic causes and for its own."""

PRECEDENCE: dict[str, int] = {
    VllmCause.KV_SPACE_EXCEEDS_MEMORY: 110,
    VllmCause.HOST_MEMORY_UTILIZATION: 120,
    VllmCause.TOO_MANY_SPECULATIVE_TOKENS: 130,
    VllmCause.WEIGHTS_MISMATCH: 140,
    VllmCause.DRAFT_UNREADABLE: 150,
    VllmCause.CONTEXT_BEYOND_MODEL: 160,
    VllmCause.SPECULATIVE_CONFIG: 170,
    VllmCause.NATIVE_OPS_MISSING: 180,
}
"""Ranks among the generic causes (the KV cache is 100, a bad argument 600): each text names
its own cause exactly, so it beats the generic reading of the exception that carries it."""

CAUSE_WORDS: dict[str, str] = {
    FatalCause.KV_CACHE_NO_MEMORY: (
        "the KV cache cannot hold one request of --max-model-len (GPU memory; host RAM on "
        "the CPU backend)"
    ),
    VllmCause.HOST_MEMORY_UTILIZATION: (
        "not enough free host RAM for --gpu-memory-utilization (on the CPU backend it is a "
        "fraction of host memory)"
    ),
    VllmCause.KV_SPACE_EXCEEDS_MEMORY: "the KV cache asked for is larger than the free host RAM",
    VllmCause.SPECULATIVE_CONFIG: "vLLM refused --speculative-config",
    VllmCause.DRAFT_UNREADABLE: "the draft model could not be found",
    VllmCause.WEIGHTS_MISMATCH: "a checkpoint's weights do not fit its config.json",
    VllmCause.CONTEXT_BEYOND_MODEL: "--max-model-len is longer than the model allows",
    VllmCause.TOO_MANY_SPECULATIVE_TOKENS: "more speculative tokens than vLLM verifies (128)",
    VllmCause.NATIVE_OPS_MISSING: "vLLM's compiled ops did not load (a system library missing)",
}
"""The crash banner's sentence per cause, where the generic one would mislead (vLLM's KV
cache is host RAM on its CPU backend)."""

HINTS = (
    "KV cache",
    "utilization",
    "requested memory",
    "SpeculativeConfig",
    "repository ID",
    "dimension size",
    "max_model_len",
    "MAX_SPEC_LEN",
    "_OpNamespace",
)
"""Every text of :data:`SIGNATURES` holds one of these or a generic hint (``emory``)."""

REQUEST_ERRORS = ("Error in preprocessing prompt inputs",)
"""Lines that say one request failed (its OpenAI server's 400 to one client): the traceback
that follows is not the server's death. The wording every OpenAI-compatible front end shares
(``Error in request``, ``... stream generator``) is the core's."""

CONSEQUENCE_TEXTS = (
    "See root cause above",
    "Engine core initialization failed",
    "See stack trace (above) for the root cause",
    "See stack trace for root cause",
    "please check the stack trace above for the root cause",
)
"""The front end re-raising the engine core's failure (at start-up, or ``EngineDeadError``
while serving): no second fatal event."""

_GPU_FREE = SuggestedFix(
    "Check that no other process holds GPU memory (nvidia-smi): vLLM wants "
    "--gpu-memory-utilization of every GPU free when it starts."
)
_KV_ROOM = SuggestedFix(
    "Raise gpu_memory_utilization (--gpu-memory-utilization, e.g. 0.9): the weights, the "
    "draft and the activations leave no room for the KV cache; or serve on more GPUs "
    "(tensor_parallel_size). On the CPU backend it is a fraction of host RAM, and "
    "VLLM_CPU_KVCACHE_SPACE, when set, decides instead.",
    (("gpu_memory_utilization", "0.9"),),
)
_CPU_KV_SPACE = SuggestedFix(
    "On the CPU backend: raise VLLM_CPU_KVCACHE_SPACE in env (whole GiB of host RAM for the "
    "KV cache; it overrides --kv-cache-memory-bytes), or lower max_model_len to the "
    "estimated maximum model length vLLM names in the message."
)
_CPU_UTILIZATION = SuggestedFix(
    "Lower gpu_memory_utilization (--gpu-memory-utilization, e.g. 0.5): on the CPU backend "
    "it is the fraction of host RAM vLLM reserves, and that much must be free when it starts.",
    (("gpu_memory_utilization", "0.5"),),
)
_CPU_KV_SPACE_INSTEAD = SuggestedFix(
    "Or set VLLM_CPU_KVCACHE_SPACE in env (whole GiB of host RAM for the KV cache, e.g. 4): "
    "vLLM then sizes the KV cache from it instead of reserving a fraction of all host memory."
)
_HOST_FREE = SuggestedFix(
    "Check what else holds host memory (free -g): another server, or a second vLLM left running."
)
_CPU_KV_SMALLER = SuggestedFix(
    "Lower VLLM_CPU_KVCACHE_SPACE in env (whole GiB, below the free host RAM the message "
    "names; 1 holds tens of thousands of tokens of a small model): it overrides "
    "--kv-cache-memory-bytes, which must fit too."
)
_SHORTER_CONTEXT = SuggestedFix(
    "Lower max_model_len (--max-model-len, e.g. 32768): vLLM refuses to start unless one "
    "request of that length fits in the KV cache.",
    (("max_model_len", "32768"),),
)
_LESS_MEMORY = SuggestedFix(
    "Lower gpu_memory_utilization (--gpu-memory-utilization, e.g. 0.8): CUDA graphs and "
    "activations live outside it, and start-up needs that much of the GPU free.",
    (("gpu_memory_utilization", "0.8"),),
)
_FEWER_SEQS = SuggestedFix(
    "Lower max_num_seqs (--max-num-seqs, e.g. 256): fewer and smaller CUDA graphs and "
    "activation buffers.",
    (("max_num_seqs", "256"),),
)
_SHORTER_DRAFT = SuggestedFix(
    "Lower num_speculative_tokens (in --speculative-config, e.g. 3).",
    (("num_speculative_tokens", "3"),),
)

FIXES: dict[str, tuple[SuggestedFix, ...]] = {
    FatalCause.KV_CACHE_NO_MEMORY: (_KV_ROOM, _SHORTER_CONTEXT, _CPU_KV_SPACE, _GPU_FREE),
    VllmCause.HOST_MEMORY_UTILIZATION: (_CPU_UTILIZATION, _CPU_KV_SPACE_INSTEAD, _HOST_FREE),
    VllmCause.KV_SPACE_EXCEEDS_MEMORY: (_CPU_KV_SMALLER, _HOST_FREE),
    VllmCause.SPECULATIVE_CONFIG: (
        SuggestedFix(
            "Check --speculative-config: its method (method) must be one this "
            "release accepts — the message lists them (ngram, eagle, eagle3, draft_model, "
            "mtp, ...) — and every key one it knows (a JSON given in extra_args is passed as "
            "it is)."
        ),
    ),
    VllmCause.DRAFT_UNREADABLE: (
        SuggestedFix(
            "Check speculative_model (the draft's model in --speculative-config): "
            "a folder on the box with config.json and the weights, readable by the service's "
            "user, or a hub id the box can download (not with HF_HUB_OFFLINE=1)."
        ),
    ),
    VllmCause.WEIGHTS_MISMATCH: (
        SuggestedFix(
            "Check the draft (speculative_model): its config.json must describe "
            "its weights (layers, heads, num_key_value_heads); a config edited by hand or "
            "taken from another model fails here. With no draft loading, the target's "
            "checkpoint is the one."
        ),
    ),
    VllmCause.CONTEXT_BEYOND_MODEL: (
        SuggestedFix(
            "Lower max_model_len to at most the model's "
            "max_position_embeddings, the derived maximum the message names "
            "(VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 in env lets it exceed that, at the output's risk)."
        ),
    ),
    VllmCause.NATIVE_OPS_MISSING: (
        SuggestedFix(
            "Install on the box the system library vLLM's 'Failed to import from vllm._C' "
            "warning names (libnuma.so.1: Debian's libnuma1, RHEL's numactl-libs), or "
            "reinstall vLLM built for this platform: its compiled ops did not load."
        ),
    ),
    VllmCause.TOO_MANY_SPECULATIVE_TOKENS: (
        SuggestedFix(
            "Lower num_speculative_tokens to 128 or less: the rejection sampler verifies at "
            "most 128 draft tokens (MAX_SPEC_LEN; vLLM 0.11-0.33).",
            (("num_speculative_tokens", "4"),),
        ),
    ),
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
            "Check that every GPU of tensor_parallel_size is free and visible "
            "(nvidia-smi, CUDA_VISIBLE_DEVICES); set NCCL_DEBUG=INFO in env to see why."
        ),
        SuggestedFix("Try a smaller tensor_parallel_size."),
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
"""Remedies in vLLM's own words: each names the ``[server]`` key (vLLM's argument name) a
fix changes (the banner's one-key fixes apply to those keys). The causes
not listed take the generic remedies (:data:`~specconsole.core.logs.fatal.GENERIC_FIXES`)."""
