"""Text-dependent acceptance: what kind of text a request asks for, and how well it drafts.

Why: on a GPU, EAGLE's accept length depends on the text being generated — code and
repetitive text are predictable and accept long drafts, free chat less, random token soup
least. A simulator that accepted every request alike would make the benchmark's dataset
irrelevant, and a tuner would tune for one synthetic traffic shape. So the simulator reads
each request's text, classifies it, and scales the calibrated acceptance by a fixed,
documented factor per kind.

The rule (also in docs/simulator.md):

1. **Classify** the request text (``/generate`` ``text``, completions ``prompt``, chat: the
   last user message; for specconsole's fitted built-in prompts, the part after the last
   ``Request:``), first match wins:

   * ``repetitive``: at least 24 words of which under 30 % are distinct;
   * ``random``: at least 16 words, fewer than 4 % of them English function words (``the``,
     ``of``, ``and``...) and almost no punctuation — word soup, like bench_serving's random
     dataset;
   * ``summarisation``: the instruction's first 200 characters ask to summarise /
     condense / list key points;
   * ``code``: the instruction asks for or quotes code (a fenced block, a ``def``/``class``
     /``for`` line opening a block, ``#include``, "Python function", "bash script",
     "SQL query", "regular expression", "unit test"...);
   * ``chat``: everything else. **Chat is the calibrated kind**: its acceptance is exactly
     the profile's, so :func:`specconsole.sim.physics.model.predict` without a kind is unchanged.

2. **Scale**: each depth's conditional acceptance ``q`` becomes ``1 - (1 - q) × m`` — the
   rejection probability times the kind's multiplier ``m`` (:data:`REJECTION_MULTIPLIER`:
   repetitive 0.35, code 0.60, summarisation 0.80, chat 1.00, random 3.00), clamped to
   [0.02, 0.995].

3. **Seeded draws**: each request then draws its per-step accepted counts from that
   distribution with the scheduler's seeded Weyl sequence (``--random-seed``, by arrival
   order), so a run is reproducible and a kind's mean is exactly what
   :func:`specconsole.sim.physics.model.predict` says for that ``kind``.

Pure: no I/O, no clocks, no global random state.
"""

from __future__ import annotations

import dataclasses
import re
from enum import StrEnum
from functools import lru_cache

from specconsole.sim.profile import PerfSection


class TextKind(StrEnum):
    """The kinds of text the acceptance rule distinguishes."""

    CHAT = "chat"
    CODE = "code"
    SUMMARISATION = "summarisation"
    REPETITIVE = "repetitive"
    RANDOM = "random"


REJECTION_MULTIPLIER: dict[TextKind, float] = {
    TextKind.REPETITIVE: 0.35,
    TextKind.CODE: 0.60,
    TextKind.SUMMARISATION: 0.80,
    TextKind.CHAT: 1.00,
    TextKind.RANDOM: 3.00,
}
"""Per-depth rejection probability × this factor (chat: the calibration, unchanged)."""

_FUNCTION_WORDS = frozenset(
    [
        "the",
        "of",
        "and",
        "to",
        "a",
        "in",
        "is",
        "that",
        "for",
        "it",
        "as",
        "was",
        "with",
        "be",
        "by",
        "on",
        "not",
        "this",
        "are",
        "or",
        "from",
        "at",
        "an",
        "which",
        "but",
        "have",
        "you",
        "your",
        "we",
        "they",
        "their",
        "has",
        "if",
        "so",
        "can",
        "will",
        "what",
        "how",
        "why",
        "when",
        "i",
        "my",
    ]
)
_CODE_RE = re.compile(
    r"```|^\s*(?:def|class|fn|func|return|import|for|while|if)\b.*[:{(]\s*$|#include|"
    r"\b(?:python|rust|javascript|typescript|bash|sql|go|c|c\+\+|java|pytest)\s+"
    r"(?:function|program|script|query|code|decorator|test|class)|"
    r"\bin (?:python|rust|javascript|typescript|go|c|c\+\+|java|bash)\b|"
    r"\b(?:function|decorator|script|regular expression|regex|unit tests?|sql query)\b",
    re.IGNORECASE | re.MULTILINE,
)
_SUMMARY_RE = re.compile(
    r"\bsummar|\btl;?dr\b|\bcondense\b|\bkey points\b|\bin (?:one|two|three) sentences\b",
    re.IGNORECASE,
)
_PUNCT_RE = re.compile(r"[.,;:!?()\"']")


def instruction_of(text: str) -> str:
    """The part of a prompt that says what to write: after the last ``Request:`` marker
    (specconsole's fitted built-in prompts put background notes first), else all of it."""
    marker = text.rfind("Request:")
    return text[marker + len("Request:") :] if marker >= 0 else text


def classify(text: str) -> TextKind:
    """The kind of text a prompt asks for (see the module docstring for the rule)."""
    words = text.split()
    n = len(words)
    if n >= 24 and len({w.lower() for w in words}) < 0.30 * n:
        return TextKind.REPETITIVE
    if n >= 16:
        function_words = sum(1 for w in words if w.lower() in _FUNCTION_WORDS)
        punctuation = len(_PUNCT_RE.findall(text))
        if function_words < 0.04 * n and punctuation < 0.02 * n:
            return TextKind.RANDOM
    instruction = instruction_of(text)
    if _SUMMARY_RE.search(instruction[:200]):
        return TextKind.SUMMARISATION
    if _CODE_RE.search(instruction):
        return TextKind.CODE
    return TextKind.CHAT


def _scale(q: float, m: float) -> float:
    return min(0.995, max(0.02, 1.0 - (1.0 - q) * m))


@lru_cache(maxsize=256)
def perf_for(perf: PerfSection, kind: TextKind) -> PerfSection:
    """The profile's acceptance coefficients as this kind of text sees them (chat: ``perf``
    itself)."""
    m = REJECTION_MULTIPLIER[kind]
    if m == 1.0:
        return perf
    return dataclasses.replace(
        perf,
        accept_first=_scale(perf.accept_first, m),
        accept_later=_scale(perf.accept_later, m),
        accept_beyond_horizon=_scale(perf.accept_beyond_horizon, m),
    )


def request_perf(perf: PerfSection, text: str) -> tuple[TextKind, PerfSection]:
    """Classify ``text`` and return its kind with the acceptance coefficients it runs with."""
    kind = classify(text)
    return kind, perf_for(perf, kind)
