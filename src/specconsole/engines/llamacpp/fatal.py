"""How llama-server dies while it starts: its causes, the texts that prove them, the lines
that look alarming but are not deaths, and the remedies in its own keys.

Why its own module: llama.cpp has no Python tracebacks. A failed load logs a few ``E`` lines
(``ggml_aligned_malloc: insufficient memory``, ``failed to allocate buffer for kv cache``)
and then ``llama_server: exiting due to model loading error``; the grammar (:mod:`.logs`)
keeps the signature lines as evidence and classifies them when the exit line comes
(``ParseState.conclude``). The causes here are every start-up failure measured on the real
server (docs/llamacpp-testbed.md, the shared reference's section 7).
"""

from __future__ import annotations

from enum import StrEnum

from specconsole.core.logs.events import FatalCause, SuggestedFix
from specconsole.core.logs.grammar import FatalSignature

__all__ = [
    "CAUSE_WORDS",
    "FIXES",
    "HINTS",
    "PRECEDENCE",
    "RECOVERABLE",
    "SIGNATURES",
    "LlamaCause",
    "removed_flag_fix",
]


class LlamaCause(StrEnum):
    """llama-server's own causes (the generic ones, such as the KV cache not fitting, are
    the core's :class:`~specconsole.core.logs.events.FatalCause`)."""

    DRAFT_UNREADABLE = "draft_unreadable"
    """The draft GGUF is missing, truncated or not a GGUF (``failed to load draft model``)."""
    MODEL_UNREADABLE = "model_unreadable"
    """The target GGUF cannot be read (``failed to load model``, ``invalid magic``)."""
    TOO_MANY_SLOTS = "too_many_slots"
    """``n_seq_max must be <= 256``: more slots (``--parallel``) than llama.cpp allows."""
    HTTP_THREAD_POOL = "http_thread_pool"
    """The HTTP thread pool could not be created (``std::system_error: Resource temporarily
    unavailable`` in ``httplib::ThreadPool``): ``--parallel`` + 4 threads, one per slot."""
    PORT_IN_USE = "port_in_use"
    """``couldn't bind HTTP server socket``: another process listens on the port."""
    SPECULATION_CONFIG = "speculation_config"
    """The speculative settings were refused while loading (synthetic rates of the wrong
    length)."""
    REMOVED_ARGUMENT = "removed_argument"
    """A flag this build removed (``--draft-max``): it exits 1 before loading anything."""


SIGNATURES: tuple[FatalSignature, ...] = (
    FatalSignature(LlamaCause.DRAFT_UNREADABLE, ("failed to load draft model",)),
    FatalSignature(
        LlamaCause.MODEL_UNREADABLE,
        (
            "failed to load model,",
            "failed to open GGUF file",
            "invalid magic characters",
            "failed to read key-value pairs",
            "error loading model:",
        ),
    ),
    FatalSignature(
        FatalCause.KV_CACHE_NO_MEMORY,
        (
            "failed to allocate buffer for kv cache",
            "insufficient memory (attempted to allocate",
            "failed to fit params to free device memory",
        ),
    ),
    FatalSignature(LlamaCause.TOO_MANY_SLOTS, ("n_seq_max must be <=",)),
    FatalSignature(
        LlamaCause.HTTP_THREAD_POOL, ("httplib::ThreadPool", "Resource temporarily unavailable")
    ),
    FatalSignature(LlamaCause.PORT_IN_USE, ("couldn't bind HTTP server socket",)),
    FatalSignature(LlamaCause.SPECULATION_CONFIG, ("synthetic acceptance rates must contain",)),
    FatalSignature(LlamaCause.REMOVED_ARGUMENT, ("the argument has been removed",)),
)

PRECEDENCE: dict[str, int] = {
    LlamaCause.DRAFT_UNREADABLE: 110,  # its GGUF lines name a file: the draft is the culprit
    LlamaCause.MODEL_UNREADABLE: 120,
    LlamaCause.TOO_MANY_SLOTS: 130,
    LlamaCause.SPECULATION_CONFIG: 140,
    LlamaCause.PORT_IN_USE: 150,
    LlamaCause.HTTP_THREAD_POOL: 160,
    LlamaCause.REMOVED_ARGUMENT: 590,
}
"""Ranks among the generic causes (the KV cache is 100, a bad argument 600)."""

