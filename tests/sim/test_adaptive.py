"""The simulator's SGLang adaptive mode and the engines' acceptance what-ifs (issue 30): how a
batch is routed, how a bucket's EMA moves, what memory several candidates take, what the
model predicts for a schedule, and a fixed acceptance honoured by the model and the process.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from specconsole.core.config.model import ServerConfig
from specconsole.sim.arguments import SimArgError
from specconsole.sim.faces.sglang.adaptive import load_spec
from specconsole.sim.faces.sglang.args import parse_argv
from specconsole.sim.faces.sglang.resolve import resolve
from specconsole.sim.forecast import calibration_config, predict, resolve_config
from specconsole.sim.physics.adaptive import AdaptiveRuntime, AdaptiveSpec, Bucket
from specconsole.sim.physics.model import plan_memory
from specconsole.sim.profile import load_default_profile

PROFILE = load_default_profile()
CAPTURE = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 24, 32, 48, 64)


def _schedule(steps: int, schedule: str, **overrides: object) -> ServerConfig:
    config = calibration_config(PROFILE, steps, engine_version="0.5.14", **overrides)
    return dataclasses.replace(config, speculative_adaptive_schedule=schedule)


def test_a_batch_routes_by_its_padded_graph_size_to_the_largest_key_below() -> None:
    spec = AdaptiveSpec((Bucket(1, (5,)), Bucket(9, (4,)), Bucket(23, (3,))))
    capture = (1, 2, 4, 8, 12, 16, 24, 32)
    got = {
        b: spec.buckets[spec.bucket_for(b, capture)].key for b in (1, 2, 3, 8, 9, 12, 22, 23, 64)
    }
    # 9 pads to 12 and 22 to 24: a boundary moves up to the next captured size
    assert got == {1: 1, 2: 1, 3: 1, 8: 1, 9: 9, 12: 9, 22: 23, 23: 23, 64: 23}
    assert spec.bucket_for(1, ()) == 0  # without graphs the batch itself is looked up


def test_one_candidate_never_moves_and_several_follow_the_acceptance() -> None:
    one = AdaptiveRuntime(AdaptiveSpec((Bucket(1, (3,)),)), CAPTURE, 3)
    for _ in range(100):
        assert one.observe([4.0] * 8, 8) is None
    assert one.steps_for(8) == 3
    several = AdaptiveRuntime(AdaptiveSpec((Bucket(1, (1, 3, 5)),)), CAPTURE, 1)
    moves = [several.observe([4.0], 1) for _ in range(40)]
    # warm-up (10 steps), then a decision every 5: up past 3 to 5 while the EMA exceeds each
    assert moves[:14] == [None] * 14 and [m for m in moves if m is not None] == [5]
    for _ in range(60):
        several.observe([0.0], 1)  # nothing accepted: the EMA falls, the step steps down
    assert several.steps_for(1) == 1


def test_a_zero_step_probes_the_next_candidate() -> None:
    runtime = AdaptiveRuntime(AdaptiveSpec((Bucket(1, (0, 1)),)), CAPTURE, 0)
    moved = [runtime.observe([0.0], 1) for _ in range(15)]
    assert moved[14] == 1  # the first decision after the warm-up probes 1


def test_the_file_is_loaded_by_the_releases_rules() -> None:
    text = '{"ema_alpha": 0.3, "1": {"candidate_steps": [1, 3]}, "8": {"candidate_steps": [0]}}'
    spec = load_spec(text, "0.5.14")
    assert [b.candidates for b in spec.buckets] == [(1, 3), (0,)]
    assert spec.buckets[0].knob("ema_alpha") == 0.3
    with pytest.raises(SimArgError, match="list of positive ints"):
        load_spec(text, "0.5.13")  # no 0 candidate before 0.5.14
    with pytest.raises(SimArgError, match="at least one integer-string BS key"):
        load_spec('{"ema_alpha": 0.3}', "0.5.14")
    flat = load_spec('{"candidate_steps": [2, 4], "1": {"candidate_steps": [5]}}', "0.5.12")
    assert not flat.by_batch and flat.buckets[0].candidates == (2, 4)  # 0.5.12: one list
    assert load_spec(None, "0.5.23").buckets[0].candidates == (1, 3, 5, 7)


def test_resolution_follows_sglang() -> None:
    with_file = parse_argv(["--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "4",
                            "--speculative-eagle-topk", "1", "--speculative-adaptive"])  # fmt: skip
    values = {**with_file.values, "adaptive_config_text": '{"1": {"candidate_steps": [3, 5]}}'}
    with pytest.raises(SimArgError, match=r"not in the adaptive config candidate_steps \[3, 5\]"):
        resolve(dataclasses.replace(with_file, values=values), PROFILE)
    tree = parse_argv(["--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "3",
                       "--speculative-eagle-topk", "4", "--speculative-num-draft-tokens", "8",
                       "--speculative-adaptive"])  # fmt: skip
    args = resolve(tree, PROFILE)
    assert args.adaptive is None
    assert any(
        "speculative_adaptive disabled: speculative_eagle_topk=4" in w for w in args.warnings
    )
    with pytest.raises(SimArgError, match="unrecognized arguments: --speculative-adaptive"):
        parse_argv(["--sim-engine-version", "0.5.9", "--speculative-adaptive"])


def test_memory_is_sized_for_the_longest_candidate_and_graphs_per_state() -> None:
    schedule = resolve_config(_schedule(5, "1:5,3:4,9:3"), PROFILE)
    static5 = resolve_config(calibration_config(PROFILE, 5), PROFILE)
    static3 = resolve_config(calibration_config(PROFILE, 3), PROFILE)
    plan, five, three = (plan_memory(a, PROFILE) for a in (schedule, static5, static3))
    assert plan.max_total_num_tokens == five.max_total_num_tokens  # draft slots: 5 + 1
    graphs = plan.graph_target_gb + plan.graph_draft_gb
    assert three.graph_target_gb + three.graph_draft_gb < graphs  # states 4 and 5 on top of 3's
    assert graphs < five.graph_target_gb + five.graph_draft_gb  # 5 only for batches up to 2


def test_predict_runs_each_levels_bucket() -> None:
    schedule = _schedule(5, "1:5,3:4,9:3")
    for c, steps in ((1, 5), (4, 4), (16, 3), (64, 3)):
        got = predict(schedule, c).aggregate_tok_s
        want = predict(calibration_config(PROFILE, steps), c).aggregate_tok_s
        assert got == pytest.approx(want, rel=1e-9), c
    ema = _schedule(3, "1:3/5")  # SGLang's EMA climbs while the draft keeps being accepted
    assert predict(ema, 1).accept_length == pytest.approx(predict(
        calibration_config(PROFILE, 5), 1).accept_length, rel=0.02)  # fmt: skip


def test_a_fixed_acceptance_replaces_the_drafts() -> None:
    base = calibration_config(PROFILE, 5)
    fixed = dataclasses.replace(base, env=(("SGLANG_SIMULATE_ACC_LEN", "2.5"),))
    assert predict(fixed, 1).accept_length == pytest.approx(2.5)
    capped = dataclasses.replace(calibration_config(PROFILE, 1), env=fixed.env)
    assert predict(capped, 1).accept_length == pytest.approx(2.0)  # at most steps + 1
    old = dataclasses.replace(fixed, extra_args=("--sim-engine-version", "0.5.10"))
    assert predict(old, 1).accept_length != pytest.approx(2.5, abs=1e-6)  # multinomial
    vllm = ServerConfig(
        model_path="meta-llama/Llama-3.1-8B-Instruct",
        engine="vllm",
        engine_version="0.34.0",
        launcher="python -m specconsole.sim vllm serve",
        method="eagle3",
        speculative_model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
        num_speculative_tokens=4,
        num_speculative_tokens_per_batch_size="1-8:4,9-1024:2",
        synthetic_acceptance_length=3.5,
    )
    assert predict(vllm, 1).accept_length == pytest.approx(3.5)  # K 4: rates 1, 1, 0.5, 0
    assert predict(vllm, 16).accept_length == pytest.approx(3.0)  # K 2: the first two


def test_the_process_refuses_what_sglang_refuses() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "specconsole.sim", "--sim-engine-version", "0.5.9",
         "--speculative-adaptive", "--port", "0"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "unrecognized arguments: --speculative-adaptive" in done.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "specconsole.sim", "--speculative-algorithm", "EAGLE3",
         "--speculative-adaptive", "--speculative-adaptive-config", "/nonexistent/a.json",
         "--port", "0", "--sim-load-seconds", "0.1"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert missing.returncode == 1
    assert "FileNotFoundError: [Errno 2] No such file or directory" in missing.stdout
