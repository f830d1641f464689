"""The simulator's pure physics: calibration against the measured sweep, the memory model's
crash boundary and monotone behaviour where physics demands it, SGLang's argument rules and
profile errors. No process, no I/O besides reading the packaged profile."""

from __future__ import annotations

import dataclasses
import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specconsole.core.config.model import ServerConfig
from specconsole.engines.sglang.keys import SpecAlgorithm
from specconsole.sim.arguments import SimArgError
from specconsole.sim.faces.sglang.args import parse_argv
from specconsole.sim.faces.sglang.resolve import MSG_MAX_RUNNING_48, MSG_TOPK1_DRAFT, resolve
from specconsole.sim.forecast import calibration_config, peak_aggregate, predict, resolve_config
from specconsole.sim.physics.acceptance import accept_length
from specconsole.sim.physics.model import CALIBRATION_LADDER, LoadFailure, plan_memory, step_time
from specconsole.sim.profile import Profile, ProfileError, load_default_profile, load_profile

SEED_SWEEP: dict[int, tuple[float, float]] = {
    1: (123, 1582),
    2: (186, 1844),
    3: (234, 1979),
    4: (277, 1817),
    5: (282, 1273),
}
"""Measured on the seed box: steps -> (single-request tok/s, peak aggregate tok/s)."""


@pytest.fixture(scope="module")
def profile() -> Profile:
    return load_default_profile()


def capacity(profile: Profile, steps: int, **overrides: object) -> int:
    plan = plan_memory(
        resolve_config(calibration_config(profile, steps, **overrides), profile), profile
    )
    return plan.max_total_num_tokens


@pytest.mark.parametrize("steps", sorted(SEED_SWEEP))
def test_calibration_within_ten_percent(profile: Profile, steps: int) -> None:
    single, peak = SEED_SWEEP[steps]
    cfg = calibration_config(profile, steps)
    p1 = predict(cfg, 1, profile=profile)
    level, best = peak_aggregate(cfg, CALIBRATION_LADDER, profile=profile)
    assert p1.ok and level in CALIBRATION_LADDER
    assert abs(p1.per_request_tok_s / single - 1) <= 0.10, p1.per_request_tok_s
    assert abs(best / peak - 1) <= 0.10, (level, best)


def test_capacity_matches_seed_within_one_percent(profile: Profile) -> None:
    assert abs(capacity(profile, 1) / 455_357 - 1) <= 0.01
    assert abs(capacity(profile, 4) / 295_931 - 1) <= 0.01


def test_capacity_drops_linearly_per_draft_token(profile: Profile) -> None:
    caps = [capacity(profile, s) for s in range(1, 10)]
    drops = {caps[i] - caps[i + 1] for i in range(len(caps) - 1)}
    assert max(drops) - min(drops) <= 2  # floor rounding only
    assert 52_000 < min(drops) < 54_500


def test_crash_boundary_steps_nine_loads_ten_fails(profile: Profile) -> None:
    nine = plan_memory(resolve_config(calibration_config(profile, 9), profile), profile)
    ten = plan_memory(resolve_config(calibration_config(profile, 10), profile), profile)
    assert nine.failure is None and 20_000 < nine.max_total_num_tokens < 40_000
    assert ten.failure is LoadFailure.NOT_ENOUGH_MEMORY
    assert not predict(calibration_config(profile, 10), 1, profile=profile).ok


def test_capacity_rises_with_mem_fraction_then_capture_fails(profile: Profile) -> None:
    fractions = [0.80, 0.84, 0.88, 0.90, 0.92]
    caps = [capacity(profile, 3, mem_fraction_static=f) for f in fractions]
    assert caps == sorted(caps) and len(set(caps)) == len(caps)
    high = plan_memory(
        resolve_config(calibration_config(profile, 3, mem_fraction_static=0.95), profile), profile
    )
    assert high.failure is LoadFailure.CUDA_GRAPH_CAPTURE
    assert high.max_total_num_tokens > caps[-1]  # KV sizing itself succeeded


def test_capacity_falls_with_cuda_graph_batch(profile: Profile) -> None:
    caps = [capacity(profile, 4, cuda_graph_max_bs=bs) for bs in (8, 16, 32, 64)]
    assert caps == sorted(caps, reverse=True) and len(set(caps)) == 4


