"""Fatal-cause classification: which of SGLang's (and vLLM's) known ways to die an excerpt shows.

Why it exists apart from the line parser: it is the one "is this fatal, and why?" rule of the
product. The parser applies it to each grouped traceback, :mod:`specconsole.core.watch`
to parsed events and the console's journal highlighter to single lines; each cause carries
SGLang's own remedies (:data:`FIXES`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from specconsole.core.log_events import FatalCause, SuggestedFix

__all__ = ["FIXES", "classify_fatal", "fatal_signature", "is_exception_line"]

# ---------------------------------------------------------------------------------------------
# Remedies (SGLang's "OOM Troubleshooting" recipe and CUDA_GRAPH_CAPTURE_FAILED_MSG)
# ---------------------------------------------------------------------------------------------

_LOWER_MEM = SuggestedFix(
    "Lower mem_fraction_static (e.g. 0.8, 0.7, or 0.5) so activations and graphs fit.",
    (("mem_fraction_static", "0.7"),),
)
_LOWER_GRAPH_BS = SuggestedFix(
    "Lower cuda_graph_max_bs (e.g. 16, or 4) so fewer CUDA graphs are captured.",
    (("cuda_graph_max_bs", "16"),),
)
_SHRINK_TREE = SuggestedFix(
    "Shrink the draft tree: speculative_num_steps=3, speculative_eagle_topk=1, "
    "speculative_num_draft_tokens=4.",
    (
        ("speculative_num_steps", "3"),
        ("speculative_eagle_topk", "1"),
        ("speculative_num_draft_tokens", "4"),
    ),
)
_LOWER_RUNNING = SuggestedFix(
    "Lower max_running_requests (e.g. 4) to bound per-request memory.",
    (("max_running_requests", "4"),),
)
_RAISE_MEM = SuggestedFix(
    "Raise mem_fraction_static: the weights leave no room for the KV cache (draft weights "
    "count too), or use a smaller model / more GPUs (tp_size).",
)
_DISABLE_GRAPH = SuggestedFix(
    "As a last resort disable CUDA graphs (--disable-cuda-graph, or "
    "--cuda-graph-backend-decode=disabled on the newest SGLang): a large slowdown.",
)

FIXES: dict[FatalCause, tuple[SuggestedFix, ...]] = {
    FatalCause.KV_CACHE_NO_MEMORY: (
        _RAISE_MEM,
        SuggestedFix(
            "Check that no other process holds GPU memory (nvidia-smi) before raising it.",
        ),
    ),
    FatalCause.CUDA_OOM: (_LOWER_MEM, _LOWER_GRAPH_BS, _SHRINK_TREE, _LOWER_RUNNING),
    FatalCause.CUDA_GRAPH_CAPTURE_FAILED: (
        _LOWER_MEM,
        _LOWER_GRAPH_BS,
        _SHRINK_TREE,
        _DISABLE_GRAPH,
    ),
    FatalCause.ILLEGAL_MEMORY_ACCESS: (
        SuggestedFix(
            "Keep speculative_num_draft_tokens <= speculative_num_steps x "
            "speculative_eagle_topk + 1 (SGLang does not check it; larger trees crash).",
        ),
        _SHRINK_TREE,
        _LOWER_GRAPH_BS,
    ),
    FatalCause.NCCL_ERROR: (
        SuggestedFix(
            "Check that every GPU of tp_size is free and visible (nvidia-smi, "
            "CUDA_VISIBLE_DEVICES); set NCCL_DEBUG=INFO in env to see why."
        ),
        SuggestedFix("Try a smaller tp_size (fewer GPUs in the NCCL group)."),
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
    FatalCause.SCHEDULER_KILLED: (
        SuggestedFix(
            "A process was SIGKILLed, usually by the OS OOM killer: check `dmesg -T | grep -i "
            "oom` and reduce host memory use (fewer parallel loads, lower "
            "max_running_requests or chunked prefill)."
        ),
        _LOWER_RUNNING,
    ),
    FatalCause.SCHEDULER_EXCEPTION: (
        SuggestedFix("Read the excerpt's last exception line; it names the failing component."),
        _SHRINK_TREE,
        _LOWER_MEM,
    ),
    FatalCause.UNKNOWN_TRACEBACK: (
        SuggestedFix("Read the excerpt; the last exception line says what failed."),
    ),
}
"""Suggested remedies for every fatal cause, most effective first."""

# ---------------------------------------------------------------------------------------------
# Fatal signatures, most specific first
# ---------------------------------------------------------------------------------------------

_SIGNATURES: tuple[tuple[FatalCause, tuple[str, ...]], ...] = (
    (
        FatalCause.KV_CACHE_NO_MEMORY,
        (
            "Not enough memory. Please try to increase --mem-fraction-static",
            "leave no GPU memory for the KV cache",
            "No available memory for the cache blocks",
            "than the available KV cache memory",
            "maximum number of tokens that can be stored in KV cache",
        ),
    ),
    (
        FatalCause.CUDA_GRAPH_CAPTURE_FAILED,
        ("Capture cuda graph failed", "Capture CUDA graph failed"),
    ),
    (FatalCause.ILLEGAL_MEMORY_ACCESS, ("illegal memory access",)),
    (
        FatalCause.CUDA_OOM,
        (
            "CUDA out of memory",
            "OutOfMemoryError",
            "is less than desired GPU memory utilization",
        ),
    ),
    (
        FatalCause.NCCL_ERROR,
        (
            "NCCL error",
            "ncclUnhandledCudaError",
            "ncclInternalError",
            "ncclSystemError",
            "ProcessGroupNCCL",
            "Watchdog caught collective operation timeout",
            "DistBackendError",
        ),
    ),
)
_SIG_RANK = {cause: i for i, (cause, _) in enumerate(_SIGNATURES)}
_ARG_EXCEPTIONS = ("ValueError", "AssertionError", "TypeError", "argparse.ArgumentError")
_KILLED_SIGNS = ("exit code: -9", "status=9/KILL", "OOM killer", "oom-kill")


def fatal_signature(line: str) -> FatalCause | None:
    """The most specific known fatal signature in one line, if any."""
    for cause, needles in _SIGNATURES:
        for needle in needles:
            if needle in line:
                return cause
    return None


def classify_fatal(lines: Iterable[str], *, before_weights: bool = False) -> tuple[FatalCause, str]:
    """Classify fatal log text; returns (cause, the line that proves it).

    Used by the parser for each traceback group and usable on any excerpt.
    """
    best: FatalCause | None = None
    best_line = ""
    exc_line = ""
    header = ""
    scheduler = False
    killed_line = ""
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if not header:
            header = text
        cause = fatal_signature(text)
        if cause is not None and (best is None or _SIG_RANK[cause] < _SIG_RANK[best]):
            best, best_line = cause, text
        if "hit an exception" in text or "Received sigquit" in text or "warmup error" in text:
            scheduler = True
        if any(k in text for k in _KILLED_SIGNS):
            killed_line = killed_line or text
        if is_exception_line(line):
            exc_line = text
    if best is not None:
        return best, best_line
    if (
        exc_line
        and before_weights
        and not scheduler
        and exc_line.split(":", 1)[0].rsplit(".", 1)[-1]
        in {e.rsplit(".", 1)[-1] for e in _ARG_EXCEPTIONS}
    ):
        return FatalCause.BAD_ARGUMENT, exc_line
    if killed_line:
        return FatalCause.SCHEDULER_KILLED, killed_line
    if scheduler:
        return FatalCause.SCHEDULER_EXCEPTION, exc_line or header
    return FatalCause.UNKNOWN_TRACEBACK, exc_line or header


_EXC_RE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)\b")


def is_exception_line(line: str) -> bool:
    """``ValueError: ...``-style lines that end a Python traceback."""
    return bool(line) and not line[0].isspace() and _EXC_RE.match(line) is not None
