"""strategy = "per_level" end to end: the headless CLI against the simulator's processes, for
SGLang's adaptive mode and vLLM's per-batch-size K.

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
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest

from specconsole.core.config.concepts import Concept, concept_key, concept_value
from specconsole.core.engine.schedule import Role
from specconsole.core.machine.state import TrialStatus
from specconsole.core.search.levels import level_table, role_of
from specconsole.session.store import Session
from tests.fixtures.plans import SEED_SERVER, SIM_LAUNCHER, VLLM_LAUNCHER, sim_plan_text

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
VLLM_SEED_SERVER = """[server]
engine = "vllm"
engine_version = "0.34.0"
model_path = "Qwen/Qwen3.5-122B-A10B-FP8"
method = "eagle3"
speculative_model = "specconsole/Qwen3.5-122B-A10B-EAGLE3"
tensor_parallel_size = 4
gpu_memory_utilization = 0.92
max_num_seqs = 64
max_model_len = 32768
host = "127.0.0.1"
"""


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
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    sessions = tmp_path / "sessions"
    done = subprocess.run(
        [sys.executable, "-m", "specconsole", "sweep", str(plan), "--headless", "--session",
         str(sessions)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    (folder,) = list(sessions.iterdir())
    return Session.open(folder)


def _check(session: Session, side_file: bool) -> None:
    plan = session.load_plan()
    trials = session.load_trials()
    assert [t.status for t in trials] == [TrialStatus.OK] * 7, [
        (t.index + 1, t.status.value, t.errors) for t in trials
    ]
    roles = [role_of(t) for t in trials]
    assert roles == [Role.STATIC] * 5 + [Role.BASELINE, Role.SCHEDULE], roles
    schedule = trials[-1]
    table = level_table(trials, plan.goal, plan.noise_pct)
    assert table.schedule is schedule and table.single is not None
    single = table.single.config
    assert concept_value(single, Concept.DRAFT_LENGTH) == 3  # the peak aggregate's best static
    for row in table.rows:
        assert row.best is not None and row.schedule is not None
        assert row.schedule.value >= 0.98 * row.best.value, (row.concurrency, row)
    weakest = table.worst_single
    assert weakest is not None and weakest.single is not None and weakest.schedule is not None
    assert weakest.schedule.value >= 1.15 * weakest.single.value, weakest
    assert table.stops_paying is None  # speculation pays everywhere on this box
    if side_file:  # SGLang's adaptive config went beside the script, and into the record
        assert '"candidate_steps"' in schedule.deploy_diff
        assert "--speculative-adaptive-config" in " ".join(schedule.argv)
    report = subprocess.run(
        [sys.executable, "-m", "specconsole", "report", str(session.path), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    document = json.loads(report.stdout)
    jsonschema.validate(document, json.loads((REPO / "docs" / "report-schema.json").read_text()))
    assert document["per_level"]["schedule"]["trial"] == 7
    assert [r["schedule"]["trial"] for r in document["per_level"]["rows"]] == [7] * len(LADDER)


def test_sglang_schedule_beats_every_static_on_the_seed_box(tmp_path: Path) -> None:
    session = _sweep(tmp_path, SGLANG_SERVER, SIM_LAUNCHER, ["--log-level", "info"])
    _check(session, side_file=True)
    log = (session.path / "logs" / "trial-007.log").read_text()
    assert "AdaptiveSpeculativeParams initialized" in log


def test_vllm_schedule_beats_every_static_on_the_seed_box(tmp_path: Path) -> None:
    profile = REPO / "examples" / "sim" / "qwen3.5-122b-a10b-eagle3.toml"
    session = _sweep(tmp_path, VLLM_SEED_SERVER, VLLM_LAUNCHER, ["--sim-profile", str(profile)])
    _check(session, side_file=False)
    schedule = session.load_trials()[-1]
    assert "num_speculative_tokens_per_batch_size" in " ".join(schedule.argv)


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
    assert roles == [Role.STATIC] * 3 + [Role.BASELINE, Role.SCHEDULE] + [Role.WHAT_IF] * 3
    for t, want in zip(trials[5:], (4.0, 4.5, 4.5), strict=True):
        assert t.status is TrialStatus.OK
        assert t.accept_length == pytest.approx(want, abs=0.15), (t.index + 1, t.accept_length)
    table = level_table(trials, plan.goal, plan.noise_pct)
    assert all(row.best.trial in trials[:5] for row in table.rows)  # type: ignore[union-attr]
    assert "## What-if: fixed acceptance" in done.stdout
    assert "with accept length fixed at 4.5 (SGLANG_SIMULATE_ACC_LEN)" in done.stdout
