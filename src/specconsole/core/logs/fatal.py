"""Fatal-cause classification: the generic causes, and the one classifier grammars plug into.

Why it exists apart from the line parser: it is the one "is this fatal, and why?" rule of the
product. The parser applies it to each grouped traceback,
:mod:`specconsole.core.machine.handlers.watch`
to single lines and the console's journal highlighter through the parser; each cause carries
the remedies of the grammar that knows it.

What stays here, and why: the signatures every PyTorch-based server prints whatever the
engine — CUDA out of memory, an illegal memory access, NCCL failures, a SIGKILL (the OS OOM
killer, systemd's ``9/KILL``), an orderly SIGTERM, the failed-request lines of uvicorn,
hypercorn and the OpenAI-compatible front ends, a Python argument error before any weights
loaded — with remedies in no engine's words (:data:`GENERIC_FIXES`: an engine's own name
its keys). An
engine's grammar (:class:`~specconsole.core.logs.grammar.LogGrammar`) adds its own causes, its
wording of the generic ones, where its causes rank, and its remedies; :class:`FatalRules`
compiles the lot.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from specconsole.core.logs.events import FatalCause, SuggestedFix

if TYPE_CHECKING:
    from .grammar import LogGrammar

__all__ = [
    "CHECK_GPU_FREE",
    "GENERIC_FIXES",
    "GENERIC_RANKS",
    "READ_EXCERPT",
    "FatalRules",
    "is_exception_line",
    "is_request_exception",
    "killed_by_signal_9",
]

# ---------------------------------------------------------------------------------------------
# Remedies in no engine's words (an engine's grammar gives its own, naming its keys)
# ---------------------------------------------------------------------------------------------

CHECK_GPU_FREE = SuggestedFix(
    "Check that no other process holds GPU memory (nvidia-smi) before raising it.",
)
READ_EXCERPT = SuggestedFix("Read the excerpt; the last exception line says what failed.")

GENERIC_FIXES: dict[str, tuple[SuggestedFix, ...]] = {
    FatalCause.KV_CACHE_NO_MEMORY: (
        SuggestedFix(
            "Give the KV cache room: raise the share of GPU memory the server takes (draft "
            "weights count too), or use a smaller model or more GPUs."
        ),
        CHECK_GPU_FREE,
    ),
    FatalCause.CUDA_OOM: (
        SuggestedFix(
            "Lower the share of GPU memory the server takes, the batch sizes it captures as "
            "CUDA graphs, its draft length or the requests it runs at once, so activations "
            "and graphs fit."
        ),
    ),
    FatalCause.ILLEGAL_MEMORY_ACCESS: (
        SuggestedFix("Shrink the draft (fewer tokens per step): larger drafts crash first."),
    ),
    FatalCause.NCCL_ERROR: (
        SuggestedFix(
            "Check that every GPU of the tensor-parallel group is free and visible "
            "(nvidia-smi, CUDA_VISIBLE_DEVICES); set NCCL_DEBUG=INFO in env to see why."
        ),
        SuggestedFix("Try fewer GPUs in the tensor-parallel group."),
    ),
    FatalCause.BAD_ARGUMENT: (
        SuggestedFix(
            "Fix the argument named in the message; `specconsole validate` checks the "
            "engine's rules before deploying."
        ),
    ),
    FatalCause.SCHEDULER_KILLED: (
        SuggestedFix(
            "A process was SIGKILLed, usually by the OS OOM killer: check `dmesg -T | grep -i "
            "oom` and reduce host memory use (fewer parallel loads, fewer requests at once)."
        ),
    ),
    FatalCause.UNKNOWN_TRACEBACK: (READ_EXCERPT,),
}
"""Remedies for the generic causes when the grammar that classified one gives none."""

# ---------------------------------------------------------------------------------------------
# Generic signatures and precedence
# ---------------------------------------------------------------------------------------------

GENERIC_RANKS: dict[str, int] = {
    FatalCause.KV_CACHE_NO_MEMORY: 100,
    FatalCause.ILLEGAL_MEMORY_ACCESS: 300,
    FatalCause.CUDA_OOM: 400,
    FatalCause.NCCL_ERROR: 500,
    FatalCause.BAD_ARGUMENT: 600,
    FatalCause.SCHEDULER_KILLED: 700,
    FatalCause.UNKNOWN_TRACEBACK: 10_000,
}
"""Which cause wins when one excerpt shows several, lowest first: a CUDA, NCCL or memory
signature anywhere in the excerpt beats the generic wrappers (an engine's ``Scheduler hit an
exception``, a warm-up failure, a traceback) that report it; a bad argument only counts before
any weights loaded; a SIGKILL beats the exception it interrupts. The gaps are for the
engines' causes (a grammar's ``precedence``: SGLang's CUDA-graph capture failure ranks 200,
between the KV cache and an illegal memory access)."""

_SIGNATURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (FatalCause.ILLEGAL_MEMORY_ACCESS, ("illegal memory access",)),
    (FatalCause.CUDA_OOM, ("CUDA out of memory", "CUDA error: out of memory", "OutOfMemoryError")),
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
"""PyTorch's and CUDA's own texts, whichever server runs them."""
_KILLED_RE = re.compile(
    r"(?:exit ?code|exitcode|exit status|return ?code|returncode)\W{0,3}(?:-9|137)\b"
    r"|status=(?:-9|137|9/kill)\b"
    r"|with (?:exit )?code 137\b"
    r"|signal\W{0,2}(?:9|sigkill|killed)\b"
    r"|\bsigkill\b"
    r"|'\s*:\s*-9\s*[,}]"
    r"|\boom[ -]?kill|out of memory: kill|killed process"
    r"|^(?:.*\b\d+ )?killed(?:\s{2,}\S.*)?$",
    re.IGNORECASE,
)
"""A signal-9 death however it is told: a launcher's ``Exit code: -9``, multiprocessing's
``exitcode=-9``, torchrun's ``(exitcode: -9)``, vLLM's ``Failed core proc(s):
{'EngineCore_DP0': -9}``, systemd's ``status=9/KILL``, a container's exit code 137
(128 + 9: ``vllm-1 exited with code 137``), ``signal 9`` / ``SIGKILL``, the kernel's OOM
killer, and the shell's own report (``Killed``, ``line 3: 12345 Killed   python3 ...``)."""
_KILLED_ADVICE = ("if exit code is -9 (sigkill)",)
"""Lower-case advice that names SIGKILL without reporting one (SGLang's "scheduler died
during initialization (exit code: 1). If exit code is -9 (SIGKILL), a common cause is the OS
OOM killer"): taken out before :data:`_KILLED_RE` reads the line."""


