"""What an effect's raw result means: validation, benchmark and ``/server_info`` answers
turned into the machine's outcome events and the figures a trial records.

Why here and not in the runtime: the runtime (``specconsole.controller``) only performs
effects; every decision about what a result *says* (which issues block a trial, which
latency figures a level keeps, which server arguments a record keeps, which host the
server is reached at) is pure and lives in the core, tested without I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from specconsole.core.boxjson import scalar
from specconsole.core.config import validation
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.render import to_argv
from specconsole.core.config.secrets import redact_text
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import LevelSummary
from specconsole.core.measure.metrics import LevelMetrics
from specconsole.core.measure.result import BenchResult
from specconsole.core.measure.stats import mean, spread

_ANY_ADDRESS = ("0.0.0.0", "::", "")


def validate_config(config: ServerConfig) -> ev.Outcome:
    """Validate with the engine's rules, normalize as the engine will, render the argv
    (``core.config.validation``, ``Engine.normalize``, ``core.config.render``):
    ``ConfigValidated`` or ``ConfigInvalid``."""

    issues = validation.validate(config)
    blocking = validation.errors(issues)
    warnings = tuple(
        f"{i.field or 'config'}: {i.message} ({i.fix})" for i in issues if not i.blocking
    )
    if blocking:
        return ev.ConfigInvalid(
            errors=tuple(f"{i.field or 'config'}: {i.message} Fix: {i.fix}" for i in blocking),
            warnings=warnings,
        )
    normalized, notes = validation.normalized(config)
    argv = tuple(to_argv(normalized))
    note_text = tuple(f"{i.field or 'config'}: {i.message}" for i in notes)
    return ev.ConfigValidated(config=normalized, argv=argv, warnings=warnings + note_text)


def _accept_length(lv: LevelMetrics) -> float | None:
    """The level's acceptance length: the engine's own counters' (1 + accepted / drafts)
    when they counted drafts, else ``/server_info``'s, else the per-request estimate; unknown
    when the counters were read and cannot be trusted (a reset mid-level also resets what
    the other sources count)."""
    if lv.counters is not None and not lv.counters.trusted:
        return None
    if lv.counters is not None and lv.counters.speculated:
        return lv.counters.acceptance_length
    return lv.accept_length if lv.accept_length is not None else lv.request_accept_length


def level_summary(lv: LevelMetrics) -> LevelSummary:
    """The figures of one measured level that a trial records and the views show."""
    return LevelSummary(
        concurrency=lv.max_concurrency,
        output_tok_s=lv.output_throughput,
        per_request_tok_s=lv.mean_decode_tok_s,
        completed=lv.completed,
        failed=lv.failed,
        ttft_p50_ms=lv.latency_ms.get("median_ttft_ms"),
        itl_p50_ms=lv.latency_ms.get("median_itl_ms"),
        accept_length=_accept_length(lv),
        duration_s=lv.duration,
        ttft_p99_ms=lv.latency_ms.get("p99_ttft_ms"),
        itl_p99_ms=lv.latency_ms.get("p99_itl_ms"),
        tpot_p50_ms=lv.latency_ms.get("median_tpot_ms"),
        tpot_p99_ms=lv.latency_ms.get("p99_tpot_ms"),
        request_goodput=lv.request_goodput,
        measurement=lv.measurement,
        counters=lv.counters,
        client_accept_length=lv.chunk_accept_length,
    )


def level_summaries(result: BenchResult) -> tuple[LevelSummary, ...]:
    """The recorded figures of every level; with ``[bench] repeats`` the throughputs are
    the means over the repeats with their 95 % confidence intervals, so "best", "tied" and
    "converged" compare intervals (``core.plans.objective``)."""
    runs = [tuple(level_summary(lv) for lv in run) for run in result.repeats]
    out: list[LevelSummary] = []
    for first in runs[0]:
        same = [
            next((lv for lv in run if lv.concurrency == first.concurrency), None) for run in runs
        ]
        found = [lv for lv in same if lv is not None]
        # a level missing from some run has no interval: the first run's figures stand
        out.append(combine_runs(found) if len(found) == len(runs) else first)
    return tuple(out)


def combine_runs(runs: Sequence[LevelSummary]) -> LevelSummary:
    """One level measured in several runs of the ladder (``[bench] repeats``), as one
    summary: the first run's counts and latencies, the throughputs' means with their sample
    std and 95 % CI (``core.measure.stats.spread``) and the mean p99 TTFT. A level that completed
    nothing in some run has no interval: the first run's figures stand. The console combines
    the runs finished so far with this, the trial record all of them."""
    first = runs[0]
    if len(runs) < 2 or any(lv.completed == 0 for lv in runs):
        return first
    agg = spread([lv.output_tok_s for lv in runs])
    per = spread([lv.per_request_tok_s for lv in runs])
    ttfts = [lv.ttft_p99_ms for lv in runs]
    return replace(
        first,
        repeats=agg.n,
        output_tok_s=agg.mean,
        output_tok_s_ci=(agg.ci_low, agg.ci_high),
        per_request_tok_s=per.mean,
        per_request_tok_s_ci=(per.ci_low, per.ci_high),
        ttft_p99_ms=(
            first.ttft_p99_ms
            if any(t is None for t in ttfts)
            else mean([t for t in ttfts if t is not None])
        ),
    )


def mean_accept_length(levels: Iterable[LevelSummary]) -> float | None:
    """The mean accept length over the levels that know one."""
    values = [lv.accept_length for lv in levels if lv.accept_length is not None]
    return sum(values) / len(values) if values else None


def bench_finished(result: BenchResult) -> ev.BenchFinished:
    """The machine's outcome for a finished (or stopped) benchmark ladder."""
    levels = level_summaries(result)
    return ev.BenchFinished(
        levels=levels,
        accept_length=mean_accept_length(levels),
        partial=result.partial,
        error=result.error,
        reruns=result.reruns,
    )


def server_info_items(
    data: Any, keys: Sequence[str], nested: Sequence[str] = ()
) -> tuple[tuple[str, str], ...]:
    """The ``keys`` found in a server-info answer, as (name, JSON) pairs (the engine's
    ``Endpoints.server_info_keys``).

    An engine may nest the resolved arguments (SGLang's ``server_args``, ``internal_states``
    as a dict or a list of per-rank dicts: ``Endpoints.server_info_nested``); top-level keys
    win over nested ones. Only plain figures are kept (``core.boxjson.scalar``: no ``NaN``,
    no nested structure, no megabyte string).
    """
    flat: dict[str, Any] = {}
    if isinstance(data, Mapping):
        flat.update(data)
        for name in nested:
            inner = data.get(name)
            if isinstance(inner, Mapping):
                flat.update({k: v for k, v in inner.items() if k not in flat})
            elif isinstance(inner, list) and inner and isinstance(inner[0], Mapping):
                flat.update({k: v for k, v in inner[0].items() if k not in flat})
    kept = ((key, scalar(flat.get(key))) for key in keys)
    return tuple((key, json.dumps(value)) for key, value in kept if value is not None)


def box_host(config: ServerConfig) -> str:
    """The host the server is reached at on the box (a wildcard bind means loopback)."""
    return config.host if config.host not in _ANY_ADDRESS else "127.0.0.1"


def deploy_previewed(config: ServerConfig, diff: str) -> ev.DeployPreviewed:
    """What a deploy is about to change, with the configuration's environment values
    redacted (secrets never reach records or the screen)."""
    return ev.DeployPreviewed(diff=redact_text(diff, [name for name, _ in config.env]))
