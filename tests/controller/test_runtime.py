"""The async controller against real components on this machine: the local transport, the
plain-process backend and the simulator process (whose fault flags make it crash under load or
hang while loading, printing SGLang's own lines).

Each test drives the controller with intents and waits (bounded) for published states.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.bench.remote_runner import RemoteBenchmarkRunner
from specconsole.controller.localplan import resolve_local_placeholders
from specconsole.controller.outcome import EXIT_OK, EXIT_PAUSED
from specconsole.controller.runtime import Controller
from specconsole.controller.wiring import open_ports
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import (
    ControllerState,
    Phase,
    ResumeChoice,
    TrialKind,
    TrialStatus,
)
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.plan import CrashPolicy, SweepPlan
from specconsole.core.ports import ServiceState
from specconsole.headless.sweep import run_headless
from specconsole.session.store import Session
from tests.fixtures.plans import sim_plan_text

pytestmark = pytest.mark.slow


def local_plan(
    run_dir: Path,
    *,
    steps: list[int],
    extra: list[str],
    load_timeout: float = 30,
    on_crash: str = "pause",
    ladder: list[int] | None = None,
    placement: str = "forward",
) -> SweepPlan:
    sweep = f"""[sweep]
strategy = "grid"
on_crash = "{on_crash}"
load_timeout = {load_timeout}
[sweep.axes]
speculative_num_steps = {steps}
"""
    bench = f"""[bench]
ladder = {ladder or [1, 4]}
requests_per_level = 8
input_len = 64
output_len = 16
warmup_requests = 0
placement = "{placement}"
"""
    text = sim_plan_text(run_dir, extra_args=extra, sweep=sweep, bench=bench, name="runtime")
    return replace(resolve_local_placeholders(loads_plan(text)), source=text)


class Harness:
    """A running controller plus helpers to wait for published states."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.events: list[ev.Event] = []
        self.states: list[ControllerState] = []
        self._changed = asyncio.Event()
        controller.subscribe(self._on)

    def _on(self, state: ControllerState, event: ev.Event) -> None:
        self.events.append(event)
        self.states.append(state)
        self._changed.set()

    @property
    def state(self) -> ControllerState:
        return self.controller.state

    async def until(self, cond: Callable[[ControllerState], bool], timeout: float = 60.0) -> None:
        async with asyncio.timeout(timeout):
            while not cond(self.controller.state):
                self._changed.clear()
                await self._changed.wait()


@pytest.fixture
async def harness_factory(tmp_path: Path) -> AsyncIterator[Callable[[SweepPlan], Harness]]:
    made: list[tuple[Controller, asyncio.Task[None]]] = []

    def make(plan: SweepPlan) -> Harness:
        state = ControllerState(plan=plan, policy=plan.on_crash)
        ports = open_ports(plan.profile, placement=plan.bench_placement, bench_url=plan.bench_url)
        controller = ports.controller(state)
        made.append((controller, asyncio.ensure_future(controller.run())))
        return Harness(controller)

    yield make
    for controller, task in made:
        controller.send(ev.Quit(stop_server=True))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(task, 30)


async def test_crash_while_benchmarking_then_edit_and_deploy(
    harness_factory: Callable[[SweepPlan], Harness], tmp_path: Path
) -> None:
    plan = local_plan(
        tmp_path / "run",
        steps=[2],
        extra=["--sim-load-seconds", "0.3", "--sim-crash-after-requests", "3"],
    )
    h = harness_factory(plan)
    h.controller.send(ev.StartSweep())
    await h.until(lambda s: s.phase is Phase.AWAITING_DECISION)
    crashed = h.state.trials[0]
    assert crashed.status is TrialStatus.CRASHED
    assert crashed.crash is not None and crashed.crash.phase is Phase.BENCHMARKING
    assert crashed.capacity is not None  # seen while it loaded
    assert any(isinstance(e, ev.BenchProgressed) for e in h.events)
    # edit: the same configuration without the fault
    fixed = replace(crashed.config, extra_args=("--sim-load-seconds", "0.3"))
    h.controller.send(ev.Resume(choice=ResumeChoice.EDIT_THEN_DEPLOY, config=fixed))
    await h.until(lambda s: s.phase is Phase.DONE)
    ok = h.state.trials[1]
    assert ok.kind is TrialKind.MANUAL and ok.status is TrialStatus.OK
    assert [lv.concurrency for lv in ok.levels] == [1, 4]
    assert ok.accept_length is not None and ok.server_info
    assert h.state.deployed is not None and h.state.deployed.serving


