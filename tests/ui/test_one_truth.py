"""Issue 42's "one truth per moment": the banner, the footer's keys, the header's words, the
message line and the box panel said from the same state (pure views, no Textual app)."""

from __future__ import annotations

import dataclasses

from specconsole.core.boxfacts import BoxProbe
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import ConnectionState, ControllerState, Deployed, Phase
from specconsole.core.plans.plan import CrashPolicy
from specconsole.present.box import box_panel
from specconsole.present.keyboard import keys
from specconsole.ui import adapt
from specconsole.ui.asking import EditQueue
from specconsole.ui.crashview import crash_view
from tests.ui.doubles import NOW, crashed_sweep_state, paused_state, steps_config


def _recording_crash(policy: CrashPolicy = CrashPolicy.PAUSE) -> ControllerState:
    """The moment after a crash is seen and before it is recorded: CRASHED, no decision yet."""
    state = crashed_sweep_state()
    crashed = state.trials[-1]
    return dataclasses.replace(
        state, phase=Phase.CRASHED, trial=crashed, trials=state.trials[:-1], pending=None,
        policy=policy,
    )  # fmt: skip


def test_a_crash_being_recorded_offers_no_cancel_no_pause_and_no_false_nothing_left() -> None:
    state = _recording_crash()
    now = keys.available(state)
    assert "cancel" not in now and "pause" not in now, now
    view = crash_view(state)
    assert view is not None
    previews = dict(view.previews)
    assert previews, "the banner offers its decisions while the crash is recorded"
    assert all("nothing left in the plan" not in text for text in previews.values()), previews
    assert "known once the crash is recorded" in previews["r"], previews
    # once recorded, the decision names its real target
    decided = crash_view(crashed_sweep_state())
    assert decided is not None and "known once" not in dict(decided.previews)["r"]
    # a sweep that goes on by itself after a crash can still be paused while it is recorded
    assert "pause" in keys.available(_recording_crash(CrashPolicy.AUTO))


def test_after_a_cancel_the_header_says_the_sweep_waits_and_how_it_goes_on() -> None:
    cancelled = dataclasses.replace(paused_state(), phase=Phase.CANCELLED)
    view = adapt.header_view(cancelled, NOW)
    assert view.sweep == "sweep: paused" and view.phase == "CANCELLED · r resumes"
    assert "continue" in keys.available(cancelled)  # s (and r, the footer's) go on
    on_its_own = dataclasses.replace(cancelled, sweep_active=False)
    assert adapt.header_view(on_its_own, NOW).sweep == ""
    assert adapt.header_view(on_its_own, NOW).phase == "CANCELLED"


def test_the_queued_edits_deploy_is_said_until_its_server_is_up_then_not() -> None:
    sent: list[ev.Intent] = []
    said: list[tuple[str, str]] = []
    queue = EditQueue(sent.append, lambda text, severity: said.append((text, severity)))
    paused = paused_state()
    queue.put(paused, steps_config(7))
    assert queue.sentence.startswith("Queued")
    queue.offer(paused)  # the phase can take it: deployed
    assert [type(i) for i in sent] == [ev.DeployConfig]
    assert queue.sentence.startswith("Deploying your queued edit"), queue.sentence
    queue.offer(paused)  # the controller has not moved yet
    assert queue.sentence.startswith("Deploying")
    for phase in (Phase.VALIDATING, Phase.DEPLOYING, Phase.RESTARTING, Phase.LOADING):
        queue.offer(dataclasses.replace(paused, phase=phase, phase_since=NOW + 1))
        assert queue.sentence.startswith("Deploying"), phase
    queue.offer(dataclasses.replace(paused, phase=Phase.BENCHMARKING, phase_since=NOW + 9))
    assert queue.sentence == "", "no 'Deploying…' through the benchmark"


def test_the_box_panel_says_what_this_console_deployed_not_the_probes_old_answer() -> None:
    probe = BoxProbe(
        target="gpu-box (ssh)",
        engine="sglang",
        service="systemd unit sglang.service",
        service_state="inactive",
        serving=False,
        serving_detail="/health: connection refused",
        running_config_detail="no server process",
    )
    state = dataclasses.replace(paused_state(), box=probe, connection=ConnectionState.CONNECTED)
    lines = box_panel(state).lines
    assert lines[0].startswith("runs now: EAGLE3 steps=4"), lines
    assert lines[1].startswith("serving:"), lines
    assert not any("nothing known" in line or "not serving" in line for line in lines), lines
    loading = dataclasses.replace(
        state, deployed=Deployed(config=steps_config(5), artifact_hash="x", at=NOW)
    )
    lines = box_panel(loading).lines
    assert lines[0].startswith("runs now: EAGLE3 steps=5") and lines[1].startswith("not serving")
    fresh = dataclasses.replace(state, deployed=None)  # before this console deployed anything
    assert "runs now: nothing known (no server process)" in box_panel(fresh).lines