def test_single_request_rate_rises_then_saturates(profile: Profile) -> None:
    rates = [
        predict(calibration_config(profile, s), 1, profile=profile).per_request_tok_s
        for s in range(1, 8)
    ]
    assert rates[0] < rates[1] < rates[2] < rates[3]
    assert abs(rates[4] / rates[3] - 1) < 0.06  # saturated around 4-5
    assert rates[6] < rates[4]  # deeper drafts only cost time


def test_accept_length_grows_and_saturates(profile: Profile) -> None:
    perf = profile.perf
    lengths = [accept_length(perf, s, 1, s + 1) for s in range(1, 10)]
    assert all(b > a for a, b in itertools.pairwise(lengths))
    gains = [b - a for a, b in itertools.pairwise(lengths)]
    assert gains[-1] < gains[0] / 5
    assert lengths[-1] < 10
    assert accept_length(perf, 3, 2, 6) > accept_length(perf, 3, 1, 4)


def test_relaxed_thresholds_raise_acceptance(profile: Profile) -> None:
    strict = calibration_config(profile, 3)
    relaxed = dataclasses.replace(
        strict,
        extra_args=(
            "--speculative-accept-threshold-single",
            "0.8",
            "--speculative-accept-threshold-acc",
            "0.7",
        ),
    )
    a = predict(strict, 1, profile=profile)
    b = predict(relaxed, 1, profile=profile)
    assert b.accept_length > a.accept_length and b.per_request_tok_s > a.per_request_tok_s
    assert b.accept_length <= 4.0
    with pytest.raises(SimArgError, match="threshold"):
        resolve(parse_argv(["--speculative-accept-threshold-acc", "0"]), profile)


def test_step_time_grows_with_batch_draft_tokens_and_steps(profile: Profile) -> None:
    def t(steps: int, batch: int, topk: int = 1, draft: int | None = None) -> float:
        cfg = calibration_config(
            profile,
            steps,
            speculative_eagle_topk=topk,
            speculative_num_draft_tokens=draft or steps + 1,
        )
        return step_time(resolve_config(cfg, profile), profile, batch, 1024.0)

    assert t(3, 1) < t(3, 4) < t(3, 16) < t(3, 64)
    assert t(2, 16) < t(3, 16) < t(4, 16)
    assert t(3, 16, topk=2, draft=4) < t(3, 16, topk=2, draft=6)


def test_running_limit_queues_the_rest(profile: Profile) -> None:
    cfg = calibration_config(profile, 3, max_running_requests=16)
    p32 = predict(cfg, 32, profile=profile)
    p16 = predict(cfg, 16, profile=profile)
    assert p32.running == 16 and p32.queued == 16
    assert p32.aggregate_tok_s == pytest.approx(p16.aggregate_tok_s)


def test_kv_capacity_limits_running_requests(profile: Profile) -> None:
    p = predict(calibration_config(profile, 9), 64, 1024, 512, profile=profile)
    assert p.ok and p.running == capacity(profile, 9) // (1024 + 512)
    assert p.running < 64 and p.queued == 64 - p.running


def test_predict_depends_on_lengths_physically(profile: Profile) -> None:
    cfg = calibration_config(profile, 3)
    short = predict(cfg, 1, 128, 512, profile=profile)
    long = predict(cfg, 1, 8192, 512, profile=profile)
    assert long.ttft_s > short.ttft_s and long.per_request_tok_s < short.per_request_tok_s
    assert long.step_time_s > short.step_time_s  # attention over a longer context
    brief = predict(cfg, 1, 1024, 32, profile=profile)
    assert brief.per_request_tok_s < predict(cfg, 1, 1024, 512, profile=profile).per_request_tok_s


def test_predict_is_deterministic(profile: Profile) -> None:
    cfg = calibration_config(profile, 4)
    assert predict(cfg, 16, profile=profile) == predict(cfg, 16, profile=profile)


def test_predict_rejects_bad_inputs(profile: Profile) -> None:
    with pytest.raises(ValueError, match="concurrency"):
        predict(calibration_config(profile, 3), 0, profile=profile)


