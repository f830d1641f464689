"""How a crash reads: its cause as a sentence, the fix that leads with the swept axis, and
the banner's rows for a given width.

Why: the banner is the moment a user decides, often at 80×24. A cause id such as
``kv_cache_no_memory`` is jargon where a sentence does; the first fix should be the one the
sweep itself can act on ("lower speculative_num_steps: predicted −22,916 KV tokens"), using
the controller's own capacity prediction recorded on the trial, not a second estimate; and
what fits must be chosen line by line (the title, then the one-key choices with what each
would deploy, then the fixes, then the server's own words), never cut in the middle of a
choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from specconsole.core.engine.vocabulary import cause_word
from specconsole.core.machine.state import (
    CapacityPrediction,
    ControllerState,
    TrialRecord,
    TrialStatus,
)
from specconsole.present.charts.series import swept_axis
from specconsole.present.editor_fields import editor_fields, field_text
from specconsole.present.formats import format_int
from specconsole.present.labels import short_name

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig

CAUSES: dict[str, str] = {
    "kv_cache_no_memory": "no GPU memory left for the KV cache",
    "cuda_oom": "CUDA ran out of GPU memory",
    "illegal_memory_access": "an illegal GPU memory access (often an invalid draft tree)",
    "nccl_error": "a multi-GPU (NCCL) communication error",
    "bad_argument": "the server refused an argument",
    "scheduler_killed": "a server process was killed (often the OS's out-of-memory killer)",
    "unknown_traceback": "an error the log does not name (see the excerpt)",
    "load_timeout": "it did not finish loading in time",
    "cuda_graph_capture_failed": "CUDA-graph capture failed",
}
"""Known crash causes as sentences (an engine may say its own: ``LogGrammar.cause_words``);
any other cause reads as its words."""

MEMORY_CAUSES = frozenset({"kv_cache_no_memory", "cuda_oom", "cuda_graph_capture_failed"})
"""Causes a smaller speculative tree (the swept axis, usually) can cure."""


def cause_text(cause: str, engine: str | None = None) -> str:
    """``no GPU memory left for the KV cache`` for ``kv_cache_no_memory`` (in ``engine``'s
    own words where its grammar has them: llama.cpp's KV cache may live in host memory)."""
    return cause_word(engine, cause) or CAUSES.get(cause, cause.replace("_", " "))


def _last_loaded(records: Sequence[TrialRecord], axis: str) -> TrialRecord | None:
    loaded = [r for r in records if r.status is TrialStatus.OK and r.capacity is not None]
    numeric = [r for r in loaded if isinstance(getattr(r.config, axis, None), int | float)]
    return max(numeric, key=lambda r: getattr(r.config, axis)) if numeric else None


def axis_fix(state: ControllerState, record: TrialRecord) -> str | None:
    """The fix on the sweep's own axis, first in the banner: ``lower speculative_num_steps:
    steps=10 predicted -22,916 KV tokens (minimum 1,536); steps=5 loaded with 242,794``.
    None when the crash is not one a smaller value cures or the sweep has no numeric axis."""
    crash = record.crash
    predicted = record.predicted
    infeasible = predicted is not None and predicted.predicted_tokens is not None
    infeasible = infeasible and predicted is not None and not predicted.feasible
    if crash is None or (crash.cause not in MEMORY_CAUSES and not infeasible):
        return None
    axis = swept_axis(state.plan, state.trials)
    value = getattr(record.config, axis, None) if axis else None
    if axis is None or not isinstance(value, int | float):
        return None
    engine = record.config.engine
    short = short_name(axis, engine)
    parts = [f"lower {axis}:"]
    if infeasible and predicted is not None:
        parts.append(
            f"{short}={value} predicted {format_int(predicted.predicted_tokens)} KV tokens "
            f"(minimum {format_int(predicted.minimum_tokens)})"
        )
    else:
        parts.append(f"{short}={value} crashed")
    good = _last_loaded(state.trials, axis)
    if good is not None:
        parts[-1] += ";"
        parts.append(
            f"{short}={getattr(good.config, axis)} loaded with {format_int(good.capacity)}"
        )
    return " ".join(parts)


def pack(items: Sequence[str], width: int, sep: str = " · ") -> list[str]:
    """``items`` joined into as few lines of at most ``width`` cells as they fit, never
    splitting an item (an item longer than a line is cut with ``…``)."""
    lines: list[str] = []
    for item in items:
        item = cut(item, width)
        if lines and len(lines[-1]) + len(sep) + len(item) <= width:
            lines[-1] += sep + item
        else:
            lines.append(item)
    return lines


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells (``…`` marks a cut)."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def banner_rows(
    title: str,
    choices: Sequence[str],
    fixes: Sequence[str],
    cause: str,
    excerpt: Sequence[str],
    width: int,
    rows: int,
) -> list[tuple[str, str]]:
    """The banner's ``(kind, text)`` rows in ``width`` × ``rows``. What stays when rows are
    short, in order: the title; the choices (at most two rows); the first fix; the server's
    message; the last log line; then further fixes and earlier log lines in turn. They are
    shown grouped (fixes, message, log lines oldest first). Kinds: ``title``, ``keys``,
    ``fix``, ``cause``, ``dim``."""
    head: list[tuple[str, str]] = [("title", cut(title, width))]
    head += [("keys", line) for line in pack(choices, width)[:2]]
    room = max(0, rows - len(head))
    n_fix = min(len(fixes), 1)
    n_cause = 1
    n_log = min(len(excerpt), 1)
    wanted = [("fix", len(fixes)), ("log", len(excerpt))]
    while n_fix + n_cause + n_log < room and any(
        (kind == "fix" and n_fix < total) or (kind == "log" and n_log < total)
        for kind, total in wanted
    ):
        if n_fix < len(fixes):
            n_fix += 1
        if n_fix + n_cause + n_log < room and n_log < len(excerpt):
            n_log += 1
    body = [("fix", cut(f"→ {fix}", width)) for fix in fixes[:n_fix]]
    body.append(("cause", cut(cause, width)))
    body += [("dim", cut(f"│ {line}", width)) for line in excerpt[len(excerpt) - n_log :]]
    return (head + body)[: max(1, rows)]


