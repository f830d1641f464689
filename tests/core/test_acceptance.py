"""Acceptance from an engine's own counters: Prometheus text in, one level's figures out.

Why: the figure a user trusts is the engine's counters snapshotted around the level. The
snapshots here are real llama-server ``/metrics`` answers around one streamed chat request
(tests/data/llamacpp/metrics-*.txt: 20 tokens, 7 drafts of 25 tokens, 12 accepted) and a
vLLM-shaped text whose series carry more labels than the position.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from specconsole.core.machine.results import level_summary
from specconsole.core.measure.acceptance import (
    CounterAcceptance,
    SpecCounters,
    counter_deltas,
    parse_prometheus,
)
from specconsole.core.measure.metrics import LevelMetrics, RequestTimeline, compute_level_metrics
from specconsole.core.measure.prometheus import read_prometheus

DATA = Path(__file__).resolve().parent.parent / "data" / "llamacpp"

LLAMACPP = SpecCounters(
    drafts="llamacpp:spec_decode_num_drafts_total",
    draft_tokens="llamacpp:spec_decode_num_draft_tokens_total",
    accepted="llamacpp:spec_decode_num_accepted_tokens_total",
    per_position="llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
    output_tokens="llamacpp:tokens_predicted_total",
)
VLLM = SpecCounters(
    drafts="vllm:spec_decode_num_drafts_total",
    draft_tokens="vllm:spec_decode_num_draft_tokens_total",
    accepted="vllm:spec_decode_num_accepted_tokens_total",
    per_position="vllm:spec_decode_num_accepted_tokens_per_pos_total",
    output_tokens="vllm:generation_tokens_total",
)


def test_real_llama_server_snapshots_give_the_requests_counts() -> None:
    before = parse_prometheus((DATA / "metrics-before.txt").read_text())
    after = parse_prometheus((DATA / "metrics-after.txt").read_text())
    # the per-position series appear with the first draft: absent before, counted from 0
    assert LLAMACPP.per_position not in before
    figures = counter_deltas(before, after, LLAMACPP)
    assert figures == CounterAcceptance(
        drafts=7,
        draft_tokens=25,
        accepted=12,
        per_position=(5, 4, 2, 1),
        output_tokens=20,
        drafted_length=25 / 7,  # what it drafted per draft: its spec_draft_n_max or less
    )
    assert sum(figures.per_position) == figures.accepted
    assert figures.acceptance_length == pytest.approx(1 + 12 / 7)
    assert figures.acceptance_rate == pytest.approx(12 / 25)
    assert figures.per_position_rate == pytest.approx((5 / 7, 4 / 7, 2 / 7, 1 / 7))
    assert figures.speculated


def test_series_with_more_labels_are_summed_and_positions_read_by_their_label() -> None:
    text = "\n".join(
        [
            "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.",
            "# TYPE vllm:spec_decode_num_drafts_total counter",
            'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0',
            'vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 5.0',
            'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 45.0',
            'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 30.0',
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 14.0',
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",position="0"} 1.0',
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="2",engine="0"} 5.0 171',
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="1"} 10.0',
            'vllm:generation_tokens_total{model_name="a \\"quoted\\" name"} 120',
        ]
    )
    samples = parse_prometheus(text)
    # one line the format does not allow and none of the answer is trusted
    refused = read_prometheus(text + "\nnot a sample line\n")
    assert refused.samples == {} and "not Prometheus text" in refused.problem
    assert samples["vllm:generation_tokens_total"] == {(("model_name", 'a "quoted" name'),): 120}
    figures = counter_deltas({}, samples, VLLM)
    assert (figures.drafts, figures.draft_tokens, figures.accepted) == (15, 45, 30)
    assert figures.per_position == (15, 10, 5) and figures.output_tokens == 120


def test_no_drafts_no_figures_a_reset_counts_from_zero_and_the_dict_round_trips() -> None:
    quiet = parse_prometheus("llamacpp:spec_decode_num_drafts_total 3\n")
    figures = counter_deltas(quiet, quiet, LLAMACPP)
    assert not figures.speculated and figures.acceptance_length is None
    assert figures.acceptance_rate is None and figures.per_position_rate == ()
    assert figures.output_tokens is None  # the counter is not in the text
    restarted = parse_prometheus("llamacpp:spec_decode_num_drafts_total 2\n")
    reset = counter_deltas(quiet, restarted, LLAMACPP)  # a counter went backwards
    assert reset.unknown == "counter reset (llamacpp:spec_decode_num_drafts_total went from 3 to 2)"
    assert reset.acceptance_length is None and not reset.speculated
    full = CounterAcceptance(4, 10, 6, (3, 2, 1), 40)
    assert CounterAcceptance.from_dict(full.to_dict()) == full
    assert SpecCounters.from_dict(LLAMACPP.to_dict()) == LLAMACPP


def test_a_level_carries_the_counters_to_its_record_and_summary() -> None:
    request = RequestTimeline(
        start=0.0,
        latency=1.0,
        prompt_len=8,
        output_len=20,
        chunk_times=(0.1, 0.9),
        chunk_tokens=(10, 10),
    )
    figures = CounterAcceptance(7, 25, 12, (5, 4, 2, 1), 20)
    level = compute_level_metrics(
        [request], duration=1.0, max_concurrency=1, accept_length=9.9, counters=figures
    )
    record = level.to_record()
    assert record["spec_counters"]["acceptance_length"] == pytest.approx(1 + 12 / 7)
    assert LevelMetrics.from_record(record) == level
    summary = level_summary(level)
    # the engine's counters win over any other source of the acceptance length
    assert summary.accept_length == figures.acceptance_length
    assert summary.counters == figures and summary.accept_rate == pytest.approx(12 / 25)
    assert level.total_output_tokens == figures.output_tokens
