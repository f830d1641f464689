"""A vLLM box end to end on a real systemd (nspawn) over the real sshd: a hand-written unit
running ``vllm serve`` (the simulator's vLLM face) already serving, ``specconsole import`` of
it, then a headless sweep of ``num_speculative_tokens`` that ends on a configuration vLLM
refuses to start (``--gpu-memory-utilization 0.35`` with the model's 131,072-token context),
``finally = "best"``.

What it shows: the import reads vLLM's command line (the model positional, the JSON
``--speculative-config``) back into the plan; the box probe learns vLLM's release from the
running server (``/version``: no vllm to import on the box); every deploy edits only the
flags the configuration manages; the crash is read from the journal as vLLM's KV-cache refusal
with vLLM's remedies; each level's acceptance is the delta of vLLM's ``/metrics`` counters
around it; the best trial's K is left serving.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import time
import tomllib
from pathlib import Path

import pytest
import tomli_w

from specconsole.cli import main as cli_main
from tests.fixtures.nspawn import NspawnBox
from tests.fixtures.sim import VLLM_DRAFT, VLLM_MODEL
from tests.fixtures.sshd import free_port
from tests.remote.helpers import SIM
from tests.remote.test_box_sweep import health, profile_toml
from tests.remote.test_first_session import wait_health
from tests.remote.test_systemd_edit import install_hand_written

pytestmark = [pytest.mark.systemd, pytest.mark.slow]

UNIT = "specconsole-sweep.service"
UNIT_PATH = f"/etc/systemd/system/{UNIT}"
K = re.compile(r'"num_speculative_tokens": (\d+)')


def vllm_unit(port: int) -> str:
    spec = json.dumps({"method": "eagle3", "model": VLLM_DRAFT, "num_speculative_tokens": 2})
    return f"""\
# Hand-written by the box's owner.
[Unit]
Description=Our vLLM server (hand-written)
After=network-online.target

[Service]
User=root
Environment=VLLM_LOG_STATS_INTERVAL=1
ExecStart={SIM} vllm serve {VLLM_MODEL} \\
    --speculative-config '{spec}' \\
    --gpu-memory-utilization 0.9 \\
    --max-num-seqs 256 \\
    --sim-load-seconds 1 \\
    --host 127.0.0.1 \\
    --port {port}
Restart=no

[Install]
WantedBy=multi-user.target
"""


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli_main(list(argv))
    return code, out.getvalue()


def running_k(box: NspawnBox) -> int | None:
    pid = box.ssh(f"systemctl show -p MainPID --value {UNIT}").strip()
    cmdline = box.ssh(f"tr '\\0' ' ' < /proc/{pid}/cmdline 2>/dev/null; true")
    found = K.search(cmdline)
    return int(found.group(1)) if found else None


def test_a_vllm_unit_imported_swept_and_left_on_the_best(
    nspawn_box: NspawnBox, tmp_path: Path
) -> None:
    port = free_port()
    since = int(time.time()) - 1  # this test's part of the unit's journal
    install_hand_written(nspawn_box, UNIT, vllm_unit(port))
    nspawn_box.ssh(f"rm -rf {UNIT_PATH}.d && systemctl daemon-reload && systemctl start {UNIT}")
    profile = tmp_path / "box.toml"
    profile.write_text(profile_toml(nspawn_box))
    try:
        wait_health(nspawn_box, port)  # the user's server is up before they import and sweep
        code, out = cli("import", str(profile), "-o", str(tmp_path / "imported.toml"))
        assert code == 0, out
        document = tomllib.loads((tmp_path / "imported.toml").read_text())
        base = document["server"]
        assert base["engine"] == "vllm" and base["model_path"] == VLLM_MODEL, base
        assert base["num_speculative_tokens"] == 2 and base["gpu_memory_utilization"] == 0.9, base
        document["sweep"] = {
            "strategy": "boundary",
            "axis": "num_speculative_tokens",
            "on_crash": "auto",
            "load_timeout": 60,
            "finally": "best",
            "axes": {"num_speculative_tokens": [1, 2, 3], "gpu_memory_utilization": [0.9, 0.35]},
        }
        document["bench"] = {
            "ladder": [1, 4],
            "input_len": 64,
            "output_len": 32,
            "requests_per_level": 4,
            "warmup_requests": 0,
            "api": "chat",
        }
        plan = tmp_path / "plan.toml"
        plan.write_text(tomli_w.dumps(document))
        sessions = tmp_path / "sessions"
        code, shown = cli("sweep", str(plan), "--headless", "--session", str(sessions))
        assert code == 0, shown
        probed = shown[: shown.index("trial 1/")]
        assert f"  serving: /health 200 on port {port}" in probed, probed
        assert "0.34.0" in probed, probed  # vLLM's release, from the running server

        (trials_file,) = sessions.rglob("trials.jsonl")
        records = [json.loads(line) for line in trials_file.read_text().splitlines()]
        shape = [
            (r["config"]["num_speculative_tokens"], r["config"]["gpu_memory_utilization"])
            for r in records
        ]
        assert shape == [(1, 0.9), (2, 0.9), (3, 0.9), (1, 0.35)], shape
        for record in records[:3]:
            k = record["config"]["num_speculative_tokens"]
            assert record["status"] == "ok", record
            for level in record["levels"]:
                counted = level["spec_counters"]
                assert counted["draft_tokens"] == k * counted["drafts"] > 0, level
                assert level["accept_length"] == pytest.approx(
                    1 + counted["accepted"] / counted["drafts"]
                )
        crashed = records[3]
        assert crashed["status"] == "crashed", crashed
        assert crashed["crash"]["cause"] == "kv_cache_no_memory", crashed["crash"]
        assert any("--gpu-memory-utilization" in fix for fix in crashed["crash"]["fixes"])
        assert "larger than the available KV cache memory" in "\n".join(crashed["crash"]["excerpt"])

        best = re.search(r"finally = best: deployed trial (\d+) .*; the box serves", shown)
        assert best, shown
        best_k = records[int(best.group(1)) - 1]["config"]["num_speculative_tokens"]
        assert running_k(nspawn_box) == best_k and health(nspawn_box, port) == 200
        now = nspawn_box.ssh(f"cat {UNIT_PATH}")
        assert "Environment=VLLM_LOG_STATS_INTERVAL=1" in now and "vllm serve" in now
        spec_lines = nspawn_box.ssh(  # the trials' statistics lines, since this test began
            f"journalctl -u {UNIT} --since @{since} --no-pager -o cat "
            "| grep -c 'SpecDecoding metrics: Mean acceptance length' || true"
        )
        assert int(spec_lines.split()[-1]) > 0
        assert shlex.quote(UNIT)
    finally:
        nspawn_box.ssh(f"systemctl stop {UNIT}; true")