def killed_by_signal_9(line: str) -> bool:
    """Whether ``line`` says a process died of SIGKILL (:data:`_KILLED_RE`)."""
    lower = line.lower()
    for advice in _KILLED_ADVICE:
        if advice in lower:
            lower = lower.split(advice, 1)[0]
    return _KILLED_RE.search(lower) is not None


_ARG_EXCEPTIONS = frozenset(
    ("ValueError", "AssertionError", "TypeError", "ArgumentError", "ValidationError")
)
"""Python exceptions that, before any weights loaded, mean the arguments were refused
(pydantic's ``ValidationError``: a configuration class refusing a field, as vLLM's do)."""
_RECOVERABLE = ("exit code: -15", "exitcode=-15", "exit code -15", "status=15/TERM")
"""An orderly stop's SIGTERM exit: never a death."""
_REQUEST_ERRORS = (
    "Exception in ASGI application",  # uvicorn (any ASGI app), with or without a header
    "Error in ASGI Framework",  # hypercorn
    "Error in chat completion stream generator",  # OpenAI-compatible front ends
    "Error in completion stream generator",
    "Error in request",
)
"""Lines that say one request failed: the traceback that follows is not the server's death.
The OpenAI-compatible front ends' wording stays generic on purpose: a request's failure taken
for the server's death ends a trial for nothing."""
REQUEST_EXCEPTIONS = frozenset(("ClientDisconnect", "CancelledError", "ClientDisconnected"))
"""Exceptions that end a request, not the server (a client that went away mid-stream)."""
_HINTS = ("emory", "rror", "NCCL", "nccl", "Watchdog", "Exception in")
"""Every generic signature and request error holds one of these (a grammar adds its own)."""
_KILLED_HINTS = ("illed", "ILLED", "kill", "KILL", "Kill", "-9", "137", "signal")
"""Every line :data:`_KILLED_RE` matches holds one of these."""