CAUSE_WORDS: dict[str, str] = {
    FatalCause.KV_CACHE_NO_MEMORY: "not enough memory for the KV cache (ctx_size × parallel)",
    LlamaCause.DRAFT_UNREADABLE: "the draft model could not be loaded",
    LlamaCause.MODEL_UNREADABLE: "the model could not be loaded",
    LlamaCause.TOO_MANY_SLOTS: "more slots (parallel) than llama-server allows",
    LlamaCause.HTTP_THREAD_POOL: "llama-server could not start its HTTP threads",
    LlamaCause.PORT_IN_USE: "its port is already in use",
    LlamaCause.SPECULATION_CONFIG: "the speculation settings were refused",
    LlamaCause.REMOVED_ARGUMENT: "this build removed an argument it was given",
}
"""The crash banner's sentence per cause: llama-server's KV cache lives where its layers do —
host memory on a CPU build — so the generic "no GPU memory" would mislead."""

HINTS: tuple[str, ...] = (
    "failed to",
    "insufficient memory",
    "n_seq_max",
    "ThreadPool",
    "temporarily unavailable",
    "couldn't bind",
    "invalid magic",
    "error loading model",
    "synthetic acceptance",
    "has been removed",
)
"""Every signature text holds one of these (the parser's cheap pre-check)."""

RECOVERABLE: tuple[str, ...] = (
    "draft model vocab type must match",
    "the target and draft vocabs are not compatible",
    "requires a draft context",
)
"""The server says speculation could not start and serves without it: a marked trial
(``SpeculationOff``), never a death."""

_LOWER_CTX = SuggestedFix(
    "Lower ctx_size (-c): llama-server allocates the whole KV cache for it at start-up "
    "(one cell per token); 8192 fits this model's training context.",
    (("ctx_size", "8192"),),
)
_FIT_ON = SuggestedFix(
    'Leave fit on (unset fit, or fit = "on"): llama.cpp then lowers the unset sizes to '
    "what the device memory holds instead of failing.",
    (("fit", "on"),),
    only_when=(("fit", ("off",)), ("ctx_size", (None,))),  # fit lowers only unset sizes
)
_FEWER_SLOTS = SuggestedFix(
    "Lower parallel (--parallel, the slots decoded at once): each slot holds its own KV "
    "context unless it is unified.",
    (("parallel", "4"),),
)
_DRAFT_PATH = SuggestedFix(
    "Check speculative_draft_model_path (-md): the file must exist on the box, be readable "
    "by the service's user and be a complete GGUF file."
)

FIXES: dict[str, tuple[SuggestedFix, ...]] = {
    FatalCause.KV_CACHE_NO_MEMORY: (_LOWER_CTX, _FEWER_SLOTS, _FIT_ON),
    LlamaCause.DRAFT_UNREADABLE: (_DRAFT_PATH,),
    LlamaCause.MODEL_UNREADABLE: (
        SuggestedFix(
            "Check model_path (-m): the GGUF file must exist on the box, be readable by the "
            "service's user and be complete (a download cut short fails this way)."
        ),
    ),
    LlamaCause.TOO_MANY_SLOTS: (
        SuggestedFix(
            "Set parallel to 256 or less: llama.cpp caps the sequences of one context "
            "(n_seq_max) at 256.",
            (("parallel", "256"),),
        ),
    ),
    LlamaCause.HTTP_THREAD_POOL: (
        SuggestedFix(
            "Lower parallel: llama-server starts one HTTP thread per slot plus 4 and the box "
            "refused that many threads (ulimit -u, TasksMax of the unit).",
            (("parallel", "64"),),
        ),
        SuggestedFix("Or cap the HTTP threads: add --threads-http 64 to extra_args."),
    ),
    LlamaCause.PORT_IN_USE: (
        SuggestedFix(
            "Another process listens on the port: stop it (ss -ltnp shows which), or set "
            "port to a free one."
        ),
    ),
    LlamaCause.SPECULATION_CONFIG: (
        SuggestedFix(
            "Give spec_synth_rates one probability per drafted position: as many values as "
            "spec_draft_n_max (3 when unset), or unset spec_synth_rates."
        ),
    ),
    LlamaCause.REMOVED_ARGUMENT: (
        SuggestedFix("Use the argument's new name, as the message says (see removed_flag_fix)."),
    ),
    FatalCause.BAD_ARGUMENT: (
        SuggestedFix(
            "Fix the argument named in the message; `specconsole validate` checks llama.cpp's "
            "rules and, on the box, its own --help before deploying."
        ),
    ),
}
"""Remedies in llama.cpp's own keys (the banner's one-key fixes apply to those keys)."""


def removed_flag_fix(flag: str, key: str | None, new: str) -> SuggestedFix:
    """The remedy for a removed flag, naming its new spelling and the ``[server]`` key that
    renders it (``--draft-max`` -> ``spec_draft_n_max``, rendered ``--spec-draft-n-max``)."""
    if key is None:
        return SuggestedFix(f"Replace {flag} with {new} (in extra_args).")
    return SuggestedFix(
        f"{flag} was renamed {new}: set {key} instead (specconsole renders it as {new}) and "
        f"remove {flag} from extra_args."
    )
