"""The seed's workflow on a real llama-server: a hand-written unit in the real systemd
container, reached over the real sshd — ``specconsole import`` it, sweep
``spec_draft_n_max`` over 1, 2, 4, 8, 16 with a real draft, then a context the host cannot
hold: the crash is classified from the real log, ``resume`` (the console's ``r``) goes on,
``finally = "best"`` leaves the best trial serving, and every line of the user's unit but the
swept one stays byte-identical through every deploy.

Acceptance per level is checked against the server's own words twice: the deltas of its
``/metrics`` counters (what the load generator records) must add up to the draft acceptance
lines it logged for the same requests, and the tokens it counted must be the load
generator's. Timings are not asserted (benchmarks/real_engine.py measures them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specconsole.core.launch.systemd import parse_unit
from tests.fixtures.llamacpp import LlamaCppBuild
from tests.fixtures.nspawn import NspawnBox
from tests.fixtures.sshd import free_port
from tests.realengine.box import (
    CRASH_CTX,
    N_MAX,
    UNIT_PATH,
    cli,
    health,
    install,
    others,
    profile_toml,
    running,
    seed_plan,
    session_dir,
    users_unit,
    versions,
)

pytestmark = [pytest.mark.llamacpp, pytest.mark.systemd, pytest.mark.slow]

ACCEPTANCE = re.compile(r"draft acceptance = [0-9.]+ \(\s*(\d+) accepted /\s*(\d+) generated\)")


def check_acceptance(record: dict, log: str) -> None:
    """Every level's acceptance is 1 + accepted / drafts of the counters' deltas, the tokens
    the server counted are the load generator's, and the requests the server's log reports
    (its last lines may come after the trial's log is closed) fit within the deltas."""
    logged = [(int(a), int(g)) for a, g in ACCEPTANCE.findall(log)]
    bench = {lv["max_concurrency"]: lv for lv in record["bench"]["levels"]}
    accepted = drafted = 0
    for level in record["levels"]:
        counters = level["spec_counters"]
        assert counters["drafts"] > 0, level
        assert level["accept_length"] == 1 + counters["accepted"] / counters["drafts"]
        assert counters["acceptance_rate"] == counters["accepted"] / counters["draft_tokens"]
        assert sum(counters["per_position"]) == counters["accepted"]
        assert counters["output_tokens"] == bench[level["concurrency"]]["total_output_tokens"]
        accepted += counters["accepted"]
        drafted += counters["draft_tokens"]
    assert logged, log[-2000:]
    assert sum(a for a, _g in logged) <= accepted and sum(g for _a, g in logged) <= drafted


@pytest.mark.timeout(900)
def test_the_seed_workflow_on_a_real_llama_server_unit(
    nspawn_box: NspawnBox, llamacpp_build: LlamaCppBuild, tmp_path: Path
) -> None:
    port = free_port()
    original = users_unit(llamacpp_build, port)
    install(nspawn_box, original)
    profile = tmp_path / "box.toml"
    profile.write_text(profile_toml(nspawn_box))
    try:
        code, out = cli("import", str(profile), "-o", str(tmp_path / "imported.toml"))
        assert code == 0, out
        imported = (tmp_path / "imported.toml").read_text()
        assert parse_unit(original).engine == "llamacpp"
        assert 'engine = "llamacpp"' in imported and "spec_draft_n_max = 4" in imported
        plan = tmp_path / "seed.toml"
        plan.write_text(seed_plan(imported))

        # trials 1-5 serve and are measured; trial 6 dies while loading: paused (exit 3)
        sessions = tmp_path / "sessions"
        code, shown = cli("sweep", str(plan), "--headless", "--session", str(sessions))
        assert code == 3, shown
        session = session_dir(sessions)
        records = [json.loads(line) for line in (session / "trials.jsonl").read_text().splitlines()]
        assert [r["status"] for r in records] == ["ok"] * len(N_MAX) + ["crashed"], shown
        crash = records[-1]["crash"]
        assert crash["cause"] == "kv_cache_no_memory" and crash["phase"] == "loading"
        assert "ctx_size" in crash["fixes"][0] and crash["detected_at"] is not None
        # the journal's stamp of the fatal line travels with the crash (benchmarks/real_engine.py
        # measures the gap; here only that it was seen after it was written)
        assert crash["detected_at"] >= crash["source_time"] - 1.0
        assert "kv cache" in shown.lower() or "kv_cache_no_memory" in shown
        for record in records[:-1]:
            log = (session / record["log_file"]).read_text()
            check_acceptance(record, log)
        assert not any(r.get("speculation_off") for r in records)

        # r: resume goes on after the crash; the budget is spent, so finally = best
        code, resumed = cli("resume", str(session))
        assert code == 0, resumed
        best = re.search(r"finally = best: deployed trial (\d+) .*; the box serves", resumed)
        assert best, resumed
        winner = records[int(best[1]) - 1]
        assert winner["status"] == "ok"
        n_max = N_MAX[int(best[1]) - 1]
        assert running(nspawn_box) == (n_max, 2048) and health(nspawn_box, port) == 200

        # every deployed version keeps the user's other lines byte for byte
        seen = versions(nspawn_box)
        assert seen[0] == original
        for text in seen[1:]:
            assert others(text) == others(original), text
        assert f"--spec-draft-n-max {n_max} -c 2048 -np 2 -t 1 -fit off" in seen[-1]
        assert any(f"-c {CRASH_CTX}" in text for text in seen)
    finally:
        nspawn_box.ssh(f"systemctl stop {UNIT_PATH.rsplit('/', 1)[-1]}; true")
