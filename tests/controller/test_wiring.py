"""The controller's ports come from the adapters' own factories, and the plan's
``[bench] placement`` chooses the benchmark runner the controller actually calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from specconsole.bench.remote_runner import RemoteBenchmarkRunner
from specconsole.bench.runner import ForwardedBenchmarkRunner, ThreadedBenchmarkRunner
from specconsole.controller.wiring import open_ports, wire_controller
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import ConnectionState, ControllerState
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.profile import HostProfile, Profile, TransportKind
from specconsole.core.ports import BenchSpec, Placement
from specconsole.remote.process import ProcessBackend
from specconsole.remote.transport.connection import ConnectionEvent
from specconsole.remote.transport.local import LocalTransport
from specconsole.remote.transport.ssh import SshTransport
from specconsole.session.store import Session
from tests.bench.servers import mini_server
from tests.controller.helpers import PLAN_TEXT


def _plan_text(bench_lines: str) -> str:
    return PLAN_TEXT.replace("[bench]\n", f"[bench]\n{bench_lines}\n", 1)


@pytest.mark.parametrize(
    ("placement", "runner_type"),
    [
        (None, ForwardedBenchmarkRunner),  # the default: through the transport's forward
        ("forward", ForwardedBenchmarkRunner),
        ("direct", ThreadedBenchmarkRunner),
        ("remote", RemoteBenchmarkRunner),
    ],
)
async def test_the_plans_placement_is_the_controllers_runner(
    tmp_path: Path, placement: str | None, runner_type: type
) -> None:
    text = _plan_text("" if placement is None else f'placement = "{placement}"')
    plan = loads_plan(text)
    wired = wire_controller(plan, Session.create(tmp_path, plan), ControllerState(plan=plan))
    try:
        assert type(wired.ports.transport) is LocalTransport
        assert type(wired.ports.backend) is ProcessBackend
        assert type(wired.ports.runner) is runner_type
        assert wired.controller.runner is wired.ports.runner
    finally:
        wired.recorder.close()
        await wired.ports.transport.close()


async def test_direct_placement_benchmarks_the_plans_url() -> None:
    """The box-side URL the controller passes is replaced by ``[bench] url``."""
    with mini_server() as url:
        plan = loads_plan(_plan_text(f'placement = "direct"\nurl = "{url}/"'))
        assert plan.bench_placement is Placement.DIRECT and plan.bench_url == url
        ports = open_ports(plan.profile, placement=plan.bench_placement, bench_url=plan.bench_url)
        try:
            dead = "http://127.0.0.1:9"  # discard port: nothing answers there
            spec = BenchSpec(ladder=(1,), requests_per_level=2, output_len=4, warmup_requests=0)
            result = await ports.runner.run(spec, dead)
        finally:
            await ports.transport.close()
    assert result.level(1)["completed"] == 2


def test_ssh_connection_events_become_connection_changed() -> None:
    seen: list[ev.Event] = []
    profile = Profile(host=HostProfile(transport=TransportKind.SSH, alias="gpu-box"))
    ports = open_ports(profile, seen.append)
    assert isinstance(ports.transport, SshTransport)
    for event in ConnectionEvent:  # what the transport emits on each change of its link
        ports.transport._emit(event, event.value)
    assert [(e.state, e.detail) for e in seen if isinstance(e, ev.ConnectionChanged)] == [
        (ConnectionState.CONNECTED, "connected"),
        (ConnectionState.RECONNECTING, "lost"),
        (ConnectionState.CONNECTED, "reconnected"),
        (ConnectionState.LOST, "failed"),
    ]
