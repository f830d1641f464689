"""present.deploys.diffs and present.leaving: the diff pane's entries and line kinds, which
configuration an intent would deploy (asked of the real machine), and what quitting says."""

from __future__ import annotations

import dataclasses

from specconsole.core.machine import events as ev
from specconsole.core.machine.state import ControllerState, Deployed, Phase, TrialStatus
from specconsole.present.deploys.diffs import (
    NO_CHANGE,
    PENDING_KEY,
    deploy_target,
    deploying_config,
    diff_entries,
    diff_lines,
    next_deploy,
)
from specconsole.present.leaving import finally_due, server_down_message
from tests.controller.helpers import Driver, plan

DIFF = """--- /etc/systemd/system/sglang.service
+++ /etc/systemd/system/sglang.service (new)
@@ -1,3 +1,3 @@
 [Service]
-ExecStart=python -m sglang.launch_server --speculative-num-steps 1
+ExecStart=python -m sglang.launch_server --speculative-num-steps 2
"""


def test_every_line_keeps_its_prefix_and_gets_a_kind() -> None:
    assert [kind for kind, _ in diff_lines(DIFF)] == [
        "header",
        "header",
        "hunk",
        "context",
        "remove",
        "add",
    ]
    assert [line for _, line in diff_lines(DIFF)] == DIFF.rstrip("\n").splitlines()
    assert diff_lines("") == [("context", NO_CHANGE)]


def test_start_sweep_would_deploy_the_plans_first_configuration() -> None:
    p = plan()
    state = ControllerState(plan=p)
    config = deploying_config(state, ev.StartSweep(at=1.0))
    assert config == p.grid()[0]
    assert deploying_config(state, ev.BenchmarkOnly(at=1.0)) is None  # nothing deployed: refused
    assert deploying_config(state, ev.DeployConfig(config=p.base, at=1.0)) == p.base
    upcoming = next_deploy(state, 1.0)
    assert upcoming is not None and upcoming[1] == p.grid()[0]
    assert upcoming[0].startswith("next deploy (s starts the sweep with it): ")
    profile_only = ControllerState()
    assert next_deploy(profile_only, 1.0) is None and deploy_target(profile_only) is None


def test_entries_are_the_deploy_in_progress_then_recorded_trials_newest_first() -> None:
    driver = Driver(ControllerState(plan=plan()))
    driver.start()
    driver.validated()
    trial = driver.state.trial
    assert trial is not None
    assert diff_entries(driver.state) == []  # no diff known yet
    state = dataclasses.replace(driver.state, trial=dataclasses.replace(trial, deploy_diff=DIFF))
    entries = diff_entries(state)
    assert [e.key for e in entries] == [PENDING_KEY] and "deploying now" in entries[0].title
    done = dataclasses.replace(trial, deploy_diff=DIFF, status=TrialStatus.OK, artifact_hash="h")
    older = dataclasses.replace(done, index=0, deploy_diff="")
    newer = dataclasses.replace(done, index=1)
    state = dataclasses.replace(state, trial=None, trials=(older, newer))
    assert [(e.key, e.diff) for e in diff_entries(state)] == [("1", DIFF), ("0", "")]


def test_quitting_after_a_finished_sweep_is_due_and_after_a_crash_says_down() -> None:
    p = plan()
    idle = ControllerState(plan=p)
    assert not finally_due(idle) and server_down_message(idle, "cmd") is None
    done = dataclasses.replace(
        idle, phase=Phase.DONE, finished_reason="plan complete", sweep_started_at=1.0
    )
    assert finally_due(done)
    driver = Driver(ControllerState(plan=p))
    driver.start()
    crashed = dataclasses.replace(driver.state.trial, status=TrialStatus.CRASHED)  # type: ignore[arg-type]
    after = dataclasses.replace(
        idle, phase=Phase.PAUSED, sweep_started_at=1.0, trials=(crashed,), trial=None
    )
    message = server_down_message(after, "specconsole rollback S")
    assert message is not None and "The server is down (trial 1 crashed)" in message
    assert "o (roll back)" in message and "specconsole rollback S" in message
    # what each rollback puts back is named, never promised as "the box as it was"
    assert "specconsole rollback S --original puts back the box's own unit" in message
    serving = dataclasses.replace(
        after, deployed=Deployed(config=p.base, artifact_hash="h", at=2.0, serving=True)
    )
    assert server_down_message(serving, "cmd") is None
