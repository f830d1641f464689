"""The trial details name the capacity in the trial's engine's own term (#39: "no view assumes
SGLang"): llama.cpp's once read ``(max_total_num_tokens)``, SGLang's word."""

from __future__ import annotations

import dataclasses

import pytest

from specconsole.core.engine.registry import engine_names, get_engine
from specconsole.core.machine.state import ControllerState
from specconsole.core.measure.trials import TrialRecord, TrialStatus
from specconsole.ui.adapt import trial_details
from tests.engines.described import speculative


@pytest.mark.parametrize("engine", engine_names())
def test_the_trial_details_name_the_capacity_in_the_engine_s_own_term(engine: str) -> None:
    record = TrialRecord(index=0, config=speculative(engine), status=TrialStatus.OK)
    state = ControllerState(trials=(dataclasses.replace(record, capacity=4096),))
    details = trial_details(state, "0")
    assert details is not None
    (line,) = [x for x in details.lines if x.startswith("capacity:")]
    term = get_engine(engine).log_grammar.capacity_words
    assert line == f"capacity: 4,096 tokens ({term})" if term else "capacity: 4,096 tokens"
    others = {get_engine(e).log_grammar.capacity_words for e in engine_names()} - {term, ""}
    assert not any(other in line for other in others), line
