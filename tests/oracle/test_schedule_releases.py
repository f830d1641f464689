"""Schedules and what-ifs against the cached real releases (issue 30): what a derived schedule
renders is what the release reads, and a release without it refuses it with the field and
the fix — SGLang's adaptive mode (its wheels) and vLLM's per-batch-size K and synthetic
acceptance (its sdists), read with zipfile/tarfile + ast, never imported.

Also checked against the source: the simulator's adaptive texts, defaults and knobs are the
release's, SGLang's refusal texts our rules quote are the release's, and the release features
(``FEATURES_SINCE``) say what the files say.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from specconsole.core.config.concepts import Concept, concept_key, with_concepts
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.releases import has_feature
from specconsole.core.config.render import to_argv
from specconsole.core.config.ties import apply_ties
from specconsole.core.config.validation import validate
from specconsole.core.engine.registry import get_engine
from specconsole.core.engine.schedule import LevelPick
from specconsole.engines.sglang.adaptive import UNSUPPORTED_FLAGS
from specconsole.engines.sglang.keys import SpecAlgorithm
from specconsole.engines.sglang.releases import TABLE
from specconsole.sim.faces.sglang import log as logfmt
from specconsole.sim.faces.sglang.adaptive import default_spec
from specconsole.sim.physics.adaptive import DEFAULT_KNOBS
from tests.engines.described import speculative
from tests.oracle.test_sglang_releases import VERSIONS, need
from tests.oracle.test_vllm_releases import need as need_vllm
from tests.oracle.vllm_sdist import oracle_versions as vllm_versions
from tests.oracle.vllm_sdist import source_text, speculative_fields
from tests.oracle.wheel import flags

PARAMS = "sglang/srt/speculative/adaptive_spec_params.py"
BASE = ServerConfig(
    model_path="/models/target",
    speculative_algorithm=SpecAlgorithm.EAGLE3,
    speculative_draft_model_path="/models/draft",
    speculative_eagle_topk=1,
    max_running_requests=64,
)
LEVELS = {1: 5, 4: 4, 16: 3, 32: 3, 64: 3}


def _steps(config: ServerConfig, steps: int) -> ServerConfig:
    """``config`` drafting ``steps`` tokens (SGLang: its draft tokens tied to steps + 1)."""
    key = concept_key(config.engine, Concept.DRAFT_LENGTH)
    assert key is not None
    return apply_ties(dataclasses.replace(config, **{key: steps}))


def _schedule(engine: str, version: str) -> ServerConfig:
    base = with_concepts(speculative(engine, engine_version=version), {Concept.MAX_CONCURRENCY: 64})
    picks = tuple(LevelPick(c, _steps(base, s)) for c, s in LEVELS.items())
    got = get_engine(engine).schedule(picks)
    assert isinstance(got, ServerConfig), got
    return got


def _errors(config: ServerConfig) -> list[str]:
    return [f"{i.field}: {i.message} Fix: {i.fix}" for i in validate(config) if i.blocking]


# -- SGLang ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_schedule_renders_for_releases_with_buckets_and_is_refused_before(version: str) -> None:
    rel = need(version)
    config = _schedule("sglang", version)
    errors = _errors(config)
    if has_feature(TABLE, "adaptive_by_batch", version):
        assert errors == [], (version, errors)
        known = flags(version)
        argv = to_argv(config)
        assert known["--speculative-adaptive"].kind == "bool"
        assert known["--speculative-adaptive-config"].kind in ("str", "other")
        assert "--speculative-adaptive" in argv and "--speculative-adaptive-config" in argv
        assert "def _find_closest_bs" in rel.source(PARAMS)  # buckets by batch size
    else:
        assert errors and errors[0].startswith("speculative_adaptive_schedule:"), errors
        assert "has no --speculative-adaptive" in errors[0] and "Fix: use SGLang" in errors[0]
        assert rel.source(PARAMS) == ""  # 0.5.9: no adaptive mode at all


@pytest.mark.parametrize("version", VERSIONS)
def test_the_cli_renders_or_refuses_a_schedule_by_release(version: str, tmp_path: Path) -> None:
    need(version)
    config = _schedule("sglang", version)
    table = {
        k: (v.value if hasattr(v, "value") else v)
        for k, v in dataclasses.asdict(config).items()
        if v not in (None, (), "") and k not in ("options", "box_flags", "side_dir", "env")
    }
    table.update(dict(config.options))
    lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in table.items() if k != "extra_args")
    path = tmp_path / "schedule.toml"
    path.write_text(f"[server]\n{lines}\n")
    cli = [sys.executable, "-m", "specconsole"]
    checked = subprocess.run([*cli, "validate", str(path)], capture_output=True, text=True)
    rendered = subprocess.run(
        [*cli, "render", str(path), "--as", "argv"], capture_output=True, text=True
    )
    if has_feature(TABLE, "adaptive_by_batch", version):
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "--speculative-adaptive" in json.loads(rendered.stdout)
    else:
        assert checked.returncode == 1
        assert "has no --speculative-adaptive" in checked.stdout + checked.stderr


@pytest.mark.parametrize("version", VERSIONS)
def test_the_release_features_are_what_the_files_say(version: str) -> None:
    rel = need(version)
    params = rel.source(PARAMS)
    assert bool(params) is has_feature(TABLE, "adaptive", version)
    if params:
        zero = "must be a list of non-negative ints" in params
        assert zero is has_feature(TABLE, "adaptive_zero_step", version)
    environ = rel.source("sglang/srt/environ.py")
    assert "SGLANG_SIMULATE_ACC_LEN = EnvFloat(-1)" in environ
    matches = 'SGLANG_SIMULATE_ACC_METHOD = EnvStr("match-expected")' in environ
    assert matches is has_feature(TABLE, "simulated_accept_matches_mean", version)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_simulators_adaptive_mode_is_the_releases(version: str) -> None:
    params = need(version).source(PARAMS)
    if not params:  # 0.5.9: nothing to imitate (the release features say so: above)
        assert not has_feature(TABLE, "adaptive", version)
        return
    tree = ast.parse(params)
    default = next(
        ast.literal_eval(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and node.target.id == "DEFAULT_ADAPTIVE_CONFIG"
    )
    spec = default_spec(version)
    assert {str(b.key): list(b.candidates) for b in spec.buckets} == {
        k: v["candidate_steps"] for k, v in default.items()
    }
    for bucket in spec.buckets:
        for knob in ("up_hysteresis", "down_hysteresis"):
            assert bucket.knob(knob) == default[str(bucket.key)][knob]
    for knob, value in DEFAULT_KNOBS.items():
        if knob == "ceiling_coeff":
            continue
        found = re.search(rf'cfg\.get\("{knob}", (-?[0-9.]+)\)', params)
        assert found and float(found.group(1)) == value, (version, knob)
    worker = need(version).source("sglang/srt/speculative/eagle_worker_v2.py")
    texts = params + worker
    for line in (
        logfmt.adaptive_initialized(3, [1, 3, 7]),
        logfmt.adaptive_state_built(5, 1.0, 0.5),
        logfmt.adaptive_switch(5, 3),
        logfmt.adaptive_updated(3, 5, 2.7),
    ):
        head = line.split(":")[0].split("=")[0].split(" steps ")[0]
        assert head in texts, (version, head)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_refusals_we_quote_are_the_releases(version: str) -> None:
    rel = need(version)
    params = rel.source(PARAMS)
    if not params:  # 0.5.9: a schedule is refused before any of these rules (above)
        assert not has_feature(TABLE, "adaptive", version)
        return
    assert "(only EAGLE/EAGLE3 are supported)" in params
    assert "(only topk=1 is supported)" in params
    for flag, why in UNSUPPORTED_FLAGS.items():
        if flag == "--enable-dp-attention":
            continue  # its wording changed between releases; the reason is the same
        assert why.split(" is not supported ")[-1] in params, (version, flag)
    hooks = "".join(rel.sources("sglang/srt/arg_groups/").values()) + rel.source(
        "sglang/srt/server_args.py"
    )
    assert "is not in the adaptive config candidate_steps" in hooks
    assert "Falling back to static speculative params." in hooks


# -- vLLM -----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", vllm_versions())
def test_a_vllm_schedule_and_what_if_render_as_the_releases_fields(version: str) -> None:
    fields = set(speculative_fields(need_vllm(version)))
    schedule = _schedule("vllm", version)
    argv = to_argv(schedule)
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec["num_speculative_tokens"] == max(LEVELS.values())
    errors = _errors(schedule)
    if "num_speculative_tokens_per_batch_size" in fields:
        assert set(spec) <= fields and not errors, (version, spec, errors)
    else:
        assert errors and errors[0].startswith("num_speculative_tokens_per_batch_size:")
    what_if = get_engine("vllm").fix_acceptance(_steps(dataclasses.replace(
        speculative("vllm"), engine_version=version), 4), 3.5)  # fmt: skip
    assert isinstance(what_if, ServerConfig)
    argv = to_argv(what_if)
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    errors = _errors(what_if)
    if "synthetic_acceptance_length" in fields:
        assert spec["rejection_sample_method"] == "synthetic" and set(spec) <= fields, spec
        assert not errors
        source = source_text(version, "vllm/config/speculative.py") or ""
        assert '"synthetic"' in source and "synthetic_acceptance_length must be in [1," in source
    else:
        assert errors and errors[0].startswith("synthetic_acceptance_length:"), errors
