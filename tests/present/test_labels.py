"""Issue 33 #2 and #3: a label names what the engine runs, and how it differs from the base.

A unit's ``Description=`` (the same for every trial) never names a trial; a draft-token
count the engine replaces is shown as the value it runs; the release, which only changes flag
spellings, is no part of a name; a key left to the engine reads ``default``.
"""

from __future__ import annotations

import dataclasses

from specconsole.core.config.model import ServerConfig
from specconsole.core.machine.state import TrialRecord
from specconsole.engines.sglang.keys import SpecAlgorithm
from specconsole.present.labels import config_label, config_summary, record_label, trial_label

BASE = ServerConfig(
    model_path="m",
    speculative_algorithm=SpecAlgorithm.EAGLE3,
    speculative_num_steps=3,
    speculative_eagle_topk=1,
    speculative_num_draft_tokens=4,
    mem_fraction_static=0.88,
    cuda_graph_max_bs=64,
    max_running_requests=64,
    description="Our SGLang server (hand-written)",
)


def planned(steps: int) -> ServerConfig:
    """A trial as a plan built on an imported base would request it (draft left as is)."""
    return dataclasses.replace(BASE, speculative_num_steps=steps)


def test_every_trial_has_its_own_name_never_the_description() -> None:
    labels = [config_label(planned(s), BASE) for s in (2, 4, 10)]
    assert labels == ["steps=2 draft=3", "steps=4 draft=5", "steps=10 draft=11"]
    assert all("hand-written" not in label for label in labels)


def test_a_label_shows_the_draft_tokens_that_run_not_the_requested_ones() -> None:
    ran = dataclasses.replace(planned(4), speculative_num_draft_tokens=5, engine_version="0.5.14")
    record = TrialRecord(index=1, config=planned(4), normalized=ran)
    assert record.effective is ran
    assert record_label(record, BASE) == "steps=4 draft=5"  # the release is no part of it
    assert trial_label(record, BASE) == "#2 steps=4 draft=5"
    assert "draft=5" in config_summary(record.effective)
    assert "draft=4" not in config_summary(planned(4))  # a summary says what runs, too


def test_a_key_left_to_the_engine_reads_default() -> None:
    portable = dataclasses.replace(planned(2), cuda_graph_max_bs=None)
    assert config_label(portable, BASE) == "steps=2 draft=3 cg-bs=default"


def test_the_base_itself_is_named_by_its_tree() -> None:
    assert config_label(BASE, BASE) == "EAGLE3 steps/topk/draft=3/1/4"


def test_the_units_description_is_the_sessions_title() -> None:
    from specconsole.core.plans.plan import SweepPlan
    from specconsole.present.labels import report_title

    assert report_title(SweepPlan(base=BASE)) == "Our SGLang server (hand-written)"
    assert report_title(SweepPlan(base=BASE, name="steps sweep")) == "steps sweep"
    assert report_title(None) == "specconsole session report"