async def test_load_timeout_stops_the_server(
    harness_factory: Callable[[SweepPlan], Harness], tmp_path: Path
) -> None:
    plan = local_plan(
        tmp_path / "run",
        steps=[2],
        load_timeout=2.0,
        extra=["--sim-load-seconds", "0.4", "--sim-hang-during-load"],
    )
    h = harness_factory(plan)
    h.controller.send(ev.StartSweep())
    await h.until(lambda s: s.phase is Phase.AWAITING_DECISION, timeout=30)
    record = h.state.trials[0]
    assert record.status is TrialStatus.LOAD_TIMEOUT
    assert record.crash is not None and record.crash.cause == "load_timeout"
    assert record.crash.load_stage is not None
    status = await h.controller.backend.status()
    assert status.state is not ServiceState.RUNNING


async def test_cancel_while_loading_and_rollback(
    harness_factory: Callable[[SweepPlan], Harness], tmp_path: Path
) -> None:
    plan = local_plan(tmp_path / "run", steps=[1, 10], extra=["--sim-load-seconds", "0.3"])
    h = harness_factory(plan)
    h.controller.send(ev.StartSweep())
    # steps 1 loads; steps 10 dies with "Not enough memory"
    await h.until(lambda s: s.phase is Phase.AWAITING_DECISION)
    assert [t.status for t in h.state.trials] == [TrialStatus.OK, TrialStatus.CRASHED]
    pending = h.state.pending
    assert pending is not None and ResumeChoice.ROLLBACK in pending.choices
    h.controller.send(ev.Resume(choice=ResumeChoice.ROLLBACK))
    await h.until(lambda s: s.phase is Phase.PAUSED)
    assert h.state.trials[-1].kind is TrialKind.ROLLBACK
    assert h.state.deployed is not None and h.state.deployed.serving
    assert h.state.deployed.config.speculative_num_steps == 1
    # a slow manual deploy, cancelled while loading: the server is left loading
    slow = replace(h.state.deployed.config, extra_args=("--sim-load-seconds", "2"))
    h.controller.send(ev.DeployConfig(config=slow))
    await h.until(lambda s: s.phase is Phase.LOADING)
    h.controller.send(ev.Cancel())
    await h.until(lambda s: s.phase is Phase.CANCELLED)
    assert h.state.trials[-1].status is TrialStatus.CANCELLED
    # the watch keeps observing: the cancelled server finishes loading and serves
    await h.until(lambda s: s.deployed is not None and s.deployed.serving, timeout=30)


async def test_headless_pause_policy_exits_3_and_resume_finishes(tmp_path: Path) -> None:
    plan = local_plan(
        tmp_path / "run", steps=[1, 10], extra=["--sim-load-seconds", "0.3"], ladder=[1]
    )
    session = Session.create(tmp_path / "sessions", plan)
    out = io.StringIO()
    code = await asyncio.wait_for(run_headless(plan, session, out=out), 120)
    assert code == EXIT_PAUSED, out.getvalue()
    assert "specconsole resume" in out.getvalue()
    # the crash message says the server is down and how to put the box back
    assert "The server is down" in out.getvalue()
    assert f"specconsole rollback {session.path}" in out.getvalue()
    assert [t.status for t in session.load_trials()] == [TrialStatus.OK, TrialStatus.CRASHED]
    out = io.StringIO()
    # what `specconsole resume` runs: the session's plan, on the port the session recorded
    resumed = resolve_local_placeholders(Session.open(session.path).load_plan())
    assert resumed.base.port == plan.base.port
    code = await asyncio.wait_for(
        run_headless(resumed, session, policy=CrashPolicy.AUTO, resume=True, out=out), 120
    )
    assert code == EXIT_OK, out.getvalue()
    assert len(session.load_trials()) == 2  # nothing re-run: the grid was complete
    assert "sweep finished: plan complete" in out.getvalue()
    from specconsole.remote.process import ProcessBackend
    from specconsole.remote.transport.local import LocalTransport

    await ProcessBackend(LocalTransport(), plan.profile.service).stop()


async def test_the_plans_placement_runs_the_benchmark(
    harness_factory: Callable[[SweepPlan], Harness], tmp_path: Path
) -> None:
    """``[bench] placement = "remote"``: the ladder runs on the box (here: this machine's
    python3 through the local transport), and its result is the trial's."""
    plan = local_plan(
        tmp_path / "run",
        steps=[2],
        extra=["--sim-load-seconds", "0.3"],
        ladder=[1, 4],
        placement="remote",
    )
    h = harness_factory(plan)
    assert isinstance(h.controller.runner, RemoteBenchmarkRunner)
    h.controller.send(ev.StartSweep())
    await h.until(lambda s: s.phase is Phase.DONE)
    trial = h.state.trials[0]
    assert trial.status is TrialStatus.OK
    assert [lv.concurrency for lv in trial.levels] == [1, 4]
    assert all(lv.completed == 8 for lv in trial.levels)
