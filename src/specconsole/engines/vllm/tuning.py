"""vLLM's answers to tuning by level: the baseline, the per-batch-size K, the what-if.

Why its own module: these are the engine's slots a per-level sweep asks
(``core.engine.protocol``, "tuning by level"), in vLLM's terms (read from the 0.34.0 sdist,
never imported):

* **the baseline**: ``vllm serve`` without ``--speculative-config``;
* **the schedule**: ``num_speculative_tokens_per_batch_size`` (:mod:`.options`), whose
  inclusive ranges vLLM expands into a dense batch size → K table
  (``build_dynamic_sd_schedule_lookup``, ``vllm/v1/spec_decode/dynamic/utils.py``) that the
  scheduler indexes with the number of requests it schedules in each step — no EMA, no
  warm-up: the K follows the batch at once. Each K is capped at ``num_speculative_tokens``
  (the largest pick's, so every K counts; the KV lookahead and the CUDA graphs are sized for
  it — 0.34 captures a graph per K of the table, ``cudagraph_utils.py``), a range's K 0
  drafts nothing. The ranges are the levels' (``core.engine.schedule.level_ranges``); the
  last one ends at ``max_num_seqs`` (vLLM's 1024 when unset: the tail carries the last K
  anyway). Dynamic K is turned off with data parallelism (vLLM warns and drafts the static
  K), which specconsole does not render;
* **the what-if**: ``rejection_sample_method = "synthetic"`` with
  ``synthetic_acceptance_length`` L (0.34.0): per position the *unconditional* acceptance
  of vLLM's minimum-variance schedule — 1 for the first ``floor(L - 1)`` draft tokens, the
  fraction for the next, 0 after (``_acceptance_length_to_rates``), so the mean is L at full
  K and less when a smaller K drafts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from specconsole.core.config.issues import Issue, Severity
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.options import with_options
from specconsole.core.engine.schedule import (
    Edge,
    LengthWords,
    LevelPick,
    Refusal,
    ScheduleRow,
    merged,
    pick_rows,
    static_lengths,
    switch_points,
)
from specconsole.engines.vllm.options import (
    OPTION_FIELDS,
    PER_BATCH_K,
    SYNTHETIC,
    ScheduleError,
    format_schedule,
    parse_schedule,
)

__all__ = [
    "DEFAULT_MAX_NUM_SEQS",
    "edges",
    "fix_acceptance",
    "fixed_acceptance",
    "no_adaptive_mode",
    "schedule",
    "scheduled",
    "steps_at",
    "without_speculation",
]

DEFAULT_MAX_NUM_SEQS = 1024
"""vLLM's largest ``max_num_seqs`` default (a GPU of 70 GiB or more): where an open last
range ends when the configuration sets none."""

_SPEC_KEYS = ("method", "speculative_model", "num_speculative_tokens", PER_BATCH_K, SYNTHETIC)
"""What ``--speculative-config`` carries: gone without speculation."""
_DEPTH = ("num_speculative_tokens", "description")
_ORDER = [f.name for f in OPTION_FIELDS]


_WORDS = LengthWords(
    field=PER_BATCH_K,
    switches="its K by batch size (or has no K)",
    built_from="static K values",
    sweep_fix="sweep static num_speculative_tokens values.",
    length="num_speculative_tokens",
    lengths="K values",
    method="method",
)
"""How vLLM's refusals of a schedule name what it switches."""


def _refuse(field: str | None, message: str, fix: str) -> Issue:
    return Issue(field, Severity.ERROR, message, fix)


def without_speculation(config: ServerConfig) -> ServerConfig:
    """``config`` without ``--speculative-config`` (and so without its keys)."""
    options = with_options(config.options, dict.fromkeys(_SPEC_KEYS), _ORDER)
    return dataclasses.replace(config, options=options)


def _k(config: ServerConfig) -> int | None:
    """The K ``config`` drafts at every batch size (0: none); None when it switches."""
    if config.method is None:
        return 0
    if PER_BATCH_K in dict(config.options):
        return None
    steps = config.num_speculative_tokens
    return steps if isinstance(steps, int) and steps >= 1 else None


def schedule(picks: Sequence[LevelPick]) -> ServerConfig | Issue:
    """One configuration whose per-batch-size K drafts each pick's K at its batch sizes."""
    found = static_lengths(picks, _k, without_speculation, _DEPTH, _WORDS)
    if isinstance(found, Refusal):
        return _refuse(found.field, found.message, found.fix)
    base, ks = found
    assert isinstance(base, ServerConfig)
    rows = pick_rows(picks, ks)
    last = max(base.max_num_seqs or DEFAULT_MAX_NUM_SEQS, rows[-1].start)
    text = format_schedule(tuple((r.start, r.end or last, r.steps) for r in rows))
    top = max(ks)
    options = with_options(base.options, {PER_BATCH_K: text, "num_speculative_tokens": top}, _ORDER)
    return dataclasses.replace(base, options=options, description="")


