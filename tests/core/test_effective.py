"""Issue 27 #17 and issue 33 #2/#5: the one configuration a trial runs, and what a box whose
release is unknown may be given (only flags every release the engine vouches for accepts)."""

from __future__ import annotations

import dataclasses

from specconsole.core.config.effective import effective_config, portable
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.releases import unportable_changes
from specconsole.core.engine.registry import get_engine
from specconsole.engines.sglang.keys import SpecAlgorithm

EAGLE = ServerConfig(
    model_path="m",
    speculative_algorithm=SpecAlgorithm.EAGLE3,
    speculative_num_steps=2,
    speculative_eagle_topk=1,
    speculative_num_draft_tokens=4,
    cuda_graph_max_bs=64,
)


def test_sglangs_cuda_graph_batch_size_has_no_spelling_every_release_accepts() -> None:
    changes = unportable_changes(get_engine("sglang").releases)
    assert [c.key for c in changes] == ["cuda_graph_max_bs"]
    assert unportable_changes(get_engine("vllm").releases) == ()


def test_an_unknown_release_leaves_the_key_to_the_server_and_says_so() -> None:
    config, note = portable(EAGLE)
    assert config.cuda_graph_max_bs is None
    assert dataclasses.replace(config, cuda_graph_max_bs=64) == EAGLE  # nothing else moves
    assert "left out cuda_graph_max_bs = 64" in note and "0.5.23" in note
    unset = dataclasses.replace(EAGLE, cuda_graph_max_bs=None)
    assert portable(unset) == (unset, "")  # nothing to leave out, nothing to say
    declared = dataclasses.replace(EAGLE, engine_version="0.5.9")
    assert portable(declared) == (declared, "")  # a declared release needs no such care


def test_the_effective_configuration_is_what_sglang_runs_and_idempotent() -> None:
    ran = effective_config(EAGLE)
    assert ran.speculative_num_draft_tokens == 3  # topk 1: steps + 1, whatever was asked
    assert ran.max_running_requests == 48  # SGLang's reset when unset
    assert effective_config(ran) == ran


def test_the_pre_flight_says_an_unknown_release_once_without_blocking() -> None:
    from specconsole.core.machine.handlers.preflight import PreflightFacts, check_release
    from specconsole.core.plans.plan import SweepPlan

    plan = SweepPlan(base=EAGLE)
    assert check_release(PreflightFacts(plan=plan)) == []
    (finding,) = check_release(PreflightFacts(plan=plan, release="not known (why)"))
    assert finding.check == "release" and not finding.blocking
