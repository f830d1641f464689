"""Issue 33 #4: after a crash, what each rollback would put back is named from the records —
never "the box as it was" when ``rollback`` restores the previous trial's unit."""

from __future__ import annotations

import dataclasses

from specconsole.core.config.model import ServerConfig
from specconsole.core.machine.state import TrialKind, TrialRecord, TrialStatus
from specconsole.engines.sglang.keys import SpecAlgorithm
from specconsole.present.leaving import rollback_advice

BASE = ServerConfig(
    model_path="m",
    speculative_algorithm=SpecAlgorithm.EAGLE3,
    speculative_num_steps=3,
    speculative_eagle_topk=1,
    max_running_requests=64,
)
CMD = "specconsole rollback S"


def trial(index: int, steps: int, status: TrialStatus, **extra: object) -> TrialRecord:
    config = dataclasses.replace(BASE, speculative_num_steps=steps)
    fields: dict[str, object] = {"artifact_hash": f"h{index}", "deploy_diff": "-a\n+b\n"}
    fields.update(extra)
    return TrialRecord(index=index, config=config, status=status, **fields)  # type: ignore[arg-type]


def test_rollback_names_the_previous_trial_and_original_names_the_users_own() -> None:
    trials = [trial(0, 2, TrialStatus.OK), trial(1, 4, TrialStatus.OK)]
    trials.append(trial(2, 10, TrialStatus.CRASHED))
    said = rollback_advice(trials, BASE, CMD, original=BASE)
    assert (
        f"{CMD} puts back the unit from before trial 3's deploy: trial 2's configuration "
        "(steps=4 draft=5, ok)"
    ) in said
    assert f"{CMD} --original puts back the box's own unit from before this session (EAGLE3 " in (
        said
    )
    assert "as it was" not in said


def test_a_first_trial_that_crashed_puts_back_the_users_own_unit() -> None:
    said = rollback_advice([trial(0, 10, TrialStatus.CRASHED)], BASE, CMD)
    assert "before trial 1's deploy, the box's own unit from before this session" in said


def test_trials_that_deployed_nothing_are_not_what_a_rollback_restores() -> None:
    trials = [
        trial(0, 2, TrialStatus.OK),
        trial(1, 2, TrialStatus.OK, kind=TrialKind.BENCH_ONLY),  # no deploy, no backup
        trial(2, 10, TrialStatus.CRASHED),
    ]
    assert "trial 1's configuration (steps=2 draft=3, ok)" in rollback_advice(trials, BASE, CMD)
    unchanged = [trial(0, 2, TrialStatus.OK), trial(1, 2, TrialStatus.CRASHED, deploy_diff="")]
    assert "the newest backup on the box" in rollback_advice(unchanged, BASE, CMD)
