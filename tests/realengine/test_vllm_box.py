"""The seed's workflow on a real vLLM: a hand-written ``vllm serve`` unit in the real systemd
container, reached over the real sshd — ``specconsole import`` it, walk n-gram speculation's
``num_speculative_tokens`` (2, then 4) at the unit's context, then a context the 1 GiB KV
cache cannot hold: vLLM loads and refuses to start, the crash is classified from the real
journal with vLLM's own remedy, ``resume`` (the console's ``r``) goes on to the baseline
without speculation, and every line of the user's unit but the swept ones stays
byte-identical through every deploy.

Acceptance per level is checked against the server itself twice: the recorded figures are the
deltas of its ``vllm:spec_decode_*`` counters exactly (and its ``vllm:generation_tokens_total``
is the load generator's output), and those deltas add up to what its own ``SpecDecoding
metrics`` lines report for the trial. The server's release is asked of the box (the unit's
venv's interpreter) before the first deploy. Timings are not asserted (benchmarks/real_engine.py
measures them).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import tomli_w

from specconsole.core.launch.systemd import parse_unit
from tests.fixtures.nspawn import NspawnBox
from tests.fixtures.sshd import free_port
from tests.fixtures.vllm import VllmBed
from tests.realengine.box import cli, session_dir, versions
from tests.realengine.vllm_box import (
    BENCH,
    LONG_CONTEXT,
    UNIT,
    api_pid,
    check_acceptance,
    install,
    logged_past_last_read,
    profile_toml,
    server_lines,
    spec_totals,
    users_unit,
)

pytestmark = [pytest.mark.real_vllm, pytest.mark.systemd, pytest.mark.slow]


def seed_plan(imported: str) -> str:
    document = tomllib.loads(imported)
    document["sweep"] = {
        "strategy": "boundary",
        "axis": "num_speculative_tokens",
        "on_crash": "pause",
        "load_timeout": 600,
        "baseline": True,
        "finally": "stop",  # a 3.7 GiB server per test would outlive it
        "max_trials": 6,
        "axes": {"num_speculative_tokens": [2, 4], "max_model_len": [2048, LONG_CONTEXT]},
    }
    document["bench"] = BENCH
    return tomli_w.dumps(document)


def others(text: str) -> list[str]:
    """The unit's lines a deploy must keep byte-identical: all but the swept ExecStart."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("ExecStart="))
    end = start
    while lines[end].rstrip("\n").endswith("\\"):
        end += 1
    return lines[:start] + lines[end + 1 :]


@pytest.mark.timeout(2400)
def test_the_seed_workflow_on_a_real_vllm_unit(
    nspawn_box: NspawnBox, vllm_bed: VllmBed, tmp_path: Path
) -> None:
    port = free_port()
    original = users_unit(vllm_bed, port)
    install(nspawn_box, original)
    profile = tmp_path / "box.toml"
    profile.write_text(profile_toml(nspawn_box))
    try:
        code, out = cli("import", str(profile), "-o", str(tmp_path / "imported.toml"))
        assert code == 0, out
        imported = (tmp_path / "imported.toml").read_text()
        assert parse_unit(original).engine == "vllm"
        assert 'engine = "vllm"' in imported and "num_speculative_tokens = 4" in imported
        plan = tmp_path / "seed.toml"
        plan.write_text(seed_plan(imported))

        # K 2 and 4 serve and are measured; the long context dies in load: paused (exit 3)
        sessions = tmp_path / "sessions"
        code, shown = cli("sweep", str(plan), "--headless", "--session", str(sessions))
        assert code == 3, shown
        session = session_dir(sessions)
        meta = tomllib.loads((session / "session.toml").read_text())
        assert "0.32.0" in json.dumps(meta), meta  # the box's release, asked before trial 1
        records = [json.loads(line) for line in (session / "trials.jsonl").read_text().splitlines()]
        assert [r["status"] for r in records] == ["ok", "ok", "crashed"], shown
        assert [r["config"]["num_speculative_tokens"] for r in records] == [2, 4, 2]
        crash = records[-1]["crash"]
        assert crash["cause"] == "kv_cache_no_memory" and crash["phase"] == "loading", crash
        assert "estimated maximum model length is" in crash["message"], crash
        assert any("VLLM_CPU_KVCACHE_SPACE" in fix for fix in crash["fixes"]), crash["fixes"]
        assert crash["detected_at"] is not None
        assert crash["detected_at"] >= crash["source_time"] - 1.0

        # acceptance per level: the counters' deltas; per trial: the server's own log lines
        # over the same window — the whole trial, once a statistics line of its server
        # follows its last counter read (the unit's drain before SIGTERM gives it the time)
        for record in records[:2]:
            totals = check_acceptance(record)
            lines = server_lines(nspawn_box, api_pid((session / record["log_file"]).read_text()))
            assert logged_past_last_read(lines), "\n".join(lines[-40:])
            assert spec_totals(lines) == (totals["accepted"], totals["draft_tokens"]), record

        # r: resume goes on after the crash to the baseline without speculation
        code, resumed = cli("resume", str(session))
        assert code == 0, resumed
        records = [json.loads(line) for line in (session / "trials.jsonl").read_text().splitlines()]
        assert [r["status"] for r in records] == ["ok", "ok", "crashed", "ok"], resumed
        baseline = records[-1]
        assert baseline["config"].get("method") is None, baseline["config"]
        bench = {lv["max_concurrency"]: lv for lv in baseline["bench"]["levels"]}
        for level in baseline["levels"]:  # nothing drafted; the server counted our tokens
            counters = level["spec_counters"]
            assert counters["drafts"] == 0 and level["accept_length"] is None, level
            assert counters["output_tokens"] == bench[level["concurrency"]]["total_output_tokens"]

        # every deployed version keeps the user's other lines byte for byte
        seen = versions(nspawn_box, UNIT)
        assert seen[0] == original
        for text in seen[1:]:
            assert others(text) == others(original), text
        assert any(f"--max-model-len {LONG_CONTEXT}" in text for text in seen)
    finally:
        nspawn_box.ssh(f"systemctl stop {UNIT}; true", timeout=60)
