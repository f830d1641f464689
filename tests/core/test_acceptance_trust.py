"""Acceptance a user can trust (issue 31): SGLang's counters (verify steps and tokens, no
accepted or draft-token counter) read like the others', its gauge as the live figure, the
series within a level round-tripped, and how it all reads (sparkline, per position, the
client's cross-check flagged beyond 10 %)."""

from __future__ import annotations

import pytest

from specconsole.core.engine.registry import get_engine
from specconsole.core.machine.state import LevelSummary
from specconsole.core.measure.acceptance import (
    CounterAcceptance,
    SpecCounters,
    counter_deltas,
    gauge_value,
    parse_prometheus,
)
from specconsole.present.figures.acceptance import (
    agreement,
    level_acceptance,
    per_position_bars,
    sparkline,
)

SGLANG = get_engine("sglang").endpoints.spec_counters
LABELS = 'model_name="m",engine_type="unified",tp_rank="0"'


def _sglang(verify: int, tokens: int, gauge: float) -> str:
    return (
        f"sglang:spec_accept_length{{{LABELS}}} {gauge}\n"
        f"sglang:spec_verify_calls_total{{{LABELS}}} {verify}.0\n"
        f'sglang:generation_tokens_total{{{LABELS},is_streaming="true"}} {tokens}.0\n'
    )


def test_sglangs_counters_are_declared_as_0_5_14_names_them() -> None:
    assert (
        SpecCounters(
            drafts="sglang:spec_verify_calls_total",
            output_tokens="sglang:generation_tokens_total",
            gauge="sglang:spec_accept_length",
            steps_gauge="sglang:spec_num_steps",  # what it runs now (an adaptive schedule)
        )
        == SGLANG
    )
    assert SpecCounters.from_dict(SGLANG.to_dict()) == SGLANG


def test_sglang_acceptance_is_tokens_over_verify_steps() -> None:
    before = parse_prometheus(_sglang(100, 370, 3.5))
    after = parse_prometheus(_sglang(240, 887, 3.8))
    got = counter_deltas(before, after, SGLANG)
    assert (got.drafts, got.output_tokens, got.accepted) == (140, 517, 377)
    assert got.acceptance_length == pytest.approx(517 / 140)  # SGLang's spec_accept_length
    assert got.acceptance_rate is None and got.draft_tokens == 0
    assert gauge_value(after, SGLANG) == 3.8
    assert gauge_value(parse_prometheus(_sglang(0, 0, 0.0)), SGLANG) is None  # no step yet


def test_a_release_without_the_counter_counts_no_draft() -> None:
    old = parse_prometheus(f"sglang:spec_accept_length{{{LABELS}}} 3.1\n")
    assert not counter_deltas(old, old, SGLANG).speculated  # /server_info decides then


def test_the_series_round_trips() -> None:
    c = CounterAcceptance(10, 30, 20, (9, 7, 4), 30, series=(3.1, 3.0, 2.6), series_interval_s=0.5)
    assert CounterAcceptance.from_dict(c.to_dict()) == c


def test_how_it_reads() -> None:
    assert sparkline([3.0, 3.0, 3.0]) == "▅▅▅"  # flat stays flat (the scale spans 0.2 at least)
    assert sparkline([3.7, 3.5, 3.1, 2.8]) == "█▆▃▁"  # drift shows
    assert per_position_bars([0.92, 0.5, 0.1]) == "▇▅▂ 0.92 0.50 0.10"
    counters = CounterAcceptance(10, 30, 20, (9, 7, 4), 30, series=(3.1, 2.9), series_interval_s=1)
    level = LevelSummary(
        4, 100.0, 25.0, 8, accept_length=3.0, counters=counters, client_accept_length=2.95
    )
    assert agreement(level) == "client 2.95 tokens/chunk: agrees"
    off = LevelSummary(4, 100.0, 25.0, 8, accept_length=3.0, client_accept_length=1.0)
    assert agreement(off) == "⚠ client 1.00 tokens/chunk, 67% off the engine's 3.00"
    assert level_acceptance(level) == [
        "c=4 accept 3.00 (the engine's counters) · client 2.95 tokens/chunk: agrees",
        "  over time █▁ 2.90–3.10, every 1 s",
        "  per position ▇▆▄ 0.90 0.70 0.40",
    ]
