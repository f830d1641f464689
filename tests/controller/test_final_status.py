"""Every way out of a sweep has an honest status (issue 18, defect 1): ``done`` only when the
plan ran to its end; otherwise ``interrupted``, ``paused`` or ``error`` with a non-zero exit —
for a headless sweep, a resume, the console's quit and a pool of boxes."""

from __future__ import annotations

import signal
import time
import tomllib
from pathlib import Path

from specconsole.controller.outcome import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PAUSED,
    console_status,
    final_status,
)
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import CrashPolicy, Phase
from tests.controller.helpers import Driver, plan
from tests.fixtures.plans import sim_plan_text
from tests.session.sim_sessions import BENCH, SWEEP, cli, only_session, popen, write_plan


def _driver_at(phase: Phase) -> Driver:
    d = Driver()
    d.start(plan())
    d.to_phase(phase)
    return d


def test_final_status_is_done_only_at_the_plans_end() -> None:
    d = Driver()
    d.start(plan())
    for _ in range(4):
        d.finish_trial()
    assert d.state.phase is Phase.DONE and d.state.finished_reason == "plan complete"
    assert final_status(d.state) == ("done", EXIT_OK)
    assert final_status(d.state, halted="could not write") == ("error", EXIT_FAILED)
    for phase in (Phase.LOADING, Phase.BENCHMARKING):
        state = _driver_at(phase).state
        assert final_status(state) == ("error", EXIT_FAILED)  # stopped without finishing
        assert final_status(state, interrupted=True) == ("interrupted", EXIT_INTERRUPTED)


def _crashed_awaiting_a_decision() -> Driver:
    """A sweep under the pause policy whose second trial crashed while loading."""
    crashed = Driver()
    crashed.start(plan(on_crash=CrashPolicy.PAUSE))
    crashed.finish_trial()
    crashed.to_phase(Phase.LOADING)
    crashed.send(ev.FatalSeen(cause="kv_cache_no_memory", message="Not enough memory"))
    crashed.send(ev.ServerStopped())
    crashed.send(ev.TrialRecorded(index=1))
    return crashed


def test_the_console_quit_is_an_interruption_unless_the_plan_ended() -> None:
    mid = _driver_at(Phase.BENCHMARKING)
    mid.send(ev.Quit())
    assert console_status(mid.state) == ("interrupted", EXIT_INTERRUPTED)
    between = Driver()
    between.start(plan())
    between.finish_trial()
    between.send(ev.Pause())
    between.finish_trial()  # the pause takes effect once the trial is recorded
    assert between.state.phase is Phase.PAUSED and not between.state.finished_reason
    assert console_status(between.state) == ("paused", EXIT_PAUSED)
    crashed = _crashed_awaiting_a_decision()
    assert crashed.state.phase is Phase.AWAITING_DECISION, crashed.state.phase
    assert console_status(crashed.state) == ("paused", EXIT_PAUSED)
    finished = Driver()
    finished.start(plan())
    for _ in range(4):
        finished.finish_trial()
    assert console_status(finished.state) == ("done", EXIT_OK)
    assert console_status(Driver().state) == ("idle", EXIT_OK)  # no sweep was started
    assert console_status(Driver().state, "disk full") == ("error", EXIT_FAILED)


def test_a_deliberate_quit_exits_0_an_interrupt_130_and_the_session_stays_resumable() -> None:
    mid = _driver_at(Phase.BENCHMARKING)
    mid.send(ev.Quit())
    assert console_status(mid.state, deliberate=True) == ("interrupted", EXIT_OK)
    assert console_status(mid.state) == ("interrupted", EXIT_INTERRUPTED)  # ctrl+c
    crashed = _crashed_awaiting_a_decision()
    assert console_status(crashed.state, deliberate=True) == ("paused", EXIT_OK)  # q at the banner
    assert console_status(mid.state, "disk full", deliberate=True) == ("error", EXIT_FAILED)


def _status(session: Path) -> str:
    return str(tomllib.loads((session / "session.toml").read_text())["session"]["status"])


def _wait_for_trial(parent: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(parent.glob("*/logs/*")):
            return
        time.sleep(0.1)
    raise AssertionError("no trial started")


def _sigterm_during_a_trial(plan_path: Path) -> Path:
    """Run the plan headless, SIGTERM it once a trial has started; returns the session
    (the run must have exited with the interrupted code)."""
    parent = plan_path.parent / "s"
    run = popen("sweep", str(plan_path), "--headless", "--session", str(parent))
    try:
        _wait_for_trial(parent)
        run.send_signal(signal.SIGTERM)
        out, err = run.communicate(timeout=90)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == EXIT_INTERRUPTED, out + err
    return only_session(parent)


def test_an_interrupted_headless_sweep_says_so_and_resume_finishes(tmp_path: Path) -> None:
    session = _sigterm_during_a_trial(write_plan(tmp_path, extra=("--sim-load-seconds", "3")))
    assert _status(session) == "interrupted"
    resumed = cli("resume", str(session), timeout=180)
    assert resumed.returncode == EXIT_OK, resumed.stdout + resumed.stderr
    assert _status(session) == "done"


def _pool_plan(folder: Path) -> Path:
    hosts = "".join(f'[[hosts]]\nname = "box-{n}"\ntransport = "local"\n' for n in "ab")
    text = sim_plan_text(
        folder / "run-{port}",
        host=hosts,
        extra_args=["--sim-load-seconds", "3"],
        sweep=SWEEP.replace("[1, 2]", "[1, 2, 3]"),
        bench=BENCH,
        name="pool status",
    )
    path = folder / "pool.toml"
    path.write_text(text)
    return path


def test_an_interrupted_pool_is_not_done(tmp_path: Path) -> None:
    assert _status(_sigterm_during_a_trial(_pool_plan(tmp_path))) == "interrupted"
