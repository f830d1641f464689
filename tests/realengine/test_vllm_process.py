"""Headless sweeps of a real ``vllm serve`` on this machine through the plain-process backend:
four ways a real vLLM dies while it starts, each detected from its real log, classified with
its own cause and a remedy in vLLM's flags and environment, recorded, and ``resume`` (the
console's ``r``) going on after the pause.

- a draft folder that is not there (``--speculative-config``'s model: refused while the
  arguments are read) and a draft whose config does not fit its weights (dies loading the
  drafter's weights): one sweep over ``speculative_model``, paused at each, whose third
  draft (a 2-layer copy of the target) serves: deployed, its log followed to readiness, the
  ladder measured, each level's acceptance (length, rate, per position) the deltas of the
  server's own counters, which also count the load generator's tokens;
- a ``--max-model-len`` beyond the model's own limit, and ``--gpu-memory-utilization 0.99``
  without ``VLLM_CPU_KVCACHE_SPACE`` (on the CPU backend a fraction of host RAM, which is not
  free): one sweep with ``on_crash = "auto"``.

Timings are not asserted (benchmarks/real_engine.py measures crash line → CRASHED).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomli_w

from tests.fixtures.vllm import SERVER_ENV, VllmBed
from tests.realengine.box import cli, session_dir
from tests.realengine.vllm_box import check_acceptance, local_plan, spec_totals
from tests.realengine.vllm_recipes import MISSING_DRAFT

pytestmark = [pytest.mark.real_vllm, pytest.mark.slow]


def records(session: Path) -> list[dict]:
    return [json.loads(line) for line in (session / "trials.jsonl").read_text().splitlines()]


def check_crash(record: dict, cause: str, proof: str, fix: str) -> None:
    crash = record["crash"]
    assert record["status"] == "crashed", record
    assert crash["cause"] == cause, crash
    assert proof in crash["message"] or proof in "\n".join(crash["excerpt"]), crash
    assert crash["fixes"] and fix in crash["fixes"][0], crash["fixes"]
    assert crash["detected_at"] is not None


@pytest.mark.timeout(1200)
def test_a_missing_and_a_broken_draft_die_with_their_causes_and_r_resumes(
    vllm_bed: VllmBed, tmp_path: Path
) -> None:
    drafts = [
        str(vllm_bed.cache / "models" / MISSING_DRAFT),
        str(vllm_bed.model("draft-broken")),
        str(vllm_bed.model("smollm2-draft-2l")),
    ]
    plan = local_plan(
        vllm_bed,
        tmp_path / "run",
        {**SERVER_ENV, "VLLM_LOG_STATS_INTERVAL": "1"},  # its statistics every second
        {"method": "draft_model", "num_speculative_tokens": 4},
        {"on_crash": "pause", "axes": {"speculative_model": drafts}},
    )
    path = tmp_path / "drafts.toml"
    path.write_text(tomli_w.dumps(plan))
    sessions = tmp_path / "sessions"
    code, shown = cli("sweep", str(path), "--headless", "--session", str(sessions))
    assert code == 3, shown  # paused on the crash
    session = session_dir(sessions)
    (first,) = records(session)
    check_crash(first, "draft_unreadable", "Invalid repository ID", "speculative_model")
    assert first["crash"]["phase"] == "loading"

    code, resumed = cli("resume", str(session))  # r
    assert code == 3, resumed  # paused again, on the broken draft
    first_again, second = records(session)
    assert first_again["crash"]["cause"] == first["crash"]["cause"]
    check_crash(second, "weights_mismatch", "exceeds dimension size", "config.json")

    code, resumed = cli("resume", str(session))  # r again: the good draft serves
    assert code == 0, resumed
    *_, served = records(session)
    assert served["status"] == "ok", served
    assert served["config"]["speculative_model"] == drafts[2]
    totals = check_acceptance(served)
    assert 0 < totals["draft_tokens"] <= 4 * totals["drafts"]  # at most K = 4 per draft
    # the server's own SpecDecoding lines in the followed log: never more than the counters
    # (it logs an interval at its end, and the stop may come first: test_vllm_box.py, whose
    # unit drains before its stop, checks them equal)
    accepted, drafted = spec_totals((session / served["log_file"]).read_text().splitlines())
    assert 0 < drafted <= totals["draft_tokens"] and accepted <= totals["accepted"]


@pytest.mark.timeout(1200)
def test_a_context_beyond_the_model_and_host_memory_die_with_their_causes(
    vllm_bed: VllmBed, tmp_path: Path
) -> None:
    env = {k: v for k, v in SERVER_ENV.items() if k != "VLLM_CPU_KVCACHE_SPACE"}
    plan = local_plan(
        vllm_bed,
        tmp_path / "run",
        env,
        {"gpu_memory_utilization": 0.99},
        {"on_crash": "auto", "axes": {"max_model_len": [65536, 2048]}},
    )
    path = tmp_path / "memory.toml"
    path.write_text(tomli_w.dumps(plan))
    sessions = tmp_path / "sessions"
    cli("sweep", str(path), "--headless", "--session", str(sessions))
    too_long, no_room = records(session_dir(sessions))
    beyond = "greater than the derived max_model_len"
    check_crash(too_long, "context_beyond_model", beyond, "max_model_len")
    check_crash(
        no_room,
        "host_memory_utilization",
        "less than desired CPU memory utilization",
        "host RAM",
    )
    assert no_room["crash"]["fixes"][0] != too_long["crash"]["fixes"][0]


@pytest.mark.timeout(300)
def test_a_k_the_release_does_not_verify_is_refused_before_anything_starts(
    vllm_bed: VllmBed, tmp_path: Path
) -> None:
    """The box's release, read from the bed's own vLLM, decides: 0.32's rejection sampler
    verifies at most 128 draft tokens (the real server starts with more, then dies on its
    first drafting request: tests/data/vllm/runtime-huge-k.log), so K = 200 is refused in the
    pre-flight with the fix, and no server is launched."""
    run_dir = tmp_path / "run"
    server = {"method": "ngram", "num_speculative_tokens": 200}
    plan = local_plan(vllm_bed, run_dir, dict(SERVER_ENV), server, {"on_crash": "pause"})
    path = tmp_path / "k200.toml"
    path.write_text(tomli_w.dumps(plan))
    code, shown = cli("sweep", str(path), "--headless", "--session", str(tmp_path / "s"))
    assert code != 0, shown
    assert "engine: vllm 0.32.0 (detected:" in shown, shown
    assert "vLLM 0.32.0 verifies at most 128 draft tokens" in shown, shown
    assert "set num_speculative_tokens to 128 or less, or use vLLM 0.34.0" in shown, shown
    assert not run_dir.exists()  # nothing deployed, nothing launched
    assert not (session_dir(tmp_path / "s") / "trials.jsonl").read_text().strip()  # no trial