def seen_before(trials: Sequence[TrialRecord], config: ServerConfig) -> str | None:
    """What the session already knows about ``config``: that it crashed (and why) or how it
    ran, by the editor's fields (the editor flags a configuration that already crashed)."""
    names = [f.name for f in editor_fields(config.engine, None)]
    key = [field_text(config, n) for n in names]
    same = [t for t in trials if [field_text(t.config, n) for n in names] == key]
    if not same:
        return None
    last = same[-1]
    if last.crash is not None:
        cause = cause_text(last.crash.cause, config.engine)
        return (
            f"already crashed in trial {last.index + 1}: {cause} "
            "— deploying it again will most likely crash again"
        )
    if last.status is TrialStatus.OK:
        return f"already ran as trial {last.index + 1} (ok)"
    return f"already tried as trial {last.index + 1} ({last.status.value.replace('_', ' ')})"


def capacity_text(
    prediction: CapacityPrediction | None, config: ServerConfig, axis: str | None
) -> str:
    """The editor's capacity line, leading with the sweep's own axis as the banner's fix
    does: ``steps=10: predicted -22,916 KV tokens (minimum 1,536): will NOT load``."""
    value = getattr(config, axis, None) if axis else None
    lead = f"{short_name(axis)}={value}: " if axis and value is not None else ""
    if prediction is None or prediction.predicted_tokens is None:
        reason = prediction.reason if prediction is not None and prediction.reason else ""
        return f"{lead}predicted KV capacity: {reason or 'not enough trials yet'}"
    tokens = format_int(prediction.predicted_tokens)
    if prediction.feasible:
        return f"{lead}predicted {tokens} KV tokens: loads"
    minimum = format_int(prediction.minimum_tokens)
    return f"{lead}predicted {tokens} KV tokens (minimum {minimum}): will NOT load"