def test_untried_values_follow_from_the_model(profile: Profile) -> None:
    for steps in (6, 7, 8):
        p = predict(calibration_config(profile, steps), 1, profile=profile)
        assert p.ok and 50 < p.per_request_tok_s < 300
    wide = calibration_config(profile, 3, speculative_eagle_topk=4, speculative_num_draft_tokens=8)
    assert predict(wide, 1, profile=profile).ok
    assert capacity(
        profile, 3, speculative_eagle_topk=4, speculative_num_draft_tokens=8
    ) < capacity(profile, 3)


# ------------------------------------------------------------------------- SGLang's rules


def test_auto_speculative_defaults_and_max_running_48(profile: Profile) -> None:
    args = resolve_config(
        ServerConfig(model_path="m", speculative_algorithm=SpecAlgorithm.EAGLE3, tp_size=4), profile
    )
    assert (args.num_steps, args.topk, args.num_draft_tokens) == (3, 1, 4)
    assert args.max_running == 48 and MSG_MAX_RUNNING_48 in args.warnings
    assert args.max_capture_bs == 48  # graphs are limited to the request pool
    assert plan_memory(args, profile).failure is None


def test_topk_one_forces_draft_tokens(profile: Profile) -> None:
    cfg = calibration_config(profile, 3, speculative_num_draft_tokens=8)
    args = resolve_config(cfg, profile)
    assert args.num_draft_tokens == 4 and MSG_TOPK1_DRAFT in args.warnings


def test_topk_one_without_draft_tokens_is_filled_in(profile: Profile) -> None:
    args = resolve(
        parse_argv(
            [
                "--speculative-algorithm",
                "EAGLE3",
                "--tp-size",
                "4",
                "--speculative-num-steps",
                "5",
                "--speculative-eagle-topk",
                "1",
            ]
        ),
        profile,
    )
    assert args.num_draft_tokens == 6 and MSG_TOPK1_DRAFT in args.warnings


def test_all_three_or_none(profile: Profile) -> None:
    parsed = parse_argv(["--speculative-algorithm", "EAGLE3", "--speculative-eagle-topk", "2"])
    with pytest.raises(SimArgError) as err:
        resolve(parsed, profile)
    assert err.value.exception_type == "AssertionError"


def test_unknown_flags_are_kept(profile: Profile) -> None:
    args = resolve(parse_argv(["--tp-size", "4", "--enable-foo", "--bar-size", "3"]), profile)
    assert args.unknown_args == {"enable_foo": True, "bar_size": "3"}
    assert args.server_args["bar_size"] == "3"


def test_too_few_gpus_fail_loading_weights(profile: Profile) -> None:
    args = resolve_config(ServerConfig(model_path="m"), profile)
    assert plan_memory(args, profile).failure is LoadFailure.WEIGHTS_OOM
    with pytest.raises(SimArgError, match="tp-size"):
        resolve_config(ServerConfig(model_path="m", tp_size=8), profile)


# ------------------------------------------------------------------------- profiles


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(text)
    return path


def test_profile_errors_name_the_key(tmp_path: Path, profile: Profile) -> None:
    src = Path(profile.source).read_text()
    with pytest.raises(ProfileError, match=r"\[gpu\] memory_gb must be a number"):
        load_profile(_write(tmp_path, src.replace("memory_gb = 48.0", 'memory_gb = "48"')))
    with pytest.raises(ProfileError, match=r"unknown key\(s\) bogus in \[perf\]"):
        load_profile(_write(tmp_path, src.replace("[perf]\n", "[perf]\nbogus = 1\n")))
    with pytest.raises(ProfileError, match="missing required key"):
        load_profile(_write(tmp_path, src.replace("accept_first = ", "# accept_first = ")))
    with pytest.raises(ProfileError, match="not valid TOML"):
        load_profile(_write(tmp_path, "[gpu\n"))
    with pytest.raises(ProfileError, match="--sim-profile"):
        load_profile(tmp_path / "missing.toml")
    with pytest.raises(ProfileError, match="between 0 and 1"):
        load_profile(
            _write(tmp_path, re.sub(r"(?m)^accept_first = .*$", "accept_first = 1.5", src))
        )


def test_predict_uses_the_configs_sim_profile(tmp_path: Path, profile: Profile) -> None:
    src = Path(profile.source).read_text()
    half = profile.perf.verify_base_ms / 2
    faster = _write(tmp_path, re.sub(r"(?m)^verify_base_ms = .*$", f"verify_base_ms = {half}", src))
    base = calibration_config(profile, 3)
    custom = dataclasses.replace(base, extra_args=("--sim-profile", str(faster)))
    assert predict(custom, 1).per_request_tok_s > 1.5 * predict(base, 1).per_request_tok_s


