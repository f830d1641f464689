"""The pool's pure rules: boxes from a plan, the constant-liar batch proposals, "alike"."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specconsole.core.machine.state import TrialRecord, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.plan import PlanError
from specconsole.core.plans.pool import box_port
from specconsole.core.plans.profile import ServiceKind, TransportKind
from specconsole.core.search.pool import as_port, records_on_port, unlike_boxes
from specconsole.core.search.strategy import findings, next_trial
from tests.controller.helpers import PLAN_TEXT

SERVER = """
[server]
model_path = "m"
port = 30000
"""


def test_hosts_entries_make_boxes_with_their_own_service() -> None:
    plan = loads_plan(
        """
[service]
kind = "process"
run_dir = "/srv/run"
[[hosts]]
name = "a"
transport = "ssh"
alias = "gpu-a"
[[hosts]]
transport = "ssh"
alias = "gpu-b"
service = { kind = "docker" }
"""
        + SERVER
    )
    a, b = plan.boxes
    assert (a.name, b.name) == ("a", "gpu-b")
    assert a.profile.host.alias == "gpu-a" and a.profile.service.kind is ServiceKind.PROCESS
    assert b.profile.service.kind is ServiceKind.DOCKER and b.profile.service.run_dir == "/srv/run"
    assert box_port(a, 30000) == box_port(b, 30000) == 30000  # two machines: same port
    assert plan.profile == a.profile


def test_boxes_on_one_machine_get_their_own_folder_and_port() -> None:
    plan = loads_plan(
        """
[service]
kind = "process"
run_dir = "/tmp/run"
[[hosts]]
name = "one"
[[hosts]]
name = "two"
"""
        + SERVER
    )
    one, two = plan.boxes
    assert one.profile.host.transport is TransportKind.LOCAL
    assert (one.profile.service.run_dir, two.profile.service.run_dir) == (
        "/tmp/run/one",
        "/tmp/run/two",
    )
    assert (box_port(one, 30000), box_port(two, 30000)) == (30000, 30001)


def test_template_with_aliases_and_slurm_slots() -> None:
    plan = loads_plan(
        '[host]\ntransport = "ssh"\nalias = "x"\nuser = "u"\n[pool]\naliases = ["g1", "g2"]\n'
        + SERVER
    )
    assert [b.profile.host.alias for b in plan.boxes] == ["g1", "g2"]
    assert all(b.profile.host.user == "u" for b in plan.boxes)
    slurm = loads_plan('[service]\nkind = "slurm"\n[pool]\nmax_parallel = 3\n' + SERVER)
    assert [b.name for b in slurm.boxes] == ["slot-1", "slot-2", "slot-3"]
    assert [box_port(b, 30000) for b in slurm.boxes] == [30000, 30001, 30002]
    assert len({b.profile.service.run_dir for b in slurm.boxes}) == 3
    assert loads_plan(SERVER).boxes == ()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[pool]\nmax_parallel = 0\n", "[pool] max_parallel must be a whole number of 1 or more"),
        ("[pool]\nsize = 2\n", "[pool] unknown key 'size'"),
        ('[pool]\naliases = ["a"]\n', 'need [host] transport = "ssh"'),
        ("[[hosts]]\nname = 'a'\n[[hosts]]\nname = 'a'\n", "two boxes are named 'a'"),
        ("[[hosts]]\nserver_port = 'auto'\n", "[[hosts]] #1 server_port must be a port number"),
        ("[[hosts]]\ntransport = 'ssh'\n", '[[hosts]] #1: [host] transport = "ssh" needs alias'),
        ('[host]\ntransport = "local"\n[[hosts]]\nname = "a"\n', "not in [host]"),
    ],
)
def test_bad_pools_name_the_key(text: str, needle: str) -> None:
    with pytest.raises(PlanError) as err:
        loads_plan(text + SERVER)
    assert needle in str(err.value)


def _records(plan, steps_status):  # type: ignore[no-untyped-def]
    out = []
    for i, (steps, status) in enumerate(steps_status):
        cfg = plan.at(plan.base, speculative_num_steps=steps)
        out.append(TrialRecord(index=i, config=cfg, status=status))
    return out


def test_boundary_with_pending_walks_past_and_bisects_above_them() -> None:
    plan = loads_plan(PLAN_TEXT.replace("[1, 2, 3, 10]", "[1, 2, 3, 4, 5, 10]"))
    at = lambda v: plan.at(plan.base, speculative_num_steps=v)  # noqa: E731
    first = next_trial(plan, [])
    assert first is not None and first.config == at(1)
    second = next_trial(plan, [], pending=[at(1)])
    assert second is not None and second.config == at(2)
    ok, crashed = TrialStatus.OK, TrialStatus.CRASHED
    done = _records(plan, [(1, ok), (2, ok), (3, ok), (4, ok), (10, crashed)])
    # 5 still running elsewhere: assume it loads and bisect 5..10 at once
    third = next_trial(plan, done, pending=[at(5)])
    assert third is not None and third.config == at(7), third
    # a two-box run of the seed sweep ends at the same answer
    everything = _records(
        plan,
        [(1, ok), (2, ok), (3, ok), (4, ok), (5, ok), (10, crashed), (7, ok), (8, ok), (9, ok)],
    )
    assert next_trial(plan, everything) is None
    assert findings(plan, everything) == (
        "speculative_num_steps: the largest value that loads is 9 (10 fails)",
    )


def test_grid_with_pending_moves_on() -> None:
    plan = loads_plan(PLAN_TEXT.replace('"boundary"', '"grid"'))
    at = lambda v: plan.at(plan.base, speculative_num_steps=v)  # noqa: E731
    proposal = next_trial(plan, [], pending=[at(1), at(2)])
    assert proposal is not None and proposal.config == at(3)
    assert next_trial(plan, [], pending=[at(1), at(2), at(3), at(10)]) is None


def test_configurations_compare_on_one_port_and_alike_boxes() -> None:
    plan = loads_plan(PLAN_TEXT)
    a = plan.at(plan.base, speculative_num_steps=1)
    b = replace(a, port=a.port + 1)
    assert a != b and as_port(b, a.port) == a
    rec = TrialRecord(index=0, config=b, normalized=b, status=TrialStatus.OK, capacity=1000)
    (moved,) = records_on_port([rec], a.port)
    assert moved.config == a and moved.normalized == b  # what was deployed stays

    def trial(steps: int, capacity: int, i: int = 0) -> TrialRecord:
        cfg = plan.at(
            plan.base, speculative_num_steps=steps, speculative_num_draft_tokens=steps + 1
        )
        return TrialRecord(index=i, config=cfg, status=TrialStatus.OK, capacity=capacity)

    # box a saw 1 and 3 on a line (1000 - 100 per draft token): b's first (2) should be ~900
    line = [trial(1, 1000), trial(3, 800, 1)]
    assert unlike_boxes({"a": line, "b": [trial(2, 905)]}) == []
    (unlike,) = unlike_boxes({"a": line, "b": [trial(2, 950)]})
    assert (unlike.box, unlike.other, unlike.capacity, unlike.predicted) == ("b", "a", 950, 900)
    assert "differs by 5.6%" in unlike.message() and "kept apart" in unlike.message()
    assert unlike_boxes({"a": [trial(1, 1000)], "b": [trial(1, 1000)]}) == []
