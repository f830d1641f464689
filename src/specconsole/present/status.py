"""Trial status text: the word a table shows and the sentence a report or details box shows.

``STATUS_WORDS`` maps each ``TrialStatus`` to its short word; ``status_detail`` adds what the
record knows about why (the crash cause and where it happened, the predicted capacity of an
infeasible configuration, the failure reason). A status added to the core (``degraded``,
``skipped: predicted infeasible``…) gets its word here and, if it has a reason worth a
sentence, a branch in ``status_detail``; until then it reads as its enum value with spaces.
"""

from __future__ import annotations

from specconsole.core.machine.state import TrialRecord, TrialStatus
from specconsole.present.formats import format_int, format_rate
from specconsole.present.labels import load_stage_label

STATUS_WORDS: dict[TrialStatus, str] = {
    TrialStatus.RUNNING: "running",
    TrialStatus.OK: "ok",
    TrialStatus.CRASHED: "crashed",
    TrialStatus.LOAD_TIMEOUT: "load timeout",
    TrialStatus.INVALID: "invalid",
    TrialStatus.FAILED: "failed",
    TrialStatus.DEGRADED: "degraded",
    TrialStatus.INFEASIBLE: "infeasible",
    TrialStatus.SKIPPED: "skipped",
    TrialStatus.CANCELLED: "cancelled",
    TrialStatus.PRUNED: "pruned",
}
"""The short word of each status (tables, charts' legends, headless lines)."""


STATUS_GLYPHS: dict[TrialStatus, str] = {
    TrialStatus.RUNNING: "▸",
    TrialStatus.CRASHED: "✖",
    TrialStatus.CANCELLED: "⊘",
    TrialStatus.PRUNED: "⊘",
    TrialStatus.SKIPPED: "⊘",
    TrialStatus.LOAD_TIMEOUT: "!",
    TrialStatus.FAILED: "!",
    TrialStatus.INVALID: "!",
    TrialStatus.INFEASIBLE: "!",
    TrialStatus.DEGRADED: "!",
}
"""A status the trials table's label cell starts with (``ok`` has none): the status stays
in sight when the status column is paged out of a narrow table."""

PARTIAL = frozenset({TrialStatus.CANCELLED, TrialStatus.PRUNED, TrialStatus.CRASHED})
"""Statuses whose figures, if any, are partial (the ladder did not finish): the console's
table shows them in parentheses, never as results."""


def status_word(status: TrialStatus) -> str:
    """``load timeout`` for ``TrialStatus.LOAD_TIMEOUT``; unknown statuses by value."""
    return STATUS_WORDS.get(status, status.value.replace("_", " "))


SPECULATION_OFF = "spec off"
"""Beside the status of a trial that ran without the speculation it asked for."""


def record_status(record: TrialRecord) -> str:
    """The status word, and ``spec off`` for a trial whose server did not speculate
    (``TrialRecord.speculation_off``): ``ok · spec off``."""
    word = status_word(record.status)
    return f"{word} · {SPECULATION_OFF}" if record.speculation_off else word


def crash_where(record: TrialRecord) -> str:
    """``loading/weights``: the phase (and load stage) a crashed trial had reached."""
    crash = record.crash
    if crash is None:
        return ""
    where = crash.phase.value.replace("_", " ")
    if crash.load_stage is not None:
        where += f"/{load_stage_label(crash.load_stage)}"
    return where


def status_detail(record: TrialRecord) -> str:
    """The status with its reason: ``crashed (kv_cache_no_memory in loading/weights)`` or
    ``infeasible (predicted 12,345 tokens)``; the errors themselves are listed separately."""
    word = status_word(record.status)
    if record.speculation_off:
        word += f" (speculation off: {record.speculation_off})"
    if record.crash is not None:
        return f"{word} ({record.crash.cause} in {crash_where(record)})"
    predicted = record.predicted
    if record.status is TrialStatus.INFEASIBLE and predicted is not None:
        return f"{word} (predicted {format_int(predicted.predicted_tokens)} tokens)"
    prune = record.prune
    if record.status is TrialStatus.PRUNED and prune is not None:
        where = f"{prune.metric} at c={prune.concurrency}" if prune.concurrency else "rate probe"
        return (
            f"{word} ({where}: {format_rate(prune.value, 1)} vs best trial {prune.incumbent + 1}'s "
            f"{format_rate(prune.incumbent_value, 1)})"
        )
    return word