@pytest.mark.parametrize(
    "path",
    sorted((Path(__file__).resolve().parents[2] / "examples" / "sim").glob("*.toml")),
    ids=lambda p: p.name,
)
def test_every_example_profile_loads_and_serves(path: Path) -> None:
    example = load_profile(path)
    ref = example.reference_launch
    auto = resolve(
        parse_argv(["--speculative-algorithm", ref.algorithm, "--tp-size", str(ref.tp_size)]),
        example,
    )
    assert plan_memory(auto, example).failure is None
    reference = calibration_config(
        example, 3, speculative_eagle_topk=ref.topk, speculative_num_draft_tokens=3 * ref.topk + 1
    )
    assert predict(reference, 4, profile=example).ok


def test_auto_tree_comes_from_the_profile() -> None:
    llama = load_profile(
        Path(__file__).resolve().parents[2] / "examples" / "sim" / "llama3.1-8b-eagle-1xh100.toml"
    )
    auto = resolve(parse_argv(["--speculative-algorithm", "EAGLE"]), llama)
    assert (auto.num_steps, auto.topk, auto.num_draft_tokens) == (5, 4, 8)


def test_profile_is_frozen_data(profile: Profile) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.gpu.count = 8  # type: ignore[misc]


# ------------------------------------------------------------------------- properties

_configs = st.builds(
    lambda steps, topk, extra, frac, bs, running, tp: calibration_config(
        load_default_profile(),
        steps,
        speculative_eagle_topk=topk,
        speculative_num_draft_tokens=min(steps * topk + 1, steps + 1 + extra),
        mem_fraction_static=frac,
        cuda_graph_max_bs=bs,
        max_running_requests=running,
        tp_size=tp,
    ),
    st.integers(1, 12),
    st.integers(1, 4),
    st.integers(0, 12),
    st.floats(0.5, 0.97),
    st.integers(1, 256),
    st.integers(1, 256),
    st.sampled_from([2, 4]),
)


@settings(max_examples=150, deadline=None)
@given(
    cfg=_configs,
    concurrency=st.integers(1, 128),
    input_len=st.integers(1, 8192),
    output_len=st.integers(1, 2048),
)
def test_predict_is_total_and_physical(
    cfg: ServerConfig, concurrency: int, input_len: int, output_len: int
) -> None:
    p = predict(cfg, concurrency, input_len, output_len)
    if not p.ok:
        assert p.aggregate_tok_s == 0.0 and p.running == 0
        return
    assert 1 <= p.running <= concurrency and p.queued == concurrency - p.running
    assert 1.0 <= p.accept_length <= (cfg.speculative_num_steps or 0) + 1
    assert p.step_time_s > 0 and p.ttft_s > 0
    # No request can beat the decode rate, and the wave shares one step clock.
    if output_len > 1:  # a one-token request is all prefill
        bound = p.decode_tok_s_per_request * output_len / (output_len - 1)
        assert p.per_request_tok_s <= bound * (1 + 1e-9)
    assert p.aggregate_tok_s == pytest.approx(p.running * p.per_request_tok_s)


@settings(max_examples=60, deadline=None)
@given(cfg=_configs)
def test_capacity_never_rises_with_more_draft_tokens(cfg: ServerConfig) -> None:
    profile = load_default_profile()
    wider = dataclasses.replace(
        cfg,
        speculative_num_steps=(cfg.speculative_num_steps or 1) + 1,
        speculative_num_draft_tokens=(cfg.speculative_num_draft_tokens or 1) + 1,
    )
    a = plan_memory(resolve_config(cfg, profile), profile).max_total_num_tokens
    b = plan_memory(resolve_config(wider, profile), profile).max_total_num_tokens
    assert b <= a


def test_the_model_imports_no_server_code() -> None:
    code = (
        "import sys, specconsole.sim.forecast, specconsole.sim.faces.sglang.resolve, "
        "specconsole.sim.faces.sglang.log, specconsole.sim.faces.vllm.face; "
        "print(sorted(m for m in ('starlette', 'uvicorn', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out.strip() == "[]"
