"""A trial whose every request failed or timed out is never ``ok``; one with some failures is
``degraded`` with the counts (issue 18, defect 7)."""

from __future__ import annotations

from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import LevelSummary, Phase, TrialStatus
from tests.controller.helpers import Driver


def _finish(levels: tuple[LevelSummary, ...], reruns: tuple[str, ...] = ()) -> fx.RecordTrial:
    d = Driver()
    d.start()
    d.to_phase(Phase.BENCHMARKING)
    d.send(ev.BenchFinished(levels=levels, accept_length=None, reruns=reruns))
    effect = d.find(fx.RecordTrial)
    assert isinstance(effect, fx.RecordTrial)
    return effect


def _level(c: int, completed: int, failed: int, tok_s: float = 0.0) -> LevelSummary:
    return LevelSummary(
        concurrency=c,
        output_tok_s=tok_s,
        per_request_tok_s=tok_s,
        completed=completed,
        failed=failed,
    )


def test_every_request_failed_is_a_failed_trial() -> None:
    record = _finish((_level(1, 0, 4), _level(4, 0, 8))).record
    assert record.status is TrialStatus.FAILED
    assert any("every request failed or timed out (12 failed)" in e for e in record.errors)


def test_some_failures_make_a_degraded_trial() -> None:
    record = _finish((_level(1, 4, 0, 90.0), _level(16, 16, 81, 400.0))).record
    assert record.status is TrialStatus.DEGRADED
    assert "degraded: c=16: 81 of 97 failed" in record.note


def test_a_clean_benchmark_is_ok() -> None:
    assert _finish((_level(1, 4, 0, 90.0),)).record.status is TrialStatus.OK


RERUN = "c=16: 5 of 8 requests failed (disconnect x5), the connection was lost"


def test_a_clean_rerun_after_a_lost_connection_is_ok_and_noted() -> None:
    note = f"{RERUN}; re-run once after the reconnect: clean"
    record = _finish((_level(1, 4, 0, 90.0), _level(16, 16, 0, 400.0)), (note,)).record
    assert record.status is TrialStatus.OK
    assert f"re-run: {note}" in record.note


def test_a_rerun_that_still_fails_is_degraded_with_counts_and_reason() -> None:
    note = f"{RERUN}; re-run once after the reconnect: 2 failed again"
    record = _finish((_level(1, 4, 0, 90.0), _level(16, 14, 2, 400.0)), (note,)).record
    assert record.status is TrialStatus.DEGRADED
    assert "degraded: c=16: 2 of 16 failed" in record.note and "the connection was lost" in (
        record.note
    )
