"""Keys never lost: an intent sent while a crash is being recorded is kept, then applied
once it is legal, or refused with a visible notice — never dropped silently."""

from __future__ import annotations

import pytest

from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.common import IllegalTransition
from specconsole.core.machine.intents import legal_intents
from specconsole.core.machine.state import CrashPolicy, Phase, ResumeChoice
from tests.controller.helpers import Driver, plan


def _crashing(policy: CrashPolicy = CrashPolicy.PAUSE, after_ok: int = 3) -> Driver:
    d = Driver()
    d.start(plan(on_crash=policy))
    for _ in range(after_ok):
        d.finish_trial()
    d.to_phase(Phase.LOADING)
    d.send(ev.FatalSeen(cause="kv_cache_no_memory", message="Not enough memory"))
    assert d.state.phase is Phase.CRASHED
    return d


def test_resume_pressed_while_crashed_is_applied_once_recorded() -> None:
    d = _crashing()
    assert ev.Resume in legal_intents(d.state)  # the footer offers r at once
    d.send(ev.Resume(choice=ResumeChoice.RESUME_NEXT))
    assert d.state.phase is Phase.CRASHED and len(d.state.deferred) == 1
    assert d.state.notice is not None and "queued" in d.state.notice.text
    d.send(ev.ServerStopped())
    assert d.state.phase is Phase.RECORDING and d.state.deferred  # still kept
    crashed_index = d.state.trial.index  # type: ignore[union-attr]
    d.send(ev.TrialRecorded(index=crashed_index))
    # straight through AWAITING_DECISION into the next planned trial
    assert d.state.phase is Phase.VALIDATING, d.state.phase
    assert d.state.deferred == () and d.state.pending is None
    assert d.state.trial is not None and d.state.trial.index == crashed_index + 1
    assert any(isinstance(e, fx.Validate) for e in d.effects), d.effect_types()


def test_a_kept_intent_that_is_no_longer_legal_is_refused_visibly() -> None:
    d = _crashing(CrashPolicy.AUTO)
    d.send(ev.Resume(choice=ResumeChoice.RESUME_NEXT))
    d.send(ev.ServerStopped())
    d.send(ev.TrialRecorded(index=d.state.trial.index))  # type: ignore[union-attr]
    # the auto policy went on by itself: the resume is refused, and says so
    assert d.state.phase is Phase.VALIDATING
    assert d.state.notice is not None and d.state.notice.level == "warning"
    assert "refused" in d.state.notice.text and "Resume" in d.state.notice.text
    assert any(isinstance(e, fx.Notify) and e.level == "warning" for e in d.effects)
    assert d.state.deferred == ()


def test_the_latest_intent_of_a_kind_is_kept_once() -> None:
    d = _crashing()
    d.send(ev.Resume(choice=ResumeChoice.RESUME_NEXT))
    d.send(ev.Resume(choice=ResumeChoice.RETRY_SAME))
    assert [i.choice for i in d.state.deferred] == [ResumeChoice.RETRY_SAME]  # type: ignore[attr-defined]


def test_long_phases_still_refuse_at_once() -> None:
    d = Driver()
    d.start()
    d.to_phase(Phase.LOADING)
    assert ev.Resume not in legal_intents(d.state)
    with pytest.raises(IllegalTransition):
        d.send(ev.Resume(choice=ResumeChoice.RESUME_NEXT))
