"""strategy = "per_level" end to end: the headless CLI against the simulator's processes, for
SGLang's adaptive mode and vLLM's per-batch-size K.

Issue 43's bar on the same box: the schedule's edge proof (measured just below and above
each edge beside the statics it switches between), SGLang's own adaptive mode as two
contenders (the schedule at least 3 % above each where it is weakest, never more than 1 %
below), what each server ran per level read back, and a cliff planted at an edge of vLLM's
schedule (vllm#49548) found, named, merged away and re-proven.

Issue 30's bar, on the simulated seed box (Qwen3.5-122B-A10B with an EAGLE-3 head on
4 x 48 GB, the simulator's calibrated profile): steps 1-5 at topk 1 and the same launch
without speculation, measured on the ladder 1, 4, 16, 32, 64; the schedule derived from the
per-level bests is deployed (SGLang: its config file beside the run script; vLLM: inside
``--speculative-config``) and measured on the same ladder. Its figure must be within 2 % of
the per-level best static at every level, and at least 15 % above the single best static
(by the plan's goal, the peak aggregate: steps 3) on the level where that static is weakest.
The vLLM plan runs the same box through the simulator's vLLM face (0.34.0) with
``--gpu-memory-utilization 0.92`` (its KV cache is sized inside the budget) and a 32k context.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest

from specconsole.core.config.concepts import Concept, concept_key, concept_value
from specconsole.core.engine.schedule import Role
from specconsole.core.machine.state import TrialRecord, TrialStatus
from specconsole.core.search.levels import level_table, role_of
from specconsole.core.search.per_level import rounds
from specconsole.core.search.proof.readback import in_force
from specconsole.session.store import Session
from tests.fixtures.plans import (
    SEED_SERVER,
    SIM_LAUNCHER,
    VLLM_LAUNCHER,
    VLLM_SEED_SERVER,
    sim_plan_text,
    sweep_headless,
)

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # figures against the model

REPO = Path(__file__).resolve().parents[2]
LADDER = (1, 4, 16, 32, 64)
SWEEP = """[sweep]
strategy = "per_level"
on_crash = "auto"
load_timeout = 60
finally = "stop"

[sweep.axes]
speculative_num_steps = [1, 2, 3, 4, 5]
"""
BENCH = f"""[bench]
ladder = {list(LADDER)}
dataset = "jsonl:{REPO / "examples" / "demo-prompts.jsonl"}"
input_len = 1024
output_len = 512
window = "steady"
window_s = 2.0
warmup_requests = 0
api = "chat"
"""
SGLANG_SERVER = SEED_SERVER + 'engine_version = "0.5.14"\n'
METRICS = ["--enable-metrics"]  # SGLang's /metrics: its counters and spec_num_steps gauge


def length_key(server: str) -> str:
    """The draft-length key of the ``[server]`` table's engine (its own word for steps)."""
    engine = tomllib.loads(server)["server"].get("engine", "sglang")
    key = concept_key(engine, Concept.DRAFT_LENGTH)
    assert key is not None
    return key


def _sweep(tmp_path: Path, server: str, launcher: str, extra: list[str]) -> Session:
    text = sim_plan_text(
        tmp_path / "run",
        extra_args=["--sim-load-seconds", "0.5", *extra],
        sweep=SWEEP.replace("speculative_num_steps", length_key(server)),
        bench=BENCH,
        name="schedule e2e",
        server=server,
        launcher=launcher,
    )
    return Session.open(sweep_headless(tmp_path, text, 900))


