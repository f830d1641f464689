"""Shifting traffic in the report (issue 43): a headless sweep on each engine's simulated face
with ``dataset = "alternating:coding,prose"`` — each level's requests in phases, one category
at a time, the engine's counters read at each phase's end — and its report says the
acceptance length per prompt category per level, in Markdown and in JSON (checked against
the report's schema). The simulator accepts code drafts more than prose: each level's coding
AL must come out above its prose AL, from the engine's own counters.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.fixtures.plans import (
    SEED_SERVER,
    SIM_LAUNCHER,
    VLLM_LAUNCHER,
    VLLM_SEED_SERVER,
    sim_plan_text,
    sweep_headless,
)

pytestmark = pytest.mark.slow  # real simulator processes, the headless CLI

REPO = Path(__file__).resolve().parents[2]
LADDER = (1, 4)
PROFILE = str(REPO / "examples" / "sim" / "qwen3.5-122b-a10b-eagle3.toml")
"""The seed box's profile: the vLLM face's own default is one GPU, the seed box has four."""
FACES = {
    # engine: (server, launcher, the draft-length axis, extra simulator flags, the bench API)
    "sglang": (
        SEED_SERVER,
        SIM_LAUNCHER,
        "speculative_num_steps",
        ["--enable-metrics"],
        "generate",
    ),
    "vllm": (
        VLLM_SEED_SERVER,
        VLLM_LAUNCHER,
        "num_speculative_tokens",
        ["--sim-profile", PROFILE],
        "chat",
    ),
}


def _sweep(tmp_path: Path, engine: str) -> Path:
    server, launcher, axis, extra, api = FACES[engine]
    text = sim_plan_text(
        tmp_path / "run",
        extra_args=["--sim-load-seconds", "0.3", *extra],
        sweep=f"""[sweep]
strategy = "grid"
on_crash = "auto"
load_timeout = 60
finally = "stop"

[sweep.axes]
{axis} = [3]
""",
        bench=f"""[bench]
ladder = {list(LADDER)}
dataset = "alternating:coding,prose"
input_len = 256
output_len = 64
warmup_requests = 0
api = "{api}"
""",
        name=f"shifting traffic on {engine}",
        server=server,
        launcher=launcher,
    )
    return sweep_headless(tmp_path, text, 600)


def _report(session: Path, form: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "specconsole", "report", str(session), "--format", form],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_the_report_says_acceptance_per_category_per_level(tmp_path: Path, engine: str) -> None:
    session = _sweep(tmp_path, engine)

    document = json.loads(_report(session, "json"))
    schema = json.loads((REPO / "docs" / "report-schema.json").read_text())
    jsonschema.validate(document, schema)
    (trial,) = document["schedule_proof"]["categories"]
    assert [lv["concurrency"] for lv in trial["levels"]] == list(LADDER)
    for level in trial["levels"]:
        found = {c["category"]: c for c in level["categories"]}
        assert set(found) == {"coding", "prose"}, level
        coding, prose = found["coding"], found["prose"]
        assert all(c["requests"] > 0 for c in (coding, prose)), level
        assert coding["acceptance_length"] > prose["acceptance_length"] > 1.0, level

    markdown = _report(session, "md")
    (line,) = [m for m in markdown.splitlines() if "acceptance per category, #1" in m]
    for c in LADDER:
        said = re.search(rf"c={c} coding (\d+\.\d\d), prose (\d+\.\d\d)", line)
        assert said is not None, line
        assert float(said.group(1)) > float(said.group(2)), line