def is_request_exception(lines: Iterable[str]) -> bool:
    """Whether a traceback's last exception line is a client's disconnect (not fatal)."""
    last = ""
    for line in lines:
        if line and not line[0].isspace() and not line.startswith("Traceback"):
            last = line
    name = last.split(":", 1)[0].rsplit(".", 1)[-1].strip()
    return name in REQUEST_EXCEPTIONS


_EXC_RE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*(?:[A-Za-z_]\w*)?(?:Error|Exception|Exit|Interrupt)\b")
"""``ValueError:``, ``torch.OutOfMemoryError:``, and Python's bare ``Exception:`` (vLLM's
engine core re-raises a worker's failure as one)."""


def is_exception_line(line: str) -> bool:
    """``ValueError: ...``-style lines that end a Python traceback."""
    return bool(line) and not line[0].isspace() and _EXC_RE.match(line) is not None


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


# ---------------------------------------------------------------------------------------------
# The classifier, compiled from the generic rules and a set of grammars
# ---------------------------------------------------------------------------------------------

_Fixes = Mapping[str, tuple[SuggestedFix, ...]]
_Row = tuple[str, str, "_Fixes | None"]
"""(text, cause, the fixes of the grammar whose signature it is; ``None``: generic)."""


class FatalRules:
    """The generic rules and the grammars' fatal knowledge, as one classifier.

    Built once per set of grammars (:mod:`.dialect` caches it); every method is pure.
    """

    def __init__(self, grammars: Sequence[LogGrammar]) -> None:
        rank = dict(GENERIC_RANKS)
        owner: dict[str, LogGrammar] = {}
        for g in grammars:
            for cause, r in g.precedence.items():
                if cause in GENERIC_RANKS:
                    raise ValueError(f"{g.name}: {cause!r} is a generic cause; it has its rank")
                rank[cause] = min(r, rank.get(cause, r))
                owner.setdefault(cause, g)
        self.rank: dict[str, int] = rank
        self.precedence: tuple[str, ...] = tuple(sorted(rank, key=lambda c: (rank[c], c)))
        """Every cause these rules can give, the winner of a tie first."""

        plain: list[_Row] = [(t, c, None) for c, texts in _SIGNATURES for t in texts]
        wrappers: list[_Row] = []
        for g in grammars:
            for sig in g.signatures:
                if sig.cause not in rank:
                    raise ValueError(f"{g.name}: cause {sig.cause!r} has no rank (precedence)")
                rows = wrappers if sig.wrapper else plain
                rows.extend((t, sig.cause, g.fixes) for t in sig.texts)
        # one pass in rank order: the first text found is the most specific cause in the line
        self._plain: tuple[_Row, ...] = tuple(sorted(plain, key=lambda r: rank[r[1]]))
        self._wrappers: tuple[_Row, ...] = tuple(sorted(wrappers, key=lambda r: rank[r[1]]))
        self._wrapper_causes = frozenset(r[1] for r in wrappers)

        self._recoverable = tuple(
            t.lower()
            for t in _unique([*_RECOVERABLE, *(t for g in grammars for t in g.recoverable)])
        )
        self.request_errors: tuple[str, ...] = _unique(
            [*_REQUEST_ERRORS, *(t for g in grammars for t in g.request_errors)]
        )
        self.consequences: tuple[str, ...] = _unique(
            t for g in grammars for t in g.consequence_texts
        )
        self.hints: tuple[str, ...] = _unique(
            [*_HINTS, *(h for g in grammars for h in g.hints), *_KILLED_HINTS]
        )
        for text in [*(r[0] for r in self._plain), *self.request_errors]:
            if not any(h in text for h in self.hints):
                raise ValueError(f"no grammar's hints cover the fatal text {text!r}")

        fixes: dict[str, tuple[SuggestedFix, ...]] = {}
        for cause in self.precedence:
            mine = owner.get(cause)
            if mine is not None and cause in mine.fixes:
                fixes[cause] = tuple(mine.fixes[cause])
                continue
            fixes[cause] = next(
                (tuple(g.fixes[cause]) for g in grammars if cause in g.fixes),
                GENERIC_FIXES.get(cause, ()),
            )
        self._fixes = fixes

    # -- single lines --------------------------------------------------------------------------

    def might_be_fatal(self, line: str) -> bool:
        """Cheap pre-check: ``False`` means :meth:`signature`, :meth:`is_request_error` and
        the grammars' fatal lines would find nothing in ``line``."""
        return any(h in line for h in self.hints)

    def _row(self, line: str) -> _Row | None:
        for row in self._plain:
            if row[0] in line:
                return row
        return None

    def signature(self, line: str) -> str | None:
        """The most specific fatal cause whose signature is in one line, if any (a signal-9
        death ranks after every text signature)."""
        for text, cause, _ in self._plain:
            if text in line:
                return cause
        if killed_by_signal_9(line):
            return FatalCause.SCHEDULER_KILLED
        return None

    def is_recoverable(self, line: str) -> bool:
        """A line that must never be taken as fatal (an orderly stop, a grammar's
        recoverable texts)."""
        lower = line.lower()
        return any(text in lower for text in self._recoverable)

    def is_request_error(self, line: str) -> bool:
        """A line that says one request failed."""
        return any(text in line for text in self.request_errors)

    def fixes_for(self, cause: str, table: _Fixes | None = None) -> tuple[SuggestedFix, ...]:
        """The remedies for ``cause``: ``table``'s (the fixes of the grammar that found it)
        when it has them, else the grammar that defines the cause, else the first grammar
        that has some, else the generic ones."""
        if table is not None and cause in table:
            return tuple(table[cause])
        got = self._fixes.get(cause)
        return got if got is not None else GENERIC_FIXES.get(cause, ())

    # -- excerpts ------------------------------------------------------------------------------

    def classify(
        self, lines: Iterable[str], *, before_weights: bool = False
    ) -> tuple[str, str, tuple[SuggestedFix, ...]]:
        """Classify fatal log text: (cause, the line that proves it, its remedies).

        Every line of the excerpt is read; the lowest-ranked cause among those it shows wins,
        with the first line that shows it.
        """
        found: dict[str, tuple[str, _Fixes | None]] = {}
        exc_line = ""
        header = ""
        for line in lines:
            text = line.strip()
            if not text:
                continue
            if not header:
                header = text
            if self.is_recoverable(text):
                continue
            row = self._row(text)
            if row is not None and row[1] not in found:
                found[row[1]] = (text, row[2])
            for needle, cause, table in self._wrappers:
                if needle in text:
                    if cause not in found:
                        found[cause] = (text, table)
                    break
            if FatalCause.SCHEDULER_KILLED not in found and killed_by_signal_9(text):
                found[FatalCause.SCHEDULER_KILLED] = (text, None)
            if is_exception_line(line):
                exc_line = text
        wrapped = not self._wrapper_causes.isdisjoint(found)
        if exc_line and before_weights and not wrapped:
            name = exc_line.split(":", 1)[0].rsplit(".", 1)[-1]
            if name in _ARG_EXCEPTIONS and FatalCause.BAD_ARGUMENT not in found:
                found[FatalCause.BAD_ARGUMENT] = (exc_line, None)
        if not found:
            cause: str = FatalCause.UNKNOWN_TRACEBACK
            return cause, exc_line or header, self.fixes_for(cause)
        rank = self.rank
        cause = min(found, key=lambda c: rank[c])
        proof, table = found[cause]
        if cause in self._wrapper_causes and exc_line:
            proof = exc_line  # the wrapper names no cause; its exception line does
        return cause, proof, self.fixes_for(cause, table)
