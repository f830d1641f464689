"""Fatal-cause classification: which of SGLang's (and vLLM's) known ways to die an excerpt shows.

Why it exists apart from the line parser: it is the one "is this fatal, and why?" rule of the
product. The parser applies it to each grouped traceback, :mod:`specconsole.core.machine.watch`
to parsed events and the console's journal highlighter to single lines; each cause carries
SGLang's own remedies (:data:`FIXES`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from specconsole.core.logs.events import FatalCause, SuggestedFix

__all__ = [
    "FIXES",
    "PRECEDENCE",
    "RECOVERABLE",
    "classify_fatal",
    "fatal_signature",
    "is_exception_line",
    "is_recoverable",
    "is_request_error",
    "is_request_exception",
    "might_be_fatal",
]

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
    FatalCause.WARMUP_FAILED: (
        SuggestedFix(
            "The server loaded but its first (warm-up) request failed: read the excerpt's "
            "exception; an out-of-memory there means lowering mem_fraction_static or "
            "cuda_graph_max_bs."
        ),
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
            "CUDA error: out of memory",
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
_KILLED_SIGNS = (
    "exit code: -9",
    "exitcode=-9",
    "exit code -9",
    "status=9/kill",
    "sigkill",
    "oom killer",
    "oom-kill",
    "killed process",
)
"""Lower-case texts of a signal-9 death (SGLang's ``Exit code: -9``, systemd's ``9/KILL``)."""
_ARG_EXCEPTIONS = frozenset(("ValueError", "AssertionError", "TypeError", "ArgumentError"))
_SCHEDULER_SIGNS = ("hit an exception", "Received sigquit", "scheduler is dead")
_WARMUP_SIGNS = ("warmup error", "Warmup failed", "warm up failed")

PRECEDENCE: tuple[FatalCause, ...] = (
    FatalCause.KV_CACHE_NO_MEMORY,
    FatalCause.CUDA_GRAPH_CAPTURE_FAILED,
    FatalCause.ILLEGAL_MEMORY_ACCESS,
    FatalCause.CUDA_OOM,
    FatalCause.NCCL_ERROR,
    FatalCause.BAD_ARGUMENT,
    FatalCause.SCHEDULER_KILLED,
    FatalCause.WARMUP_FAILED,
    FatalCause.SCHEDULER_EXCEPTION,
    FatalCause.UNKNOWN_TRACEBACK,
)
"""Which cause wins when one excerpt shows several, most specific first: a CUDA, NCCL or
memory signature anywhere in the excerpt beats the generic wrappers (``Scheduler hit an
exception``, a warm-up failure, a traceback) that report it; a bad argument only counts
before any weights loaded; a SIGKILL beats the exception it interrupts."""
_RANK = {cause: i for i, cause in enumerate(PRECEDENCE)}

RECOVERABLE: tuple[str, ...] = (
    "Decode out of memory happened",
    "Prefill out of memory",
    "exit code: -15",
    "exitcode=-15",
    "exit code -15",
    "status=15/TERM",
)
"""Lines that look alarming but are not a death: SGLang retracting requests when the KV pool
runs low (it recovers by itself), and an orderly stop's SIGTERM exit."""


REQUEST_ERRORS: tuple[str, ...] = (
    "Exception in ASGI application",  # uvicorn (any ASGI app), with or without a header
    "Error in ASGI Framework",  # hypercorn
    "Error in preprocessing prompt inputs",  # vLLM's OpenAI server: a 400 to one client
    "Error in chat completion stream generator",
    "Error in completion stream generator",
    "Error in request",
)
"""Lines that say one request failed: the traceback that follows is not the server's death."""
REQUEST_EXCEPTIONS = frozenset(("ClientDisconnect", "CancelledError", "ClientDisconnected"))
"""Exceptions that end a request, not the server (a client that went away mid-stream)."""


