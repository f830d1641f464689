"""Headless sweeps of a real llama-server on this machine (the plain-process backend): a draft
whose vocabulary the target refuses gives a trial marked "speculation off" with the server's
reason; a plan rendered with the removed ``--draft-max`` is refused before anything runs, with
the new spelling as the fix; an ``optimize`` search over the draft's maximum and ``p_min``
finds the best point of its space (checked against the grid of the same space).

The objective is the acceptance length: under greedy decoding it is exact and repeatable,
unlike tok/s on a shared 2-core machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomli_w

from tests.fixtures.llamacpp import LlamaCppBuild
from tests.realengine.box import cli, session_dir

pytestmark = [pytest.mark.llamacpp, pytest.mark.slow]


def plan(build: LlamaCppBuild, run_dir: Path, *, draft: str = "req_Q4_0", **sweep: object) -> dict:
    return {
        "name": "llama local",
        "host": {"transport": "local"},
        "service": {"kind": "process", "run_dir": str(run_dir), "stop_timeout": 5},
        "server": {
            "engine": "llamacpp",
            "launcher": str(build.server),
            "model_path": str(build.target),
            "speculative_draft_model_path": str(build.draft(draft)),
            "spec_type": "draft-simple",
            "ctx_size": 2048,
            "parallel": 1,
            "threads": 1,
            "metrics": True,
            "port": "auto",
        },
        # finally = "stop": a test stops the server it started (the default leaves the best
        # one serving, as a user wants, and a llama-server per test would outlive the suite)
        "sweep": {
            "strategy": "grid",
            "on_crash": "auto",
            "load_timeout": 120,
            "finally": "stop",
            **sweep,
        },
        "bench": {
            "ladder": [1],
            "input_len": 32,
            "output_len": 16,
            "requests_per_level": 2,
            "warmup_requests": 0,
            "stall_timeout_s": 120,
        },
    }


def run(document: dict, tmp_path: Path, name: str) -> tuple[int, str, list[dict]]:
    path = tmp_path / f"{name}.toml"
    path.write_text(tomli_w.dumps(document))
    code, shown = cli("sweep", str(path), "--headless", "--session", str(tmp_path / name))
    folder = tmp_path / name
    if not folder.exists():
        return code, shown, []
    trials = (session_dir(folder) / "trials.jsonl").read_text().splitlines()
    return code, shown, [json.loads(line) for line in trials]


@pytest.mark.timeout(300)
def test_an_incompatible_draft_gives_a_trial_marked_speculation_off(
    llamacpp_build: LlamaCppBuild, tmp_path: Path
) -> None:
    document = plan(
        llamacpp_build, tmp_path / "run", draft="vocabmismatch", axes={"spec_draft_n_max": [4]}
    )
    code, shown, (record,) = run(document, tmp_path, "vocab")
    assert code == 0, shown
    assert record["status"] == "ok"
    assert record["speculation_off"] == "the target and draft vocabs are not compatible"
    assert "ok · spec off" in shown and "speculation off: the target and draft vocabs" in shown
    # no release to name: the binary's --help decides (no "release not known" warning)
    assert "engine: llamacpp (llama.cpp keeps no release table" in shown, shown
    assert "pre-flight: release" not in shown, shown
    (level,) = record["levels"]
    assert level["spec_counters"]["drafts"] == 0 and level["accept_length"] is None
    code, report = cli("report", str(session_dir(tmp_path / "vocab")))
    assert code == 0 and "## Speculation off" in report, report


@pytest.mark.timeout(120)
def test_a_plan_rendered_with_draft_max_is_refused_before_deploy(
    llamacpp_build: LlamaCppBuild, tmp_path: Path
) -> None:
    document = plan(llamacpp_build, tmp_path / "run", axes={"spec_draft_n_max": [4]})
    document["server"]["extra_args"] = ["--draft-max", "8"]
    code, shown, records = run(document, tmp_path, "removed")
    assert code == 1, shown
    assert "--draft-max" in shown and "--spec-draft-n-max" in shown, shown
    assert "set spec_draft_n_max = 8 instead" in shown, shown
    assert records == [] and not (tmp_path / "run").exists()  # nothing was deployed


@pytest.mark.timeout(900)
def test_optimize_over_draft_max_and_p_min_finds_the_best_point(
    llamacpp_build: LlamaCppBuild, tmp_path: Path
) -> None:
    axes = {"spec_draft_n_max": [2, 4, 8], "spec_draft_p_min": [0.0, 0.5]}
    goal = {"objective": "accept_length"}
    code, shown, grid = run(
        plan(llamacpp_build, tmp_path / "run-grid", axes=axes, **goal), tmp_path, "grid"
    )
    assert code == 0 and len(grid) == 6 and all(r["status"] == "ok" for r in grid), shown
    truth = max(grid, key=lambda r: r["accept_length"])
    searched = plan(
        llamacpp_build,
        tmp_path / "run-opt",
        axes=axes,
        **goal,
        strategy="optimize",
        max_trials=6,
        patience=6,
        seed=1,
    )
    code, shown, trials = run(searched, tmp_path, "optimize")
    assert code == 0, shown
    found = max((t for t in trials if t["status"] == "ok"), key=lambda t: t["accept_length"])
    table = [(point(r), r["accept_length"]) for r in grid]
    # the best acceptance of the space (a tie between points is the same best)
    assert found["accept_length"] == pytest.approx(truth["accept_length"]), (table, shown)
    assert point(found) in [
        p for p, value in table if value == pytest.approx(found["accept_length"])
    ]
    assert f"best is trial {trials.index(found) + 1}" in shown, shown


def point(record: dict) -> tuple[int, float]:
    config = record["config"]
    return config["spec_draft_n_max"], config.get("spec_draft_p_min", 0.0)