def scheduled(config: ServerConfig) -> tuple[ScheduleRow, ...] | None:
    """The K per batch-size range vLLM runs (capped at ``num_speculative_tokens``, the tail
    carrying the last K), None without a per-batch-size K."""
    text = dict(config.options).get(PER_BATCH_K)
    if not isinstance(text, str) or config.method is None:
        return None
    try:
        table = parse_schedule(text)
    except ScheduleError:
        return None
    k = config.num_speculative_tokens
    cap = k if isinstance(k, int) else None
    out = []
    for i, (start, _end, k) in enumerate(table):
        upto = table[i + 1][0] - 1 if i + 1 < len(table) else None  # a gap takes this K
        out.append(ScheduleRow(start, upto, min(k, cap) if cap is not None else k))
    return merged(out)


def fix_acceptance(config: ServerConfig, length: float) -> ServerConfig | Issue:
    """``synthetic_acceptance_length = length`` (its release and range are the rules')."""
    if config.method is None:
        return _refuse(
            "method",
            "without speculation there is no acceptance to fix.",
            "fix it on a speculative configuration.",
        )
    options = with_options(config.options, {SYNTHETIC: float(length)}, _ORDER)
    return dataclasses.replace(config, options=options)


def fixed_acceptance(config: ServerConfig) -> str | None:
    value = dict(config.options).get(SYNTHETIC)
    if not isinstance(value, int | float) or config.method is None:
        return None
    return f"accept length fixed at {float(value):g} (vLLM's synthetic rejection sampler)"


GRAPH_TOKENS = 512
"""vLLM's default ceiling of a captured decode graph, in tokens (``vllm/config/vllm.py``)."""


def steps_at(config: ServerConfig, batch: int) -> int | None:
    """The K a decode step of ``batch`` requests drafts: the per-batch-size table's (capped
    at ``num_speculative_tokens``), else the static K (0: no speculation)."""
    if config.method is None:
        return 0
    rows = scheduled(config)
    if rows is None:
        return _k(config)
    k = rows[0].steps
    for row in rows:
        if row.start > batch:
            break
        k = row.steps
    return k


def _request_counts(most: int) -> list[int]:
    """The request counts vLLM captures decode graphs for, up to ``most``."""
    most = min(most, GRAPH_TOKENS)
    counts = [n for n in (1, 2, 4) if n <= most] + list(range(8, min(most + 1, 256), 8))
    return sorted({*counts, *range(256, most + 1, 16), most})


def edges(config: ServerConfig, up_to: int) -> tuple[Edge, ...]:
    """Where the K switches, and where a K's decode batches outgrow its CUDA graphs: 0.34
    captures a tier of graphs per K of the table, each over the request counts up to the
    largest batch drafting that K whose K + 1 tokens a request fit in 512 tokens."""

    def said(batch: int, old: int, new: int) -> str:
        return f"K {old} → {new} at batch {batch}"

    out = list(switch_points(lambda b: steps_at(config, b), up_to, said))
    seqs = config.max_num_seqs or DEFAULT_MAX_NUM_SEQS
    tiers: dict[int, int] = {}
    for batch in range(1, min(seqs, max(up_to, 1)) + 1):
        k = steps_at(config, batch)
        if k is not None:
            tiers[k] = batch
    for k, widest in tiers.items():
        fits = [n for n in _request_counts(widest) if n * (k + 1) <= GRAPH_TOKENS]
        top = max(fits, default=0)
        if top < widest and top + 1 <= up_to:
            out.append(Edge(top + 1, f"above {top} at K {k}: no CUDA graph (512 tokens)", False))
    return tuple(sorted(out, key=lambda e: e.batch))


def no_adaptive_mode(schedule: ServerConfig) -> Issue:
    """vLLM's answer when asked for its own adaptive mode: it has none to compare with."""
    del schedule
    return _refuse(
        PER_BATCH_K,
        "vLLM has no adaptive mode of its own: num_speculative_tokens_per_batch_size is a "
        "fixed table its scheduler indexes by batch size (no acceptance feedback) — the form "
        "the schedule itself is deployed in.",
        "compare the schedule with the best static K per level (the table does).",
    )
