"""Answers still on their way for a trial that crashed are dropped by epoch, silently (issue
18, defect 1: "controller: can't handle CacheFlushed in phase crashed")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specconsole.core.logs.events import FatalCause
from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import Phase, TrialStatus
from specconsole.core.machine.table import step
from tests.controller.helpers import Driver, levels

STALE = {
    "CacheFlushed": ev.CacheFlushed(),
    "ServerInfoFetched": ev.ServerInfoFetched(items=()),
    "BenchFinished": ev.BenchFinished(levels=levels(), accept_length=2.0),
    "BenchLevelFinished": ev.BenchLevelFinished(level_index=0, level=levels()[0]),
    "ServerReady": ev.ServerReady(),
    "OperationFailed": ev.OperationFailed(operation="flush_cache", message="reset by peer"),
}


@pytest.mark.parametrize("phase", [Phase.READY, Phase.FLUSHING, Phase.BENCHMARKING])
@pytest.mark.parametrize("name", STALE, ids=list(STALE))
def test_a_late_answer_after_the_crash_is_dropped(phase: Phase, name: str) -> None:
    d = Driver()
    d.start()
    d.to_phase(phase)
    epoch = d.state.epoch
    d.send(ev.FatalSeen(cause=FatalCause.CUDA_OOM, message="CUDA out of memory"))
    assert d.state.phase is Phase.CRASHED
    crashed = d.state
    late = replace(STALE[name], epoch=epoch, at=d.now + 0.5)
    state, effects = step(crashed, late)  # no IllegalTransition, no notice, no effect
    assert state == crashed and effects == ()
    # the crash still records once the server is down, with its own cause
    d.send(ev.ServerStopped())
    assert d.state.phase is Phase.RECORDING
    record = d.find(fx.RecordTrial)
    assert isinstance(record, fx.RecordTrial) and record.record.status is TrialStatus.CRASHED


def test_the_crashed_trials_log_lines_still_reach_the_tail() -> None:
    d = Driver()
    d.start()
    d.to_phase(Phase.BENCHMARKING)
    epoch = d.state.epoch
    d.send(ev.FatalSeen(cause=FatalCause.CUDA_OOM, message="oom"))
    index = d.state.trial.index if d.state.trial else -1
    line = ev.LogLines(lines=("last words",), trial_index=index, epoch=epoch, at=d.now)
    state, _ = step(d.state, line)
    assert state.log_tail[-1] == "last words"
    other = replace(line, trial_index=index + 5)
    assert step(d.state, other)[0] == d.state