def is_request_error(line: str) -> bool:
    """A line that says one request failed (see :data:`REQUEST_ERRORS`)."""
    return any(text in line for text in REQUEST_ERRORS)


def is_request_exception(lines: Iterable[str]) -> bool:
    """Whether a traceback's last exception line is a client's disconnect (not fatal)."""
    last = ""
    for line in lines:
        if line and not line[0].isspace() and not line.startswith("Traceback"):
            last = line
    name = last.split(":", 1)[0].rsplit(".", 1)[-1].strip()
    return name in REQUEST_EXCEPTIONS


_SIGNATURE_HINTS = ("emory", "rror", "NCCL", "nccl", "raph", "KV cache", "Watchdog", "utilization")
"""Every signature contains one of these: a line with none of them is checked in a few scans."""
assert all(any(h in n for h in _SIGNATURE_HINTS) for _, ns in _SIGNATURES for n in ns)


def might_be_fatal(line: str) -> bool:
    """Cheap pre-check: ``False`` means :func:`fatal_signature` and :func:`is_request_error`
    would find nothing in ``line``."""
    return any(h in line for h in _SIGNATURE_HINTS) or "Exception in" in line


def fatal_signature(line: str) -> FatalCause | None:
    """The most specific known fatal signature in one line, if any."""
    for cause, needles in _SIGNATURES:
        for needle in needles:
            if needle in line:
                return cause
    return None


_RECOVERABLE_LOWER = tuple(text.lower() for text in RECOVERABLE)


def is_recoverable(line: str) -> bool:
    """A line that must never be taken as fatal (see :data:`RECOVERABLE`)."""
    lower = line.lower()
    return any(text in lower for text in _RECOVERABLE_LOWER)


def _is_killed(text: str) -> bool:
    lower = text.lower()
    return any(k in lower for k in _KILLED_SIGNS)


def classify_fatal(lines: Iterable[str], *, before_weights: bool = False) -> tuple[FatalCause, str]:
    """Classify fatal log text; returns (cause, the line that proves it).

    Every line of the excerpt is read; the cause first in :data:`PRECEDENCE` among those the
    excerpt shows wins, with the line that proves it. Used by the parser for each traceback
    group (with the signature lines it saw just before), by :mod:`specconsole.core.machine.watch`
    and
    by the console's journal highlighter; usable on any excerpt.
    """
    found: dict[FatalCause, str] = {}
    exc_line = ""
    header = ""
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if not header:
            header = text
        if is_recoverable(text):
            continue
        cause = fatal_signature(text)
        if cause is not None:
            found.setdefault(cause, text)
        if any(k in text for k in _WARMUP_SIGNS):
            found.setdefault(FatalCause.WARMUP_FAILED, text)
        elif any(k in text for k in _SCHEDULER_SIGNS):
            found.setdefault(FatalCause.SCHEDULER_EXCEPTION, text)
        if _is_killed(text):
            found.setdefault(FatalCause.SCHEDULER_KILLED, text)
        if is_exception_line(line):
            exc_line = text
    generic = FatalCause.SCHEDULER_EXCEPTION in found or FatalCause.WARMUP_FAILED in found
    if exc_line and before_weights and not generic:
        name = exc_line.split(":", 1)[0].rsplit(".", 1)[-1]
        if name in _ARG_EXCEPTIONS:
            found.setdefault(FatalCause.BAD_ARGUMENT, exc_line)
    if not found:
        return FatalCause.UNKNOWN_TRACEBACK, exc_line or header
    cause = min(found, key=_RANK.__getitem__)
    proof = found[cause]
    if cause in (FatalCause.SCHEDULER_EXCEPTION, FatalCause.WARMUP_FAILED) and exc_line:
        proof = exc_line  # the wrapper names no cause; its exception line does
    return cause, proof


_EXC_RE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)\b")


def is_exception_line(line: str) -> bool:
    """``ValueError: ...``-style lines that end a Python traceback."""
    return bool(line) and not line[0].isspace() and _EXC_RE.match(line) is not None