def _report(session: Session) -> dict[str, object]:
    """The session's JSON report, checked against its schema."""
    report = subprocess.run(
        [sys.executable, "-m", "specconsole", "report", str(session.path), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    document = json.loads(report.stdout)
    jsonschema.validate(document, json.loads((REPO / "docs" / "report-schema.json").read_text()))
    return document  # type: ignore[no-any-return]


def _check_ladder(session: Session, side_file: bool) -> list[TrialRecord]:
    """Issue 30's bar: the schedule (trial 7) within 2 % of every level's best static and
    15 % above the single best static where it is weakest; what it ran, as deployed."""
    plan = session.load_plan()
    trials = session.load_trials()
    assert all(t.status is TrialStatus.OK for t in trials), [
        (t.index + 1, t.status.value, t.errors) for t in trials
    ]
    roles = [role_of(t) for t in trials]
    assert roles[:7] == [Role.STATIC] * 5 + [Role.BASELINE, Role.SCHEDULE], roles
    schedule = trials[6]
    table = level_table(trials, plan.goal, plan.noise_pct)
    assert table.single is not None
    assert concept_value(table.single.config, Concept.DRAFT_LENGTH) == 3  # the peak best static
    assert table.stops_paying is None  # speculation pays everywhere on this box
    assert table.breakeven(schedule) is None
    if table.schedule is schedule:
        for row in table.rows:
            assert row.best is not None and row.schedule is not None
            assert row.schedule.value >= 0.98 * row.best.value, (row.concurrency, row)
        weakest = table.worst_single
        assert weakest is not None and weakest.single is not None
        assert weakest.schedule is not None
        assert weakest.schedule.value >= 1.15 * weakest.single.value, weakest
    if side_file:  # SGLang's adaptive config went beside the script, and into the record
        assert '"candidate_steps"' in schedule.deploy_diff
        assert "--speculative-adaptive-config" in " ".join(schedule.argv)
    # what is in force, read back per level: the server ran what the schedule deploys there
    ran = in_force(schedule)
    assert [r.deployed for r in ran] == [5, 4, 3, 3, 3]
    assert all(r.ran is not None and not r.mismatch for r in ran), ran
    return trials


def test_sglang_schedule_against_sglangs_own_adaptive_mode_on_the_seed_box(
    tmp_path: Path,
) -> None:
    """The schedule, its edge proof (2|3 and 8|9: it holds), then SGLang's own adaptive
    mode with its defaults (a) and over the schedule's lengths (b): the schedule is at least
    3 % above each where it is weakest and never more than 1 % below either anywhere."""
    session = _sweep(tmp_path, SGLANG_SERVER, SIM_LAUNCHER, ["--log-level", "info", *METRICS])
    trials = _check_ladder(session, side_file=True)
    roles = [role_of(t) for t in trials]
    assert roles[7:] == [Role.REMEASURE] * 4 + [Role.ADAPTIVE] * 2, roles
    log = (session.path / "logs" / "trial-007.log").read_text()
    assert "AdaptiveSpeculativeParams initialized" in log
    plan = session.load_plan()
    (done,) = rounds(plan, trials)
    assert [c.edge.batch for c in done.checks] == [3, 9] and not done.cliffs and not done.missing
    table = level_table(trials, plan.goal, plan.noise_pct)
    assert [c.key for c in table.contenders] == ["a", "b"]
    for key in ("a", "b"):
        rivalry = table.rivalry(key)
        assert rivalry is not None and rivalry.at_weakest[1] >= 3.0, (key, rivalry)
        assert rivalry.worst[1] >= -1.0, (key, rivalry)
    default, same = trials[11], trials[12]
    assert default.capacity is not None and default.capacity < trials[6].capacity  # type: ignore[operator]
    assert {round(r.ran or 0) for r in in_force(same)} == {5}  # its EMA climbs to 5 everywhere
    document = _report(session)
    per_level = document["per_level"]
    assert per_level["schedule"]["trial"] == 7  # type: ignore[index]
    assert [c["trial"] for c in per_level["contenders"]] == [12, 13]  # type: ignore[index]
    assert all(set(r["contenders"]) == {"a", "b"} for r in per_level["rows"])  # type: ignore[index]
    markdown = subprocess.run(
        [sys.executable, "-m", "specconsole", "report", str(session.path)],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert "| adaptive (a) | adaptive (b) |" in markdown
    assert "edge proof: the schedule holds at every edge" in markdown


def test_vllm_schedule_with_a_cliff_at_its_edge_is_merged_and_proven_again(
    tmp_path: Path,
) -> None:
    """vllm#49548 planted in the simulator's vLLM face (``--sim-edge-cliff 8
    --sim-edge-cliff-at 9``: decode steps next to the 8|9 edge run 8x slower): the edge proof
    finds it, names the edge, merges the buckets and proves the adjusted schedule — on the
    ladder, then at its own edges, where it holds. vLLM has no adaptive mode of its own."""
    profile = REPO / "examples" / "sim" / "qwen3.5-122b-a10b-eagle3.toml"
    cliff = ["--sim-edge-cliff", "8", "--sim-edge-cliff-at", "9"]
    session = _sweep(
        tmp_path, VLLM_SEED_SERVER, VLLM_LAUNCHER, ["--sim-profile", str(profile), *cliff]
    )
    trials = _check_ladder(session, side_file=False)
    assert "num_speculative_tokens_per_batch_size" in " ".join(trials[6].argv)
    plan = session.load_plan()
    first, second = rounds(plan, trials)
    (cliffed,) = first.cliffs
    assert cliffed.edge.batch == 9 and cliffed.cliff is not None
    assert (cliffed.cliff.shortfall_pct() or 0) > 50.0
    assert [(e.batch, level) for e, level, _takes in first.merged] in ([(9, 16)], [(9, 4)])
    assert second.trial is not None and second.trial.status is TrialStatus.OK
    assert not second.cliffs and not second.missing
    assert 9 not in [c.edge.batch for c in second.checks]
    table = level_table(trials, plan.goal, plan.noise_pct)
    assert table.schedule is second.trial
    assert all(c.refusal is not None for c in table.contenders)  # no adaptive mode of its own
    markdown = subprocess.run(
        [sys.executable, "-m", "specconsole", "report", str(session.path)],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert "edge 8|9 (K 4 → 3 at batch 9" in markdown and "a cliff at c=" in markdown
    assert "merged: edge 8|9 removed" in markdown
    assert "no engine adaptive mode to compare: vLLM has no adaptive mode of its own" in markdown
    assert _report(session)["schedule_proof"]["rounds"][0]["edges"][1]["cliff"] in (8, 9)  # type: ignore[index]


WHAT_IF_SWEEP = """[sweep]
strategy = "per_level"
on_crash = "auto"
load_timeout = 60
finally = "stop"
what_if_accept_length = 4.5

[sweep.axes]
speculative_num_steps = [3, 4, 5]
"""


def test_a_fixed_acceptance_is_a_what_if_apart_from_the_measured(tmp_path: Path) -> None:
    """``what_if_accept_length = 4.5``: every static candidate again with SGLang's
    ``SGLANG_SIMULATE_ACC_LEN`` (the simulator honours it: 4 tokens at steps 3, its cap,
    4.5 at steps 4 and 5), recorded as what-ifs — never a level's best, never the sweep's."""
    bench = BENCH.replace(f"ladder = {list(LADDER)}", "ladder = [1, 16]").replace(
        "window_s = 2.0", "window_s = 1.0"
    )
    text = sim_plan_text(
        tmp_path / "run",
        extra_args=["--sim-load-seconds", "0.3", "--log-level", "info"],
        sweep=WHAT_IF_SWEEP,
        bench=bench,
        name="what-if e2e",
        server=SGLANG_SERVER,
    )
    (tmp_path / "plan.toml").write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "specconsole", "sweep", str(tmp_path / "plan.toml"),
         "--headless", "--session", str(tmp_path / "sessions")],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    (folder,) = list((tmp_path / "sessions").iterdir())
    session = Session.open(folder)
    plan, trials = session.load_plan(), session.load_trials()
    roles = [role_of(t) for t in trials]
    assert roles[:5] == [Role.STATIC] * 3 + [Role.BASELINE, Role.SCHEDULE], roles
    assert roles[-3:] == [Role.WHAT_IF] * 3 and Role.WHAT_IF not in roles[:-3], roles
    for t, want in zip(trials[-3:], (4.0, 4.5, 4.5), strict=True):
        assert t.status is TrialStatus.OK
        assert t.accept_length == pytest.approx(want, abs=0.15), (t.index + 1, t.accept_length)
    table = level_table(trials, plan.goal, plan.noise_pct)
    assert all(row.best.trial in trials[:5] for row in table.rows)  # type: ignore[union-attr]
    assert "## What-if: fixed acceptance" in done.stdout
    assert "with accept length fixed at 4.5 (SGLANG_SIMULATE_ACC_LEN)" in done.stdout
